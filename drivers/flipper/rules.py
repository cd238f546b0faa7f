"""What the hub may ask of a Flipper Zero, whichever way it reaches it.

Only commands on an allowlist are ever sent, over the CLI (``ALLOWED``) or the RPC
(``RPC_ALLOWED``): nothing that transmits (``subghz tx``, ``ir tx``, ``nfc emulate``) is
reachable. Paths, durations and frequencies are checked here before anything is sent. The USB
driver (``usb.py``) and the Bluetooth LE one (``ble.py``) both implement :class:`Flipper`, which
is all the agent's tools (``tools.py``) know of them.
"""

from __future__ import annotations

import abc
import posixpath
import re
from typing import Any, ClassVar

from drivers.base import DriverError

USB_DRIVER = "flipper"
BLE_DRIVER = "flipper_ble"
COMMAND_S = 5.0
LISTEN_MAX_S = 60
READ_MAX_BYTES = 64 * 1024
ROOTS = ("/ext", "/int")
SUBGHZ_RANGES = ((299_999_755, 348_000_000), (386_999_938, 464_000_000), (778_999_847, 928_000_000))
SAFE_PATH = re.compile(r"^[A-Za-z0-9 _.\-/()\[\]+,@#&']+$")

# Exact commands, or prefixes ending in a space followed by checked arguments.
ALLOWED = (
    "",
    "device_info",
    "info device",
    "info power",
    "power info",
    "loader info",
    "ir rx",
    "nfc scanner",
    "nfc detect",
    "nfc",
    "vibro 0",
    "vibro 1",
)
ALLOWED_PREFIXES = ("storage list ", "storage stat ", "storage read ", "subghz rx ", "led ")
NFC_SHELL_ALLOWED = ("scanner", "exit")
"""What the driver sends inside the newest firmware's NFC sub-shell (``nfc`` opens it)."""
# RPC requests the driver may send (read-only ones), as audited: "rpc <request> [<path>]".
RPC_ALLOWED = (
    "storage_stat",
    "storage_read",
    "storage_list",
    "device_info",
    "power_info",
    "ping",
    "play_audiovisual_alert",
)


class NotConnected(DriverError):
    """No Flipper is attached (or it went away mid-command)."""


class FlipperRefused(DriverError):
    """A request the driver will not send to the hardware."""


def allowed(line: str, *, nfc_shell: bool = False) -> bool:
    if nfc_shell:
        return line in NFC_SHELL_ALLOWED
    return line in ALLOWED or line.startswith(ALLOWED_PREFIXES)


def checked_path(path: str) -> str:
    """A path under /ext or /int, with no way out of them and nothing the shell would parse."""
    if not isinstance(path, str) or not path or len(path) > 255:
        raise FlipperRefused("give a path under /ext or /int (at most 255 characters)")
    if not SAFE_PATH.match(path) or '"' in path:
        raise FlipperRefused(f"the path {path!r} has characters the Flipper's CLI cannot take")
    parts = path.split("/")
    if ".." in parts or posixpath.normpath(path) != path.rstrip("/") or "//" in path:
        raise FlipperRefused(f"the path {path!r} is not a plain absolute path ('..' is refused)")
    if not any(path == root or path.startswith(root + "/") for root in ROOTS):
        raise FlipperRefused("only paths under /ext (the SD card) and /int are reachable")
    return path.rstrip("/") or path


def checked_seconds(seconds: Any) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise FlipperRefused("seconds must be a whole number")
    if not 1 <= seconds <= LISTEN_MAX_S:
        raise FlipperRefused(f"listen for 1 to {LISTEN_MAX_S} seconds")
    return seconds


def checked_frequency(frequency: Any) -> int:
    if isinstance(frequency, bool) or not isinstance(frequency, int):
        raise FlipperRefused("frequency must be in Hz, e.g. 433920000")
    if not any(low <= frequency <= high for low, high in SUBGHZ_RANGES):
        raise FlipperRefused(
            "the Flipper listens at 300-348 MHz, 387-464 MHz or 779-928 MHz (in Hz, e.g. 433920000)"
        )
    return frequency


class Flipper(abc.ABC):
    """A Flipper the hub reaches, over USB or over Bluetooth LE: what its tools ask of it.

    ``files(list|stat|read)`` has one path check and one answer shape whichever way the Flipper
    is reached (the CLI over USB, the RPC over BLE); what a link cannot do raises
    :class:`FlipperRefused` with a sentence that says why.
    """

    over: ClassVar[str]
    """How it is reached, for a person: "USB", "Bluetooth LE"."""
    link: ClassVar[str]
    """The same as a word for clients: "usb", "ble"."""
    device_id: str
    port: str

    @property
    @abc.abstractmethod
    def device_name(self) -> str: ...

    @abc.abstractmethod
    async def summary(self) -> dict[str, Any]:
        """Model, name, firmware, battery and connection."""

    @abc.abstractmethod
    async def listen(self, kind: str, seconds: int, frequency: int) -> dict[str, Any]:
        """What it decoded while listening (subghz, ir, nfc): receive only."""

    @abc.abstractmethod
    async def signal(self) -> None:
        """Beep, blink and vibrate, so the person can find it."""

    async def files(self, action: str, path: str) -> dict[str, Any]:
        path = checked_path(path)
        if action == "list":
            return {"path": path, "entries": await self._list(path)}
        if action == "stat":
            return {"path": path, **await self._stat(path)}
        if action == "read":
            data = await self.read_file(path)
            return {"path": path, "size": len(data), "text": data.decode("utf-8", "replace")}
        raise FlipperRefused("action must be list, stat or read")

    @abc.abstractmethod
    async def _list(self, path: str) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    async def _stat(self, path: str) -> dict[str, Any]:
        """``{"type": "file", "size": n}`` or ``{"type": "dir"}``."""

    @abc.abstractmethod
    async def read_file(self, path: str) -> bytes: ...


def number(value: str | None) -> float | None:
    """A number the Flipper printed, or None when it printed none."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
