"""Serial ports announced by software boards on this machine (``tiny-hub emulate``).

A pseudo-terminal has no USB descriptor, so the OS's port list cannot say that a Flipper is on
it. A board served by an emulator writes one small JSON file per plug-in into a per-user
directory: the USB descriptor its hardware reports, the pty, and the emulator's pid. The port
list (``serial.list_ports``) reads them beside the OS's ports, so a running hub finds an emulated
board as it finds a real one: on its next scan, by its descriptor, without a setting or a
restart. A file whose process has ended or whose pty has gone is skipped (and removed).

The directory is ``$XDG_RUNTIME_DIR/tiny-hub/ports`` (else ``<tmp>/tiny-hub-<uid>/ports``). It is
made private (0700) and only read while this account owns it and no one else may write to it:
another account cannot make the hub open a path of its choosing.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from dataclasses import asdict
from pathlib import Path

from drivers.base import PortInfo

FIELDS = ("device", "vid", "pid", "serial_number", "manufacturer", "description", "product")


def announce_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "tiny-hub" / "ports"
    return Path(tempfile.gettempdir()) / f"tiny-hub-{os.getuid()}" / "ports"


def _private(directory: Path) -> bool:
    """Whether ``directory`` and its parent are this account's alone."""
    for path in (directory, directory.parent):
        try:
            seen = path.lstat()
        except OSError:
            return False
        if not stat.S_ISDIR(seen.st_mode) or seen.st_uid != os.getuid():
            return False
        if seen.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True


def announce(port: PortInfo) -> Path:
    """Say that ``port`` is plugged in, for as long as this process lives; returns the file to
    :func:`withdraw` when it is unplugged."""
    directory = announce_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in (directory.parent, directory):
        path.chmod(0o700)
    record = {k: v for k, v in asdict(port).items() if k in FIELDS}
    record["process"] = os.getpid()
    name = f"{os.getpid()}-{Path(port.device).name}.json"
    temporary = directory / f".{name}.tmp"
    temporary.write_text(json.dumps(record))
    os.replace(temporary, directory / name)
    return directory / name


def withdraw(announcement: Path) -> None:
    announcement.unlink(missing_ok=True)


def announced_ports() -> list[PortInfo]:
    """Every announced port whose emulator still runs and whose pty still exists."""
    directory = announce_dir()
    if not _private(directory):
        return []
    ports = []
    for path in sorted(directory.glob("*.json")):
        port = _read(path)
        if port is None:
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        ports.append(port)
    return ports


def _read(path: Path) -> PortInfo | None:
    """The port a file announces, or None when it is unreadable or stale."""
    try:
        record = json.loads(path.read_text())
        process, device = int(record["process"]), str(record["device"])
        port = PortInfo(
            device=device,
            vid=_number(record.get("vid")),
            pid=_number(record.get("pid")),
            serial_number=_text(record.get("serial_number")),
            manufacturer=_text(record.get("manufacturer")),
            description=_text(record.get("description")),
            product=_text(record.get("product")),
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if not _alive(process) or not Path(device).exists():
        return None
    return port


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
