"""``tiny-hub capture`` against the emulators, and every committed capture (``tests/captures``)
replayed: through the drivers' parsers, then compared with what the emulators answer to the
same script. A capture recorded from real hardware that the emulator does not match fails here.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from drivers.capture import load_capture, received
from drivers.flipper.capture import BAD_INPUTS, CLI_SCRIPT, MISSING, RPC_SCRIPT, record_flipper
from drivers.flipper.cli import (
    CliError,
    key_values,
    opened_nfc_shell,
    raise_for_error,
    storage_list,
    storage_stat,
)
from drivers.flipper.rpc import Empty, ListResponse, Main, PingResponse, Unknown, unframe
from drivers.nicla_vision.capture import record_nicla_vision
from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState
from firmware_bridges.emulators.nicla_vision import NiclaVisionEmulator
from media.video import is_jpeg

CAPTURES = Path(__file__).parent / "captures"
SCRIPT = Path(sys.executable).with_name("tiny-hub")
PROMPT = b"\r\n>: "


def captures(device: str) -> list[Path]:
    return sorted(p for p in CAPTURES.glob("*.json") if load_capture(p)["device"] == device)


def capture_with_cli(device: str, port: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "capture", device, "--port", port, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def frames(data: bytes) -> tuple[list[Main], bytes]:
    """The RPC frames at the front of ``data`` and what follows them (a prompt)."""
    found: list[Main] = []
    while data:
        message, rest = unframe(data)
        if message is None:
            break
        found.append(message)
        data = rest
    return found, data


@pytest.fixture
def flipper(tmp_path: Path) -> Iterator[FlipperEmulator]:
    with FlipperEmulator(FlipperState(nfc_style="shell"), link=tmp_path / "flipper") as device:
        yield device


# --- recording --------------------------------------------------------------------------------


def test_tiny_hub_capture_flipper(flipper: FlipperEmulator, tmp_path: Path) -> None:
    out = tmp_path / "flipper.json"
    done = capture_with_cli("flipper", str(tmp_path / "flipper"), out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out}: ")
    capture = load_capture(out)
    names = [step["name"] for step in capture["steps"]]
    assert names[:2] == ["open", "device_info"] and names[-1] == "an empty request"
    assert set(CLI_SCRIPT) | {name for name, _ in RPC_SCRIPT} <= set(names)
    assert {"nfc", "nfc exit"} <= set(names), "the sub-shell was opened and left"
    sent = [line for line in flipper.sent if line]
    assert not {"scanner", "subghz", "ir", "vibro", "led"} & {s.split()[0] for s in sent}
    assert flipper.state.transmit_log == [] and flipper.state.alerts == 0, "nothing transmitted"
    assert flipper.rpc_log.count("decode_error") == len(BAD_INPUTS)


def test_a_capture_masks_the_identity(flipper: FlipperEmulator, tmp_path: Path) -> None:
    state = flipper.state
    assert flipper.path is not None
    capture = record_flipper(flipper.path, source="emulator")
    whole = json.dumps(capture)
    for secret in (state.name, state.hardware_uid, state.radio_ble_mac):
        assert secret not in whole and secret.encode().hex() not in whole, secret
    table = key_values(received(capture, "device_info"))
    assert table["hardware_name"] == "X" * len(state.name)
    assert table["hardware_uid"] == "0" * len(state.hardware_uid)
    rpc_rows, _ = frames(_rpc(capture, "device_info"))
    values = {m.content.key: m.content.value for m in rpc_rows if hasattr(m.content, "key")}
    assert values["hardware_name"] == "X" * len(state.name)
    assert values["radio_ble_mac"] == "0" * len(state.radio_ble_mac)
    assert len(values) == len(state.device_info("_")), "every frame still decodes"
    kept = record_flipper(flipper.path, source="emulator", redact=False)
    assert state.hardware_uid in json.dumps(kept)


@pytest.mark.parametrize("device", ["flipper", "nicla-vision"])
def test_a_port_that_does_not_answer_is_a_one_line_error(tmp_path: Path, device: str) -> None:
    out = tmp_path / "none.json"
    done = capture_with_cli(device, str(tmp_path / "no-such-port"), out)
    assert done.returncode == 2 and done.stderr.startswith("tiny-hub: capture failed: ")
    assert done.stderr.count("\n") == 1 and not out.exists()


def test_an_existing_file_or_a_missing_folder_is_refused_before_the_device_is_asked(
    flipper: FlipperEmulator, tmp_path: Path
) -> None:
    kept = tmp_path / "kept.json"
    kept.write_text("an earlier capture")
    for out, said in ((kept, "already exists"), (tmp_path / "no" / "x.json", "not a folder")):
        done = capture_with_cli("flipper", str(tmp_path / "flipper"), out)
        assert done.returncode == 2 and said in done.stderr, done.stderr
    assert kept.read_text() == "an earlier capture"
    assert [line for line in flipper.sent if line] == [], "the device was not asked"


def test_tiny_hub_capture_nicla_vision(tmp_path: Path) -> None:
    with NiclaVisionEmulator(link=tmp_path / "nicla"):
        out = tmp_path / "nicla.json"
        done = capture_with_cli("nicla-vision", str(tmp_path / "nicla"), out)
    assert done.returncode == 0, done.stderr
    calls = [step["name"] for step in load_capture(out)["steps"]]
    assert calls[:3] == ["status", "status", "jpeg_image_snapshot"]
    assert set(calls[3:]) == {"jpeg_image_read"}


# --- replaying the committed captures ---------------------------------------------------------


def _rpc(capture: dict[str, Any], name: str) -> bytes:
    """The received bytes of the RPC step ``name`` (a CLI step may have the same name)."""
    for step in capture["steps"]:
        if step["name"] == name and step["kind"] == "rpc":
            return bytes.fromhex(step["received"])
    raise KeyError(name)


def test_there_are_captures_to_replay() -> None:
    assert captures("flipper") and captures("nicla-vision")


@pytest.mark.parametrize("path", captures("flipper"), ids=lambda p: p.stem)
def test_a_flipper_capture_through_the_drivers_parsers(path: Path) -> None:
    capture = load_capture(path)
    info = key_values(received(capture, "device_info"))
    assert info["hardware_model"] == "Flipper Zero" and info["firmware_version"]
    assert int(key_values(received(capture, "info power"))["charge.level"]) in range(101)
    listing = received(capture, "storage list /int")
    assert storage_list(listing), "the internal flash lists at least one entry"
    with pytest.raises(CliError, match="not exist"):
        storage_stat(received(capture, f"storage stat /ext/{MISSING}"))
    with pytest.raises(CliError, match="this firmware has no command"):
        raise_for_error(received(capture, MISSING.replace("-", "_")))
    (pong,), _ = frames(_rpc(capture, "ping"))
    assert pong == Main(command_id=1, content=PingResponse(bytes([1, 2, 3, 4])))
    (root,), _ = frames(_rpc(capture, "storage_list /"))
    assert isinstance(root.content, ListResponse)
    assert [f.name for f in root.content.files] == ["any", "int", "ext"]
    for name, _sent in BAD_INPUTS:
        (answer,), rest = frames(_rpc(capture, name))
        assert answer == Main(command_id=0, command_status=2, content=Empty()), name
        assert rest.endswith(PROMPT), f"{name}: the text shell after the closed session"


def _style(capture: dict[str, Any]) -> str:
    nfc = received(capture, "nfc")
    if opened_nfc_shell(nfc[: -len(b">: ")]):
        return "shell"
    return "detect" if b"Usage:" in nfc else "scanner"


KEYED = {"device_info", "info device", "info power"}
PATTERNED = {"open", "free", "storage info /int", "storage list /int"}
RPC_EXACT = {
    "ping",
    "ping has_next",
    "storage_list /",
    f"storage_md5sum /int/{MISSING}",
    "a response sent as a request",
    "stop_session",
    *(name for name, _ in BAD_INPUTS),
}


def _pattern(data: bytes) -> bytes:
    """Numbers, masked names and file listings reduced to their shape."""
    data = re.sub(rb"\t\[(F|D)\] [^\r\n]*", rb"\t[\1] entry", data)
    data = re.sub(rb"X+|0{6,}", b"X", data)
    data = re.sub(rb"\d+", b"N", data)
    return re.sub(rb"(\t\[F\] entry\r\n|\t\[D\] entry\r\n)+", b"\t[entries]\r\n", data)


def _signature(data: bytes) -> list[tuple[int, int, bool, str]]:
    messages, rest = frames(data)
    kinds = [
        f"Unknown {m.content.number}"
        if isinstance(m.content, Unknown)
        else type(m.content).__name__
        for m in messages
    ]
    return [
        (m.command_id, m.command_status, m.has_next, kind)
        for m, kind in zip(messages, kinds, strict=True)
    ] + [(-1, -1, False, rest.decode("utf-8", "replace"))]


def _compare(step: dict[str, str], emulated: dict[str, str]) -> None:
    name, real = step["name"], bytes.fromhex(step["received"])
    ours = bytes.fromhex(emulated["received"])
    if step["kind"] == "rpc":
        if name in RPC_EXACT:
            assert ours == real, name
        else:
            assert _signature(ours) == _signature(real), name
    elif name in KEYED:
        assert list(key_values(ours)) == list(key_values(real)), name
    elif name in PATTERNED:
        assert _pattern(ours) == _pattern(real), name
    else:
        assert ours == real, name


@pytest.mark.parametrize("path", captures("flipper"), ids=lambda p: p.stem)
def test_the_flipper_emulator_answers_like_the_capture(path: Path, tmp_path: Path) -> None:
    capture = load_capture(path)
    with FlipperEmulator(FlipperState(nfc_style=_style(capture))) as device:  # type: ignore[arg-type]
        assert device.path is not None
        recorded = record_flipper(device.path)["steps"]
    emulated = {(step["kind"], step["name"]): step for step in recorded}
    compared = 0
    for step in capture["steps"]:
        if (step["kind"], step["name"]) in emulated:
            _compare(step, emulated[step["kind"], step["name"]])
            compared += 1
    assert compared == len(capture["steps"]), "the emulator ran every step of the capture"


@pytest.mark.parametrize("path", captures("nicla-vision"), ids=lambda p: p.stem)
def test_a_nicla_vision_capture_through_the_driver_and_the_emulator(
    path: Path, tmp_path: Path
) -> None:
    capture = load_capture(path)
    status = json.loads(received(capture, "status"))
    assert status["board"] and status["firmware"]
    (size,) = struct.unpack("<I", received(capture, "jpeg_image_snapshot"))
    photo = b"".join(
        bytes.fromhex(s["received"]) for s in capture["steps"] if s["name"] == "jpeg_image_read"
    )
    assert len(photo) == size and is_jpeg(photo)
    with NiclaVisionEmulator() as board:
        assert board.path is not None
        emulated = record_nicla_vision(board.path, source="emulator")
    assert [s["name"] for s in emulated["steps"]][:3] == [s["name"] for s in capture["steps"]][:3]
    assert set(json.loads(received(emulated, "status"))) == set(status)
    ours = b"".join(
        bytes.fromhex(s["received"]) for s in emulated["steps"] if s["name"] == "jpeg_image_read"
    )
    assert _shape(ours) == _shape(photo), "the same picture size and colour"


def _shape(jpeg: bytes) -> tuple[int, ...]:
    image = cv2.imdecode(np.frombuffer(jpeg, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    assert image is not None, "a JPEG that decodes"
    return tuple(image.shape)


def test_capture_is_a_subcommand_with_help() -> None:
    listed = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, check=True)
    assert "capture" in listed.stdout
    helped = subprocess.run(
        [str(SCRIPT), "capture", "--help"], capture_output=True, text=True, check=True
    )
    assert "usage: tiny-hub capture" in helped.stdout and "--keep-identity" in helped.stdout
