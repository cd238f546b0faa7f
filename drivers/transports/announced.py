"""Serial ports announced by software boards on this machine (``tiny-hub emulate``).

A pseudo-terminal has no USB descriptor, so the OS's port list cannot say that a Flipper is on
it. A board served by an emulator writes one small JSON file per plug-in into a per-user
directory: the USB descriptor its hardware reports, the pty, and the emulator's pid. The port
list (``serial.list_ports``) reads them beside the OS's ports, so a running hub finds an emulated
board as it finds a real one: on its next scan, by its descriptor, without a setting or a
restart. A file whose process has ended or whose pty has gone is skipped (and removed).

The directory is ``$XDG_RUNTIME_DIR/tiny-hub/ports`` (else ``<tmp>/tiny-hub-<uid>/ports``). It and
its parent are written and read only while each is a real folder (never a symbolic link) that
this account owns and no one else may write to (:func:`open_private`, the one rule both sides
apply): in a shared temp folder another account cannot make the emulator chmod or write into a
folder of its choosing, nor make the hub open a path of its choosing.
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


class NotPrivate(Exception):
    """The announcement directory is not this account's alone; the message says why and
    where."""


_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_private(directory: Path, *, create: bool) -> int:
    """A descriptor of ``directory``, opened only after it and its parent were each found to be
    a real directory (not a symbolic link), owned by this account and writable by no one else;
    NotPrivate otherwise. The writer (``create``: missing folders are made 0700) and the reader
    share this one rule, so neither follows another account's link or trusts its folder.

    Each folder is opened with ``O_NOFOLLOW`` under the descriptor of the one above it and
    checked with ``fstat`` on that descriptor, so what was checked is what is written into."""
    parent_fd = -1
    fd = -1
    try:
        for path, at in ((directory.parent, None), (directory, directory.name)):
            if create:
                try:
                    if at is None:
                        os.mkdir(path, 0o700)
                    else:
                        os.mkdir(at, 0o700, dir_fd=parent_fd)
                except FileExistsError:
                    pass
            try:
                opened = (
                    os.open(path, _OPEN_DIR)
                    if at is None
                    else os.open(at, _OPEN_DIR, dir_fd=parent_fd)
                )
            except OSError as exc:
                why = "a symbolic link" if path.is_symlink() else exc.strerror
                raise NotPrivate(f"{path} cannot be opened as a folder ({why})") from None
            if at is None:
                parent_fd = opened
            else:
                fd = opened
            _check_private(path, os.fstat(opened))
        os.close(parent_fd)
        parent_fd = -1
        return fd
    except BaseException:
        for open_fd in (parent_fd, fd):
            if open_fd >= 0:
                os.close(open_fd)
        raise


def _check_private(path: Path, seen: os.stat_result) -> None:
    if not stat.S_ISDIR(seen.st_mode):
        raise NotPrivate(f"{path} is not a folder")
    if seen.st_uid != os.getuid():
        raise NotPrivate(
            f"{path} belongs to uid {seen.st_uid}, not to this account ({os.getuid()})"
        )
    if seen.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise NotPrivate(
            f"{path} may be written by other accounts (mode {stat.S_IMODE(seen.st_mode):o})"
        )


def announce(port: PortInfo) -> Path:
    """Say that ``port`` is plugged in, for as long as this process lives; returns the file to
    :func:`withdraw` when it is unplugged. NotPrivate, with a sentence saying which folder and
    why, when the announcement folder is not this account's alone."""
    directory = announce_dir()
    try:
        fd = open_private(directory, create=True)
    except NotPrivate as exc:
        raise NotPrivate(
            f"not announcing {port.device}: {exc}; remove it or set "
            "XDG_RUNTIME_DIR to a folder of your own"
        ) from None
    try:
        os.fchmod(fd, 0o700)
        record = {k: v for k, v in asdict(port).items() if k in FIELDS}
        record["process"] = os.getpid()
        name = f"{os.getpid()}-{Path(port.device).name}.json"
        temporary = f".{name}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(temporary, flags, 0o600, dir_fd=fd)
        with os.fdopen(out, "w", encoding="utf-8") as file:
            file.write(json.dumps(record))
        os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)
    return directory / name


def withdraw(announcement: Path) -> None:
    announcement.unlink(missing_ok=True)


def announced_ports() -> list[PortInfo]:
    """Every announced port whose emulator still runs and whose pty still exists."""
    directory = announce_dir()
    try:
        fd = open_private(directory, create=False)
    except NotPrivate:
        return []
    ports = []
    try:
        for name in sorted(n for n in os.listdir(fd) if n.endswith(".json")):
            port = _read(fd, name)
            if port is None:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
                continue
            ports.append(port)
    finally:
        os.close(fd)
    return ports


def _read(directory_fd: int, name: str) -> PortInfo | None:
    """The port a file announces, or None when it is unreadable or stale (a link is
    unreadable: it is not opened)."""
    try:
        opened = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=directory_fd)
        with os.fdopen(opened, encoding="utf-8") as file:
            record = json.loads(file.read())
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
