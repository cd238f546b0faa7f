"""A USB serial device on a pseudo-terminal: plugged, unplugged, replugged, behind a stable link.

Why
---
The hub reaches several boards through their USB virtual COM port (the Flipper Zero's CLI, the
Nicla Vision's OpenMV RPC). Their emulators must behave like the cable as well as the firmware:
the host opens ``/dev/pts/N`` with real pyserial as it would ``/dev/ttyACM0``, the device sees
that open (its DTR) and the close, and an unplug makes the node vanish so the host's reads and
writes fail as they do on hardware. That part is the same for every board and subtle enough
(inotify, POLLHUP, wake-ups, the settle delay) to be written once; each emulator then holds only
its protocol:

- ``PtyPort``: one plug-in of the cable, a pty pair and the thread playing the device on the
  master. A subclass writes ``_session``, what the firmware does while a host holds the port.
- ``PtyDevice``: the board across plug-ins: ``start``/``stop``/``unplug``/``replug``, the
  optional symlink kept pointing at the current pty (a stable path across replugs), a device
  that leaves the bus on its own (``PowerDown``: power-off, reboot), the audit of the bytes
  received, and ``serve`` for running one by hand.

How the host's open is seen
---------------------------
A pty has no modem lines, so there is no DTR to wait for: the device watches the slave node
being opened and closed with inotify, or the master's POLLHUP where inotify is missing (POLLHUP
cannot see a close followed at once by a reopen). Each open starts a session after ``settle``
seconds, because pyserial flushes its input buffer in ``open()`` (firmware waits for the same
reason: the Flipper 33 ms); each close ends it once the host's last bytes are processed.
"""

from __future__ import annotations

import abc
import contextlib
import ctypes
import math
import os
import select
import signal
import struct
import sys
import threading
import time
import tty
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar, Generic, Self, TypeVar

from drivers.base import PortInfo
from drivers.transports.announced import NotPrivate, announce, withdraw

__all__ = ["HungUp", "PowerDown", "PtyDevice", "PtyPort", "Unplugged"]


class Unplugged(Exception):
    """The emulator closes this port (unplug, stop)."""


class HungUp(Exception):
    """The host closed the port: the firmware's DTR-low / broken pipe."""


class PowerDown(Exception):
    """The device leaves the bus on its own (the Flipper's ``power off|reboot``); with ``replug``
    it re-enumerates, on a new pty, ``reboot_delay`` seconds later."""

    def __init__(self, replug: bool) -> None:
        super().__init__()
        self.replug = replug


IN_CLOSE_WRITE = 0x08
IN_CLOSE_NOWRITE = 0x10
IN_OPEN = 0x20


def _watch_opens(path: str) -> int | None:
    """An inotify fd reporting every open and close of ``path`` (None where unavailable).

    This is how the emulator sees the host "assert DTR": a pty has no modem lines, and the
    master's POLLHUP cannot see a close followed at once by a reopen.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init, add = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
    fd = int(init(os.O_NONBLOCK | os.O_CLOEXEC))
    if fd < 0:
        return None
    if int(add(fd, os.fsencode(path), IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE)) < 0:
        os.close(fd)
        return None
    return fd


class PtyPort(abc.ABC):
    """One plug-in of the USB cable: a pty pair and the thread playing the device on its master.

    A subclass writes ``_session``: it runs each time a host opens the slave (``connected`` is
    True meanwhile), reads with ``getc``, writes with ``out``, and never returns: ``HungUp`` (the
    host closed or reopened the port; ``getc`` and ``out`` raise it) ends the session and the port
    waits for the next host; ``Unplugged`` (``close()``) or ``PowerDown`` ends the plug-in.
    """

    NAME: ClassVar[str] = "pty-device"
    """The device thread's name, before the pty path."""

    def __init__(self, device: PtyDevice[Any]) -> None:
        self.device = device
        self.master, slave = os.openpty()
        tty.setraw(slave)
        self.path = os.ttyname(slave)
        os.close(slave)  # the host opens it; while nobody holds it the master reports POLLHUP
        os.set_blocking(self.master, False)
        self.watch = _watch_opens(self.path)
        self.opens = 0  # host handles open on the slave (counted with inotify)
        self.hangup_pending = False  # the host closed: stop once its last bytes are processed
        self.reconnect_pending = False  # a new open: restart the session at once
        self.wake_r, self.wake_w = os.pipe()
        self.inbuf = bytearray()
        self.connected = False
        self.closing = threading.Event()
        self.reader = select.poll()
        self.reader.register(self.master, select.POLLIN | select.POLLHUP | select.POLLERR)
        self.reader.register(self.wake_r, select.POLLIN)
        self.idle = select.poll()
        self.idle.register(self.wake_r, select.POLLIN)
        if self.watch is not None:
            self.reader.register(self.watch, select.POLLIN)
            self.idle.register(self.watch, select.POLLIN)
        self.writer = select.poll()
        self.writer.register(self.master, select.POLLOUT | select.POLLHUP | select.POLLERR)
        self.writer.register(self.wake_r, select.POLLIN)
        self.thread = threading.Thread(
            target=self._run, name=f"{self.NAME} {self.path}", daemon=True
        )

    # --- life cycle ---

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        """Pull the cable: the device thread closes the master, the slave node disappears."""
        self.closing.set()
        with contextlib.suppress(OSError):
            os.write(self.wake_w, b"x")
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join(timeout=5)

    @abc.abstractmethod
    def _session(self) -> None:
        """What the firmware does while a host holds the port (see the class docstring)."""

    def _run(self) -> None:
        replug: bool | None = None
        try:
            while True:
                self._wait_for_host()
                try:
                    self.connected = True
                    self.hangup_pending = self.reconnect_pending = False
                    self._session()
                except HungUp:
                    pass
                finally:
                    self.connected = False
                    if self.opens == 0:  # bytes of a host that left; a new host keeps its own
                        self.inbuf.clear()
        except Unplugged:
            pass
        except PowerDown as down:
            replug = down.replug
        finally:
            if replug is not None:  # forget the port (and its link) before the node vanishes
                self.device._device_gone(self, replug)
            for fd in (self.master, self.wake_r, self.wake_w, self.watch):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)

    def _wait_for_host(self) -> None:
        """Idle until the host opens the slave (firmware waits for DTR, then a moment: pyserial
        flushes its input in ``open()``, so bytes sent earlier would be lost)."""
        while True:
            while not self._host_present():
                if self.watch is not None:
                    if any(fd == self.wake_r for fd, _ in self.idle.poll(-1)):
                        raise Unplugged
                elif self.closing.wait(0.01):
                    raise Unplugged
            if self.closing.wait(self.device.settle):
                raise Unplugged
            if self._host_present():
                return

    def _host_present(self) -> bool:
        if self.closing.is_set():
            raise Unplugged
        if self.watch is not None:
            self._drain_watch()
            return self.opens > 0
        return not any(fd == self.master and ev & select.POLLHUP for fd, ev in self.reader.poll(0))

    def _drain_watch(self) -> None:
        if self.watch is None:
            return
        while True:
            try:
                data = os.read(self.watch, 4096)
            except (BlockingIOError, InterruptedError):
                return
            offset = 0
            while offset + 16 <= len(data):
                _, mask, _, length = struct.unpack_from("iIII", data, offset)
                offset += 16 + length
                if mask & IN_OPEN:
                    self.opens += 1
                    self.inbuf.clear()  # what came before belongs to an earlier host
                    self.reconnect_pending = self.connected
                if mask & (IN_CLOSE_WRITE | IN_CLOSE_NOWRITE):
                    self.opens = max(0, self.opens - 1)
                    if self.opens == 0 and self.connected:
                        self.hangup_pending = True

    # --- bytes in and out ---

    def _fill(self, timeout: float | None) -> None:
        ms = -1 if timeout is None else max(0, math.ceil(timeout * 1000))
        events = self.reader.poll(ms)
        if any(fd == self.wake_r for fd, _ in events):
            raise Unplugged
        if any(fd == self.watch for fd, _ in events):
            self._drain_watch()  # before reading: bytes read after a new open are the new host's
        for fd, ev in events:
            if fd != self.master:
                continue
            if ev & select.POLLIN:
                try:
                    data = os.read(self.master, 4096)
                except BlockingIOError:
                    return
                except OSError as exc:
                    raise HungUp from exc
                if not data:
                    raise HungUp
                self.inbuf += data
                self.device._record_received(data)
            elif ev & (select.POLLHUP | select.POLLERR):
                raise HungUp

    def getc(self, timeout: float | None) -> int | None:
        """Next byte from the host; None after ``timeout`` seconds (None = wait forever)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.inbuf or self.reconnect_pending:
            if self.reconnect_pending or self.hangup_pending:
                raise HungUp
            if deadline is None:
                self._fill(None)
                continue
            remaining = deadline - time.monotonic()
            self._fill(max(0.0, remaining))
            if not self.inbuf and remaining <= 0:
                return None
        byte = self.inbuf[0]
        del self.inbuf[0]
        return byte

    def out(self, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        view = memoryview(raw)
        while view:
            try:
                written = os.write(self.master, view)
            except BlockingIOError:
                events = self.writer.poll(100)
                if any(fd == self.wake_r for fd, _ in events):
                    raise Unplugged from None
                continue
            except OSError as exc:
                raise HungUp from exc
            view = view[written:]


P = TypeVar("P", bound=PtyPort)


class PtyDevice(abc.ABC, Generic[P]):
    """A board on a pty across plug-ins. ``start()`` returns the path a client opens with
    pyserial; ``link``, if given, is a symlink kept pointing at the current pty (a stable path
    across replugs). A subclass makes its port in ``_new_port``.

    ``received`` holds every raw byte the host wrote, in every plug-in.
    """

    def __init__(self, *, link: Path | None, settle: float, reboot_delay: float = 0.5) -> None:
        """``settle``: delay between the host opening the port and the session starting.
        ``reboot_delay``: how long a ``PowerDown(replug=True)`` keeps the device away."""
        self.link = link
        self.settle = settle
        self.reboot_delay = reboot_delay
        self.received = bytearray()
        self._boot = time.monotonic()
        self._lock = threading.RLock()
        self._port: P | None = None
        self._started = False
        self._stopped = False
        self._powered_off = False
        self.announcing = False
        """Whether each plug-in is announced to hubs on this machine (``serve`` turns it on)."""
        self._announcement: Path | None = None

    @abc.abstractmethod
    def _new_port(self) -> P:
        """A new plug-in: its pty open, its thread not started yet."""

    def usb_descriptor(self, path: str) -> PortInfo | None:
        """What the board's USB descriptor says when it is plugged in at ``path`` (None: the
        board is not announced, a hub reaches it only through its ``port`` setting)."""
        return None

    # --- plugging ---

    def start(self) -> str:
        """Plug the device in: open a pty, run the device side, return the slave path."""
        with self._lock:
            if self._started:
                raise RuntimeError("emulator already started")
            if self.link is not None and self.link.exists() and not self.link.is_symlink():
                raise FileExistsError(f"{self.link} exists and is not a symlink")
            self._started = True
            return self._plug()

    def stop(self) -> None:
        """Unplug for good and remove the link."""
        with self._lock:
            self._stopped = True
        self.unplug()

    def unplug(self) -> None:
        """Pull the cable: the pty master closes, the node and the link disappear.

        A pyserial client then gets ``SerialException`` from ``read()`` ("device reports
        readiness to read but returned no data ...": the slave reads EOF) and from ``write()``
        ("write failed: [Errno 5] Input/output error").
        """
        with self._lock:
            port, self._port = self._port, None
            self._set_link(None)
        if port is not None:
            port.close()

    def replug(self) -> str:
        """Plug the device in again: a NEW pty (its number may differ; a real board also gets
        a new node, and the number may be reused once every old handle is closed). The link, if
        any, now points at it. Returns the new slave path."""
        self.unplug()
        with self._lock:
            if self._stopped:
                raise RuntimeError("emulator stopped")
            return self._plug()

    def _plug(self) -> str:
        if self._powered_off:  # back from a power-off: the device booted again
            self._powered_off = False
            self._boot = time.monotonic()
        port = self._new_port()
        self._set_link(port.path)  # the link is in place before anyone can see the new path
        self._port = port
        port.start()
        return port.path

    def _set_link(self, target: str | None) -> None:
        self._announce(target)
        if self.link is None:
            return
        if target is None:
            if self.link.is_symlink():
                self.link.unlink(missing_ok=True)
            return
        temporary = self.link.with_name(f".{self.link.name}.{os.getpid()}.tmp")
        temporary.unlink(missing_ok=True)
        os.symlink(target, temporary)
        os.replace(temporary, self.link)

    def _announce(self, target: str | None) -> None:
        """A running hub's port list sees the board while it is plugged in, as the OS's does a
        real one (``drivers.transports.announced``)."""
        if self._announcement is not None:
            withdraw(self._announcement)
            self._announcement = None
        descriptor = self.usb_descriptor(target) if target and self.announcing else None
        if descriptor is not None:
            try:
                self._announcement = announce(descriptor)
            except NotPrivate as exc:
                # The board still works at its path; a hub only finds it by descriptor.
                print(f"tiny-hub emulate: {exc}", file=sys.stderr, flush=True)

    def _device_gone(self, port: PtyPort, replug: bool) -> None:
        """Called by a port's thread after a ``PowerDown`` closed it."""
        with self._lock:
            if self._port is not port:
                return
            self._port = None
            self._set_link(None)
            self._powered_off = True
        if replug:
            timer = threading.Timer(self.reboot_delay, self._reboot)
            timer.daemon = True
            timer.start()

    def _reboot(self) -> None:
        with self._lock:
            if self._stopped or self._port is not None:
                return
            self._plug()

    @property
    def path(self) -> str | None:
        """The current slave path, None while unplugged."""
        port = self._port
        return None if port is None else port.path

    @property
    def plugged(self) -> bool:
        return self._port is not None

    @property
    def connected(self) -> bool:
        """True while a host holds the port open and its session runs."""
        port = self._port
        return port is not None and port.connected

    def _record_received(self, data: bytes) -> None:
        with self._lock:
            self.received += data

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- running one by hand ---

    def serve(self, next_step: str = "") -> None:
        """``python -m ...`` / ``tiny-hub emulate``: plug in, print the pty path (then, on
        stderr, the link and ``next_step`` with ``{path}`` filled in: what to run next), serve
        until Ctrl+C or SIGTERM (a supervisor's stop), then unplug for good."""
        with _sigterm_as_exit():
            self.announcing = True
            path = self.start()
            print(path, flush=True)
            if self.link is not None:
                print(f"linked at {self.link}", file=sys.stderr, flush=True)
            if next_step:
                shown = self.link or path
                print(next_step.format(path=shown), file=sys.stderr, flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
            finally:
                self.stop()


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM raises ``SystemExit(0)``, so ``finally`` blocks run and the pty and link go; Ctrl+C
    raises KeyboardInterrupt even when this process was started with SIGINT ignored (a job a
    non-interactive shell put in the background), so "runs until Ctrl+C" holds wherever it runs."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    previous = signal.signal(signal.SIGTERM, handler)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
