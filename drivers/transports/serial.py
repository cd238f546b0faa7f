"""Serial ports through pyserial: the only module that opens, reads or writes one.

``list_ports`` describes what the OS sees; ``SerialLine`` is one open port used as a
command line (write a line, read to a prompt), with every pyserial call on a thread of the line's
own so the event loop never blocks, short read timeouts so an unplug is noticed at once, and one
command at a time.

How pyserial's failures become ours (pyserial 3.5, POSIX; measured on ptys, see
``docs/hardware.md``):

- ``PortGone``: the port went away. Opening fails with ENOENT/ENODEV/ENXIO; a read raises
  ``SerialException("read failed: [Errno 5] ...")`` (the kernel's EIO for an unplugged CDC-ACM
  device); a read raises ``SerialException("device reports readiness to read but returned no
  data ...")`` (select says readable, read returns nothing: a hung-up tty, e.g. a pty whose
  other end closed, or a USB device on its way out); a write raises ``SerialException("write
  failed: ...")``; ``in_waiting``/``reset_input_buffer`` raise ``OSError``/``termios.error``
  (EIO). After ``PortGone`` the line is closed and every later call raises it again.
  Caveat: the "readiness but no data" case can also be caused by another program reading the
  same port; opening with ``exclusive=True`` (the default) keeps out programs that honour
  flock, and the manager simply reopens a port that is still there.
- ``PortUnavailable``: the port exists but cannot be opened (permission, in use, not a tty).
- ``NoPrompt``: the device answered but the marker never came within the budget.
- ``LineTooLong``: more than ``limit`` bytes arrived without the marker.
- ``WriteStalled``: the device stopped taking bytes (pyserial's write timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import serial
from serial.tools import list_ports as _list_ports

from drivers.base import PortInfo
from drivers.transports.announced import announced_ports

try:  # POSIX only: tcflush/tcgetattr failures on a vanished tty
    import termios

    _TTY_ERRORS: tuple[type[BaseException], ...] = (termios.error,)
except ImportError:  # pragma: no cover - Windows
    _TTY_ERRORS = ()

T = TypeVar("T")

_PORT_ERRORS: tuple[type[BaseException], ...] = (serial.SerialException, OSError, *_TTY_ERRORS)
_GONE_ERRNOS = {errno.ENOENT, errno.ENODEV, errno.ENXIO, errno.EIO}
_BUSY_ERRNOS = {errno.EAGAIN, errno.EWOULDBLOCK, errno.EBUSY}
_TAIL = 120  # bytes of context kept in a NoPrompt message


def port_info(entry: Any) -> PortInfo:
    """A ``serial.tools.list_ports`` entry (ListPortInfo) as a PortInfo."""
    return PortInfo(
        device=entry.device,
        vid=entry.vid,
        pid=entry.pid,
        serial_number=entry.serial_number,
        manufacturer=entry.manufacturer,
        description=entry.description,
        product=entry.product,
        hwid=entry.hwid,
    )


def list_ports() -> list[PortInfo]:
    """Every serial port the OS lists now, and every port a software board on this machine
    announces (``announced.py``), blocking: it reads sysfs; call it from a thread."""
    listed = [port_info(entry) for entry in _list_ports.comports()]
    seen = {port.device for port in listed}
    return listed + [port for port in announced_ports() if port.device not in seen]


class SerialLineError(Exception):
    """A serial line could not do what was asked; ``str()`` is meant for a person."""

    def __init__(self, path: str | None, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class PortGone(SerialLineError):
    """The port vanished (unplugged, or the pty's other end closed)."""


class PortUnavailable(SerialLineError):
    """The port is there but cannot be opened (permission, in use, not a serial port)."""


class NoPrompt(SerialLineError):
    """The marker did not arrive in time; ``tail`` is the last bytes that did."""

    def __init__(self, path: str | None, message: str, tail: bytes) -> None:
        super().__init__(path, f"{message}; last bytes seen: {tail!r}")
        self.tail = tail


class LineTooLong(SerialLineError):
    """More bytes than the limit arrived without the marker."""


class WriteStalled(SerialLineError):
    """The device stopped accepting bytes."""


def _shorten(data: bytes | bytearray) -> bytes:
    return bytes(data[-_TAIL:])


def _close_quietly(ser: Any) -> None:
    with contextlib.suppress(Exception):
        ser.close()


class SerialLine:
    """One open serial port, spoken to as a command line.

    ``write``, ``read_until``, ``read_exactly`` and ``command`` each hold the line for their
    duration; ``transaction()`` holds it across several of them (an RPC exchange). ``close()``
    does not wait for the holder: it interrupts a read at once and the holder gets an error.
    """

    def __init__(
        self,
        *,
        baudrate: int = 115_200,
        read_timeout_s: float = 0.05,
        write_timeout_s: float = 2.0,
        exclusive: bool = True,
    ) -> None:
        self._baudrate = baudrate
        self._read_timeout_s = read_timeout_s
        self._write_timeout_s = write_timeout_s
        self._exclusive = exclusive
        self._serial: Any = None
        self._executor: ThreadPoolExecutor | None = None
        self._path: str | None = None
        self._gone: str | None = None
        self._pending = bytearray()
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None
        self.last_rx = 0.0
        """``time.monotonic()`` when the last byte arrived (0.0 before the first)."""

    @property
    def path(self) -> str | None:
        return self._path

    @property
    def is_open(self) -> bool:
        return self._serial is not None and self._gone is None

    @property
    def busy(self) -> bool:
        """Someone holds the line (a command is running); a probe can take that as a sign."""
        return self._lock.locked()

    async def open(self, path: str) -> None:
        """Open ``path`` (a device, a pty, or a symlink to either); no modem lines required."""
        if self._gone is not None:
            await self.close()
        if self._serial is not None:
            raise SerialLineError(self._path, "already open")
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"serial {path}")
        opening = executor.submit(self._open_blocking, path)
        try:
            ser = await asyncio.wrap_future(opening)
        except asyncio.CancelledError:
            opening.add_done_callback(_close_opened)  # opened after we stopped waiting
            executor.shutdown(wait=False)
            raise
        except BaseException:
            executor.shutdown(wait=False)
            raise
        self._serial, self._executor, self._path = ser, executor, path
        self._gone = None
        self._pending.clear()

    def _open_blocking(self, path: str) -> Any:
        ser = serial.Serial(
            port=None,
            baudrate=self._baudrate,
            timeout=self._read_timeout_s,
            write_timeout=self._write_timeout_s,
            exclusive=self._exclusive,
        )
        ser.port = path
        try:
            ser.open()
        except _PORT_ERRORS as exc:
            code = getattr(exc, "errno", None)
            if code in _GONE_ERRNOS:
                raise PortGone(path, "no such port") from exc
            if code in (errno.EACCES, errno.EPERM):
                raise PortUnavailable(
                    path,
                    "permission denied (on Linux, add your user to the dialout group "
                    "and log in again)",
                ) from exc
            if code in _BUSY_ERRNOS:
                raise PortUnavailable(path, "in use by another program") from exc
            raise PortUnavailable(path, f"cannot open: {exc}") from exc
        return ser

    async def close(self) -> None:
        """Close the port; a read in progress returns at once. Safe to call twice."""
        ser, executor = self._serial, self._executor
        self._serial = self._executor = None
        self._gone = None
        self._pending.clear()
        if ser is None or executor is None:
            return
        with contextlib.suppress(Exception):
            ser.cancel_read()  # wakes the worker's select(); the close queues behind it
        with contextlib.suppress(Exception):
            ser.cancel_write()  # likewise for a write the device is not draining
        with contextlib.suppress(Exception):
            await asyncio.wrap_future(executor.submit(_close_quietly, ser))
        executor.shutdown(wait=False)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """Hold the line across several calls; calls made inside do not lock again."""
        task = asyncio.current_task()
        if task is not None and self._owner is task:
            yield
            return
        async with self._lock:
            self._owner = task
            try:
                yield
            finally:
                self._owner = None

    async def write(self, data: bytes) -> None:
        async with self.transaction():
            await self._write(data)

    async def read_until(self, marker: bytes, *, within_s: float, limit: int = 1_048_576) -> bytes:
        """Bytes up to and including ``marker``; what came after it is kept for the next read."""
        async with self.transaction():
            return await self._read_until(marker, time.monotonic() + within_s, limit)

    async def read_exactly(
        self, size: int, *, within_s: float, gap_s: float | None = None
    ) -> bytes:
        """Exactly ``size`` bytes (framed protocols); NoPrompt with what came if they don't.

        ``within_s`` bounds the whole read. ``gap_s`` also ends it once no byte has come for that
        long (counted from the start, then from the last byte): a USB VCP's per-byte timeout, which
        tells a device that stopped mid-packet from a long packet still flowing.
        """
        async with self.transaction():
            last = time.monotonic()
            deadline = last + within_s
            buf = self._take_pending()
            while len(buf) < size:
                now = time.monotonic()
                if now >= deadline:
                    raise NoPrompt(
                        self._path,
                        f"{len(buf)} of {size} bytes within {within_s:g} s",
                        _shorten(buf),
                    )
                if gap_s is not None and now - last >= gap_s:
                    raise NoPrompt(
                        self._path,
                        f"{len(buf)} of {size} bytes, then none for {gap_s:g} s",
                        _shorten(buf),
                    )
                chunk = await self._read_chunk()
                if chunk:
                    buf += chunk
                    last = time.monotonic()
            self._pending = buf[size:]
            return bytes(buf[:size])

    async def discard_input(self) -> None:
        """Drop every byte received and not yet read: a framed protocol resynchronising."""
        async with self.transaction():
            await self._discard_input()

    async def take_input(self) -> bytes:
        """Every byte received and not yet read, without waiting for more: what
        ``discard_input`` would drop, for a protocol that looks at a late answer first."""
        async with self.transaction():
            buf = self._take_pending()
            buf += await self._call("read", _read_waiting)
            return bytes(buf)

    async def command(
        self,
        line: str,
        *,
        prompt: bytes,
        within_s: float,
        stop_after_s: float | None = None,
        interrupt: bytes = b"\x03",
        echo: bool = True,
        limit: int = 1_048_576,
    ) -> bytes:
        """Run one command line and return its output: no echo, no prompt.

        Writes ``line + "\\r"`` and reads to ``prompt``. Bytes already waiting are discarded
        first, so the line should be sitting at a prompt (sync once after opening with
        ``read_until(prompt)``). With ``echo`` (the Flipper's shell echoes what it is sent) the
        output starts after the echoed line, so a late prompt from before is never taken for
        this command's. The CR LF that the shell prints before its prompt is removed.

        ``within_s`` is how long the prompt may take, counted from the write, or for a streaming
        command (``stop_after_s`` set) from the moment ``interrupt`` is sent: a streaming
        command runs for ``stop_after_s`` seconds (unless it ends by itself), then gets
        ``interrupt`` and the output includes whatever it printed while stopping.
        """
        if "\r" in line or "\n" in line:
            raise ValueError("a command is one line, without CR or LF")
        async with self.transaction():
            await self._discard_input()
            started = time.monotonic()
            await self._write(line.encode() + b"\r")
            if echo and line:
                await self._read_until(line.encode() + b"\r\n", started + within_s, limit)
            if stop_after_s is None:
                response = await self._read_until(prompt, started + within_s, limit)
            else:
                response = await self._read_until(prompt, started + stop_after_s, limit, soft=True)
                if not response.endswith(prompt):
                    await self._write(interrupt)
                    response = await self._read_until(
                        prompt, time.monotonic() + within_s, limit, start=response
                    )
            output = response[: -len(prompt)]
            return output[:-2] if output.endswith(b"\r\n") else output

    # -- below: the caller holds the line --------------------------------------------------

    def _take_pending(self) -> bytearray:
        buf, self._pending = self._pending, bytearray()
        return buf

    async def _read_until(
        self,
        marker: bytes,
        deadline: float,
        limit: int,
        *,
        soft: bool = False,
        start: bytes = b"",
    ) -> bytes:
        """Read to ``marker`` by ``deadline``; ``soft`` returns what came instead of raising."""
        buf = bytearray(start) + self._take_pending()
        searched = 0
        while True:
            found = buf.find(marker, searched)
            if found >= 0:
                end = found + len(marker)
                self._pending = buf[end:]
                return bytes(buf[:end])
            if len(buf) > limit:
                raise LineTooLong(self._path, f"over {limit} bytes without {marker!r}")
            searched = max(0, len(buf) - len(marker) + 1)
            if time.monotonic() >= deadline:
                if soft:
                    return bytes(buf)
                waited = "nothing" if not buf else f"{len(buf)} bytes"
                raise NoPrompt(
                    self._path, f"no {marker!r} in time ({waited} arrived)", _shorten(buf)
                )
            buf += await self._read_chunk()

    async def _discard_input(self) -> None:
        self._pending.clear()
        await self._call("discard input", lambda ser: ser.reset_input_buffer())

    async def _write(self, data: bytes) -> None:
        await self._call("write", lambda ser: ser.write(data))

    async def _read_chunk(self) -> bytes:
        chunk: bytes = await self._call("read", _read_available)
        if chunk:
            self.last_rx = time.monotonic()
        return chunk

    async def _call(self, what: str, fn: Callable[[Any], T]) -> T:
        if self._gone is not None:
            raise PortGone(self._path, self._gone)
        ser, executor = self._serial, self._executor
        if ser is None or executor is None:
            raise SerialLineError(self._path, "the line is closed")
        result: T = await asyncio.wrap_future(executor.submit(self._guarded, ser, what, fn))
        if self._serial is None:  # closed while the call ran: its result is moot
            raise SerialLineError(self._path, "the line was closed")
        return result

    def _guarded(self, ser: Any, what: str, fn: Callable[[Any], T]) -> T:
        """Run ``fn(ser)`` on the line's thread, mapping pyserial's errors (module docstring)."""
        if self._serial is not ser:  # closed before this call got its turn
            raise SerialLineError(self._path, "the line was closed")
        try:
            return fn(ser)
        except serial.SerialTimeoutException as exc:
            raise WriteStalled(
                self._path, f"the device took no bytes for {self._write_timeout_s:g} s"
            ) from exc
        except _PORT_ERRORS as exc:
            if self._serial is not ser:  # our own close() raced the call
                raise SerialLineError(self._path, "the line was closed") from exc
            self._gone = f"{what} failed: {exc}"
            _close_quietly(ser)
            raise PortGone(self._path, self._gone) from exc


def _read_waiting(ser: Any) -> bytes:
    """What has arrived, at once (no wait for a first byte)."""
    waiting: int = ser.in_waiting
    return bytes(ser.read(waiting)) if waiting else b""


def _read_available(ser: Any) -> bytes:
    """Wait up to the read timeout for one byte, then take whatever else is already there."""
    first: bytes = ser.read(1)
    if not first:
        return b""
    waiting: int = ser.in_waiting
    return first + ser.read(waiting) if waiting else first


def _close_opened(opening: Future[Any]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        _close_quietly(opening.result())
