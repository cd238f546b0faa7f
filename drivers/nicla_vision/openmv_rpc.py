"""OpenMV's RPC protocol (the ``rpc`` library's USB VCP flavour): a packet codec and a host.

The protocol, as the real code does it (openmv/openmv ``scripts/libraries/rpc.py`` on the camera,
``tools/rpc/rpc.py`` on a computer; summarised in ``docs/hardware.md``):

- A packet is ``<H magic`` + payload + ``<H CRC-16`` over magic and payload (CRC-16/CCITT-FALSE:
  polynomial 0x1021, initial value 0xFFFF, no reflection, no final XOR; the camera computes it with
  the STM32's CRC unit, the same function).
- A call is named by a 32-bit djb2 variant of its name: ``h = 5381; h = (h * 33) ^ byte``, kept to
  32 bits. The camera hashes ``cb.__name__`` byte by byte (UTF-8); upstream's host hashes
  ``ord(ch)``, which only agrees for ASCII names. Here it is the UTF-8 bytes, what the camera
  matches.
- The controller ("master", the hub) sends a command header ``0x1209 <II hash, data length>``;
  the camera acknowledges with an empty ``0x1209``; the controller sends ``0xABD1 + data``; the
  camera acknowledges with an empty ``0xABD1`` and runs the callback. The controller then polls
  with an empty ``0x9021``, the camera answers ``0x9021 <I result length>``; the controller asks
  with an empty ``0x1DBA``, the camera answers ``0x1DBA + result``.
- Each side empties its input before every attempt and retries a step that got no valid answer:
  that flush-and-retry is the whole resynchronisation. The controller's wait grows by 4/3 per
  failed attempt (from 3 ms, plus the 10 ms the VCP read waits), the camera's by 1 ms (from 2 ms);
  the controller gives up after ``send_timeout``/``recv_timeout`` (1 s each by default upstream).
- A name the camera has not registered is answered with an empty result: ``b""``. Upstream's
  ``call`` returns None on a link failure.
- Delivery is at least once: when the camera's data acknowledgement is lost, the controller sends
  the command again and the camera may run the callback a second time. Every call the hub makes
  is safe to repeat.

Why our own host and not upstream's ``rpc.py``: that file is a blocking, module-global script
(``import rpc`` from a copy next to your program; it opens the port in its constructor and sleeps
in ``get_bytes``), not a package: PyPI has no OpenMV RPC package (the ``openmv`` distribution there
is the IDE's "Protocol V2" client, openmv/openmv-python, which has no RPC master). The hub needs an
asyncio host on its own ``SerialLine`` (one port owner, unplug detection, no thread per call), with
errors that say what happened.

Where this host deliberately differs from upstream's master, and why:

- A result packet that arrives corrupt or cut short ends the attempt at once: the camera has
  already gone back to waiting for a command, so polling on (as upstream does until
  ``recv_timeout``) cannot succeed. ``call(attempts=n)`` makes the whole call again instead, which
  is what upstream's example does by hand for ``jpeg_image_read`` (three tries per chunk). A
  result that never starts (the camera missed the data poll and still holds it) is polled for
  again, as upstream does.
- The result length is checked against ``max_result`` before anything is allocated.
- The growing wait is capped (``MAX_SHORT_MS``) so a long callback is noticed promptly when it ends.
- A result packet is read with a per-byte silence limit (``gap_s``, like the VCP's per-read
  timeout) rather than upstream's 10 ms, which a loaded host misses.
- An answer that comes after its wait ended (a busy computer delivers the camera's bytes late)
  is read before the next attempt, not flushed: a late acknowledgement or result header counts,
  and a late result is the result. Only a call's first attempt drops what is waiting.
- A camera that does not acknowledge a command may be serving the result of a call its host gave
  up on (the board script keeps a result for seconds): every few unacknowledged headers, the host
  asks for such a result and drops it, so the camera listens again.
- A data acknowledgement that arrives damaged or in part still says the camera has the command:
  the host goes on to poll for the result instead of sending the command again (the camera,
  serving that result, would not hear a new command until it gave the result up).
"""

from __future__ import annotations

import binascii
import contextlib
import struct
import time

from drivers.transports.serial import NoPrompt, PortGone, SerialLine, SerialLineError

COMMAND_HEADER = 0x1209
COMMAND_DATA = 0xABD1
RESULT_HEADER = 0x9021
RESULT_DATA = 0x1DBA
MAGIC_NAMES = {
    COMMAND_HEADER: "command header",
    COMMAND_DATA: "command data",
    RESULT_HEADER: "result header",
    RESULT_DATA: "result data",
}

BAUDRATE = 115_200  # ignored by a USB VCP, but what upstream opens the port with
READ_TIMEOUT_S = 0.01  # upstream's VCP read timeout ("changing this causes control transfers")
SHORT_START_MS = 3  # upstream master's first short timeout
MAX_SHORT_MS = 100
LONG_S = 5.0  # upstream's long timeout: a whole result packet
GAP_S = 0.25
SEND_TIMEOUT_S = 2.0
MAX_RESULT = 1 << 20
MAX_COMMAND_DATA = 1 << 16
DRAIN_EVERY = 4  # unacknowledged command headers before asking for a result the camera holds


# --- the codec -----------------------------------------------------------------------------------


class PacketError(ValueError):
    """Bytes that are not the packet that was expected; ``str()`` says how."""


class PacketTruncated(PacketError):
    """Fewer bytes than the packet needs."""


class BadMagic(PacketError):
    """A packet of another kind (or noise) where this kind was expected."""


class CrcMismatch(PacketError):
    """The CRC does not match: the packet was damaged on the way."""


def name_hash(name: str) -> int:
    """The 32-bit id the camera registers ``name`` under (djb2 with XOR, over UTF-8 bytes)."""
    h = 5381
    for byte in name.encode("utf-8"):
        h = ((h << 5) + h) ^ byte
    return h & 0xFFFFFFFF


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE, the packets' checksum (``binascii.crc_hqx`` is that CRC, in C)."""
    return binascii.crc_hqx(data, 0xFFFF)


def encode_packet(magic: int, payload: bytes = b"") -> bytes:
    body = struct.pack("<H", magic) + bytes(payload)
    return body + struct.pack("<H", crc16(body))


def decode_packet(packet: bytes, *, magic: int, size: int) -> bytes:
    """The payload of a ``magic`` packet whose payload is ``size`` bytes (the reader always knows
    the size: a fixed ack or header, or the length a result header announced)."""
    want = size + 4
    if len(packet) < want:
        raise PacketTruncated(
            f"a {MAGIC_NAMES.get(magic, hex(magic))} packet cut short: "
            f"{len(packet)} of {want} bytes"
        )
    if len(packet) > want:
        raise PacketError(f"{len(packet)} bytes where a {want}-byte packet was expected")
    found = packet[0] | packet[1] << 8
    if found != magic:
        raise BadMagic(
            f"magic {found:#06x} where {magic:#06x} "
            f"({MAGIC_NAMES.get(magic, 'unknown')}) was expected"
        )
    crc = packet[-2] | packet[-1] << 8
    if crc != crc16(packet[:-2]):
        raise CrcMismatch(
            f"CRC mismatch in a {MAGIC_NAMES.get(magic, hex(magic))} packet "
            f"({crc:#06x}, computed {crc16(packet[:-2]):#06x})"
        )
    return bytes(packet[2:-2])


def command_header(name: str, data: bytes) -> bytes:
    return encode_packet(COMMAND_HEADER, struct.pack("<II", name_hash(name), len(data)))


ACK_COMMAND_HEADER = encode_packet(COMMAND_HEADER)
ACK_COMMAND_DATA = encode_packet(COMMAND_DATA)
POLL_RESULT_HEADER = encode_packet(RESULT_HEADER)
POLL_RESULT_DATA = encode_packet(RESULT_DATA)


# --- the host ------------------------------------------------------------------------------------


class RpcError(Exception):
    """An RPC call failed; ``str()`` is meant for a person."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class RpcUnknownFunction(RpcError):
    """The camera answered with an empty result: it has no callback by that name."""

    def __init__(self, name: str) -> None:
        super().__init__(
            name,
            f"the Nicla Vision has no RPC function {name}; "
            "flash firmware_bridges/nicla_vision/main.py",
        )


class RpcLinkError(RpcError):
    """No usable answer: silence, damage that retries did not mend, or the port went away
    (``gone``; the port is then closed and every later call fails the same way)."""

    def __init__(self, name: str, why: str, *, gone: bool = False) -> None:
        super().__init__(name, f"the Nicla Vision did not answer {name}: {why}")
        self.why = why
        self.gone = gone


class _ResultLost(Exception):
    """The result packet arrived damaged; the camera has moved on: the call must be made again."""


def _grow(short_ms: int) -> int:
    return min(max(short_ms + 1, short_ms * 4 // 3), MAX_SHORT_MS)


def _window_s(short_ms: int) -> float:
    """How long to wait for a short answer: the VCP read's 10 ms plus the growing back-off."""
    return READ_TIMEOUT_S + short_ms / 1000


class RpcHost:
    """The controller side of the protocol over a ``SerialLine`` opened at 115200 with a 10 ms
    read timeout (``SerialLine(read_timeout_s=READ_TIMEOUT_S)``).

    One call holds the line from the command header to the last byte of the result. Three
    counters say how much resynchronising the link needed: ``command_retries`` (a command header
    or its data sent again), ``repeated_calls`` (a whole call made again after a damaged result)
    and ``drained_results`` (a result of an abandoned call taken off the camera and dropped).
    """

    def __init__(
        self,
        line: SerialLine,
        *,
        send_timeout_s: float = SEND_TIMEOUT_S,
        max_result: int = MAX_RESULT,
        gap_s: float = GAP_S,
    ) -> None:
        self._line = line
        self.send_timeout_s = send_timeout_s
        self.max_result = max_result
        self.gap_s = gap_s
        self.command_retries = 0
        self.repeated_calls = 0
        self.drained_results = 0

    async def call(
        self,
        name: str,
        data: bytes = b"",
        *,
        timeout_s: float,
        attempts: int = 1,
        send_timeout_s: float | None = None,
    ) -> bytes:
        """Run ``name(data)`` on the camera and return its result.

        ``timeout_s`` is how long the result may take once the command is delivered (the
        callback's own run time included); delivering the command may take ``send_timeout_s``.
        ``attempts`` > 1 makes the whole call again when its result arrives damaged: only for
        calls that are safe to repeat (reads). RpcUnknownFunction for an empty result,
        RpcLinkError for everything else.
        """
        if len(data) > MAX_COMMAND_DATA:
            raise ValueError(f"{len(data)} bytes of arguments; the limit is {MAX_COMMAND_DATA}")
        send_s = self.send_timeout_s if send_timeout_s is None else send_timeout_s
        damage = ""
        try:
            async with self._line.transaction():
                for attempt in range(max(1, attempts)):
                    if attempt:
                        self.repeated_calls += 1
                    await self._put_command(name, data, send_s)
                    try:
                        result = await self._get_result(name, timeout_s)
                    except _ResultLost as lost:
                        damage = str(lost)
                        continue
                    if not result:
                        raise RpcUnknownFunction(name)
                    return result
        except PortGone as exc:
            raise RpcLinkError(name, f"the port went away ({exc})", gone=True) from None
        except SerialLineError as exc:  # closed, stalled writes: the link is unusable
            raise RpcLinkError(name, str(exc), gone=not self._line.is_open) from None
        tries = "once" if attempts <= 1 else f"{attempts} times"
        raise RpcLinkError(name, f"its result arrived damaged {tries} ({damage})")

    async def _put_command(self, name: str, data: bytes, budget_s: float) -> None:
        """Deliver the command header, then its data; an acknowledgement that came after its
        wait ended counts (it is read before the next attempt instead of being dropped)."""
        header, body = command_header(name, data), encode_packet(COMMAND_DATA, data)
        deadline = time.monotonic() + budget_s
        short_ms = SHORT_START_MS
        late_ok = False  # acknowledgements from before this call's first header are not its own
        while True:
            try:
                late = await self._later_input(late_ok)
                late_ok = True
                if _late_packet(late, COMMAND_DATA, 0) is not None:
                    return
                if _late_packet(late, COMMAND_HEADER, 0) is None:
                    await self._line.write(header)
                    raw = await self._line.read_exactly(4, within_s=_window_s(short_ms))
                    decode_packet(raw, magic=COMMAND_HEADER, size=0)
                await self._line.write(body)
            except (NoPrompt, PacketError) as exc:
                why = _why(exc, "no acknowledgement of the command")
                if self.command_retries % DRAIN_EVERY == DRAIN_EVERY - 1:
                    await self._drain_held_result(short_ms)
            else:
                try:
                    raw = await self._line.read_exactly(
                        4, within_s=_window_s(short_ms) + len(body) / 100_000
                    )
                    decode_packet(raw, magic=COMMAND_DATA, size=0)
                    return
                except PacketError:
                    return  # an acknowledgement came, damaged: the camera has the command
                except NoPrompt as exc:
                    if exc.tail:
                        return  # part of one came: the same
                    why = _why(exc, "no acknowledgement of the command's data")
            if time.monotonic() >= deadline:
                raise RpcLinkError(name, f"{why} within {budget_s:g} s")
            short_ms = _grow(short_ms)
            self.command_retries += 1

    async def _drain_held_result(self, short_ms: int) -> None:
        """A camera that hears no command may still be serving the result of a call its host
        gave up on (it keeps one for seconds): ask for that result and drop it, so that the
        camera goes back to listening. Nothing answers when it is not serving one."""
        try:
            await self._line.discard_input()
            await self._line.write(POLL_RESULT_HEADER)
            raw = await self._line.read_exactly(8, within_s=_window_s(short_ms))
            (length,) = struct.unpack("<I", decode_packet(raw, magic=RESULT_HEADER, size=4))
            if length > self.max_result:
                return
            await self._line.write(POLL_RESULT_DATA)
            await self._line.read_exactly(
                length + 4, within_s=LONG_S + length / 50_000, gap_s=self.gap_s
            )
            self.drained_results += 1
        except (NoPrompt, PacketError):
            return

    async def _later_input(self, late_ok: bool) -> bytes:
        """Before an attempt: what arrived since the last one (a late answer), or, on a call's
        first attempt, nothing (whatever is waiting then is dropped, as upstream flushes)."""
        if late_ok:
            return await self._line.take_input()
        await self._line.discard_input()
        return b""

    async def _get_result(self, name: str, budget_s: float) -> bytes:
        """Poll for the result header until the callback is done, then fetch the result.

        An answer that comes after its wait ended is not dropped: before each new poll, what
        arrived meanwhile is read first. A late result header is used as if it had come in
        time, and a late result packet is the result (the camera sent it once and has moved
        on: discarding it would lose the call)."""
        deadline = time.monotonic() + budget_s
        short_ms = SHORT_START_MS
        length: int | None = None
        late_ok = False  # what came before this call's first poll is not its answer
        while True:
            try:
                late = await self._later_input(late_ok)
                late_ok = True
                start = late.find(_RESULT_DATA_MAGIC) if length is not None else -1
                if length is not None and start >= 0:
                    return await self._rest_of_result(late[start:], length)
                header = _late_packet(late, RESULT_HEADER, 4)
                if header is None:
                    await self._line.write(POLL_RESULT_HEADER)
                    raw = await self._line.read_exactly(8, within_s=_window_s(short_ms))
                    header = decode_packet(raw, magic=RESULT_HEADER, size=4)
                (length,) = struct.unpack("<I", header)
                if length > self.max_result:
                    raise RpcLinkError(
                        name,
                        f"it announced a {length}-byte result (the limit is {self.max_result})",
                    )
                await self._line.write(POLL_RESULT_DATA)
                try:  # nothing yet: the camera is slow, or missed the poll and still holds it
                    first = await self._line.read_exactly(1, within_s=_window_s(short_ms))
                except NoPrompt:
                    why = "the result header came, the result did not"
                else:
                    return await self._rest_of_result(first, length)
            except (NoPrompt, PacketError) as exc:
                why = _why(exc, "no result")
            if time.monotonic() >= deadline:
                raise RpcLinkError(name, f"{why} within {budget_s:g} s")
            short_ms = _grow(short_ms)

    async def _rest_of_result(self, start: bytes, length: int) -> bytes:
        """The result packet from its first bytes on; once it has started, damage is final."""
        want = length + 4
        try:
            rest = b""
            if len(start) < want:
                rest = await self._line.read_exactly(
                    want - len(start), within_s=LONG_S + length / 50_000, gap_s=self.gap_s
                )
            return decode_packet((start + rest)[:want], magic=RESULT_DATA, size=length)
        except (NoPrompt, PacketError) as exc:
            raise _ResultLost(_why(exc, "the result stopped short")) from None


_RESULT_DATA_MAGIC = struct.pack("<H", RESULT_DATA)


def _late_packet(data: bytes, magic: int, size: int) -> bytes | None:
    """The payload of the first whole, valid ``magic`` packet in ``data``, if there is one."""
    marker = struct.pack("<H", magic)
    start = data.find(marker)
    while start >= 0:
        with contextlib.suppress(PacketError):
            return decode_packet(data[start : start + size + 4], magic=magic, size=size)
        start = data.find(marker, start + 1)
    return None


def _why(exc: Exception, silent: str) -> str:
    if isinstance(exc, NoPrompt):
        return f"{silent} (a partial packet came)" if exc.tail else silent
    return str(exc)
