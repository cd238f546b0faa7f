"""camera_photo, camera_clip, microphone_listen: the machine the hub runs on, as eyes and ears.

Made as every camera's and microphone's tools are (``drivers/sensing.py``): only the hub's owner
may use them (they look into and listen to the owner's room), and each is mounted whether or
not the machine has the hardware, saying why not when it has none.
"""

from __future__ import annotations

from strands.types.tools import AgentTool

from drivers.base import DriverHost, hinted
from drivers.sensing import Missing, clip_tool, listen_tool, photo_tool

CAMERA = "this machine's camera"
MICROPHONE = "this machine's microphone"


def _missing(driver: str, sense: str, off: str) -> Missing:
    """Why there is no ``driver`` online: its device's own word, else the setting that is off."""

    def missing(host: DriverHost) -> str:
        found = [r for r in host.driver_records() if r["driver"] == driver]
        if found:
            return str(found[0]["detail"])
        return f"{sense} unavailable: turned off ({off})"

    return missing


_no_camera = _missing("camera", "camera", "drivers.camera.device is empty")
_no_microphone = _missing("microphone", "microphone", "drivers.microphone.device is off")

camera_photo = photo_tool(
    "camera_photo",
    "Take a photo with the webcam of the machine the hub runs on, and look at it.",
    "camera",
    CAMERA,
    _no_camera,
)
camera_clip = clip_tool(
    "camera_clip",
    "Record a short video clip with the webcam of the machine the hub runs on.",
    "camera",
    CAMERA,
    _no_camera,
    default_s=5,
    max_s=10,
)
microphone_listen = listen_tool(
    "microphone_listen",
    "Listen with the microphone of the machine the hub runs on and say what was heard\n"
    "(speech-to-text on this machine; nothing leaves it).",
    "microphone",
    MICROPHONE,
    "microphone",
    _no_microphone,
    default_s=5,
    max_s=60,
)

CAMERA_TOOLS: tuple[AgentTool, ...] = (camera_photo, camera_clip)
MICROPHONE_TOOLS: tuple[AgentTool, ...] = (microphone_listen,)

hinted("machine", camera_photo, camera_clip, microphone_listen)
