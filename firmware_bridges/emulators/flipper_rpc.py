"""The Flipper's protobuf RPC, device side (``rpc_cli.c``, ``rpc.c``, ``rpc_system.c``,
``rpc_storage.c``): ``start_rpc_session`` on USB, and the same answers over BLE (``RpcOverBle``).
The wire code is ``flipper_pb``'s, not the driver's."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime

from firmware_bridges.emulators.flipper_pb import (
    PbError,
    Request,
    decode_request,
    pb_bytes,
    pb_file,
    pb_main,
    pb_str,
    pb_uint,
)
from firmware_bridges.emulators.flipper_shell import Board
from firmware_bridges.emulators.flipper_storage import (
    FSE_DENIED,
    FSE_EXIST,
    FSE_INVALID_NAME,
    FSE_NOT_EXIST,
    FSE_NOT_IMPLEMENTED,
    FSE_NOT_READY,
    FsError,
    StoragePort,
)

# --- protobuf RPC (flipper.proto, system.proto, storage.proto) -------------------------------
# The wire code is the emulator's own (``flipper_pb``), deliberately NOT the driver's, so a bug in
# one is not hidden by the same bug in the other.

RPC_READ_CHUNK = 512
"""storage.options: File.data max_size."""
RPC_LIST_CHUNK = 8
"""storage.options: ListResponse.file max_count."""
RPC_OK = 0
RPC_ERROR_DECODE = 2
RPC_ERROR_NOT_IMPLEMENTED = 3
RPC_ERROR_INVALID_PARAMETERS = 15
_RPC_FS_STATUS = {
    FSE_NOT_READY: 5,
    FSE_EXIST: 6,
    FSE_NOT_EXIST: 7,
    FSE_DENIED: 9,
    FSE_INVALID_NAME: 10,
    FSE_NOT_IMPLEMENTED: 12,
}
# PB.Main content fields used here
_PB_EMPTY, _PB_STOP = 4, 19
_PB_PING_REQ, _PB_PING_RESP = 5, 6
_PB_LIST_REQ, _PB_LIST_RESP = 7, 8
_PB_READ_REQ, _PB_READ_RESP = 9, 10
_PB_MD5_REQ, _PB_MD5_RESP = 14, 15
_PB_STAT_REQ, _PB_STAT_RESP = 24, 25
_PB_FS_INFO_REQ, _PB_FS_INFO_RESP = 28, 29
_PB_INFO_REQ, _PB_INFO_RESP = 32, 33
_PB_DATETIME_REQ, _PB_DATETIME_RESP = 35, 36
_PB_ALERT_REQ = 38
_PB_VERSION_REQ, _PB_VERSION_RESP = 39, 40
_PB_POWER_REQ, _PB_POWER_RESP = 44, 45
_PB_TIMESTAMP_REQ, _PB_TIMESTAMP_RESP = 59, 60
_PB_PROPERTY_REQ, _PB_PROPERTY_RESP = 61, 62
# PB_Storage.ListRequest: path 1, include_md5 2, filter_max_size 3 (protobuf 0.19 on)
_LIST_INCLUDE_MD5, _LIST_FILTER_MAX_SIZE = 2, 3


class RpcPort(StoragePort):
    """The shell with storage and ``start_rpc_session``."""

    # --- protobuf RPC (rpc_cli.c, rpc.c, rpc_system.c, rpc_storage.c) ---

    def cmd_start_rpc_session(self, args: str) -> None:
        """Speak varint-framed PB.Main until the session ends (``stop_session``, or a frame that
        does not decode); the shell then prints its prompt."""
        while self._rpc_request(self._rpc_frame()):
            pass

    def _rpc_request(self, body: bytes) -> bool:
        """Answer one request (a PB.Main without its length); False when the session ends.

        A frame that does not decode (an empty one included) ends the session as
        ``rpc_session_worker`` in ``applications/services/rpc/rpc.c`` does: the stream position
        is lost, so it answers ``Empty`` with ``command_id`` 0 and ``ERROR_DECODE`` and closes
        the session (USB: back to the text shell).
        """
        body = self.emu._take_replaced_request(body)
        try:
            request = decode_request(body)
        except PbError:
            self.emu._record_rpc("decode_error")
            self._rpc_try_send([pb_main(0, _PB_EMPTY, b"", status=RPC_ERROR_DECODE)])
            return False
        if request.content == _PB_STOP:
            self.emu._record_rpc("stop_session")
            self.out(pb_main(request.command_id, _PB_EMPTY, b""))
            return False
        self._rpc_try_send(self._rpc_answer(request))
        return True

    def _rpc_frame(self) -> bytes:
        """The next request's bytes (a length prefix over 5 bytes: the rest is dropped)."""
        length = shift = 0
        for _ in range(5):
            byte = self.getc(None)
            if byte is None:  # pragma: no cover - getc(None) always returns a byte
                continue
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        data = bytearray()
        while len(data) < length:
            byte = self.getc(None)
            if byte is not None:
                data.append(byte)
        return bytes(data)

    def _rpc_try_send(self, frames: list[bytes]) -> None:
        """Send the frames; a fault knob may cut them short (the rest is never sent)."""
        for frame in frames:
            fault = self.emu._take_rpc_fault()
            if fault == "truncate":
                self.out(frame[: max(1, len(frame) // 2)])
                return
            if fault == "oversized":
                self.out(b"\xff" * 9 + b"\x01" + frame)
                return
            self.out(frame)

    def _rpc_parts(self, command_id: int, content: int, bodies: list[bytes]) -> list[bytes]:
        """One frame per body, ``has_next`` on all but the last."""
        last = len(bodies) - 1
        return [
            pb_main(command_id, content, body, has_next=index < last)
            for index, body in enumerate(bodies)
        ]

    def _rpc_answer(self, request: Request) -> list[bytes]:
        """The frames answering a decoded request."""
        command_id, kind = request.command_id, request.content
        system = self._rpc_system_answer(request)
        if system is not None:
            return system
        if kind == _PB_PROPERTY_REQ:
            self.emu._record_rpc(f"property_get {request.text(1)}")
            return self._rpc_property_get(command_id, request.text(1))
        if kind == _PB_LIST_REQ:
            self.emu._record_rpc(f"storage_list {request.text(1)}")
            try:
                return self._rpc_storage_list(request)
            except FsError as exc:
                return [pb_main(command_id, _PB_EMPTY, b"", status=_rpc_fs_status(exc))]
        storage: dict[int, tuple[str, Callable[[int, str], list[bytes]]]] = {
            _PB_READ_REQ: ("read", self._rpc_storage_read),
            _PB_STAT_REQ: ("stat", self._rpc_storage_stat),
            _PB_FS_INFO_REQ: ("info", self._rpc_storage_info),
            _PB_MD5_REQ: ("md5sum", self._rpc_storage_md5sum),
            _PB_TIMESTAMP_REQ: ("timestamp", self._rpc_storage_timestamp),
        }
        if kind in storage:
            name, answer = storage[kind]
            path = request.text(1)
            self.emu._record_rpc(f"storage_{name} {path}")
            try:
                return answer(command_id, path)
            except FsError as exc:
                return [pb_main(command_id, _PB_EMPTY, b"", status=_rpc_fs_status(exc))]
        # decoded, but no handler here (rpc.c: "decoded, but not implemented")
        self.emu._record_rpc(f"unknown {kind}")
        return [pb_main(command_id, _PB_EMPTY, b"", status=RPC_ERROR_NOT_IMPLEMENTED)]

    def _rpc_system_answer(self, request: Request) -> list[bytes] | None:
        """rpc_system.c's requests; None for any other."""
        command_id, kind, state = request.command_id, request.content, self.state
        if kind == _PB_PING_REQ:
            self.emu._record_rpc("ping")
            if request.has_next:
                return [pb_main(command_id, _PB_EMPTY, b"", status=RPC_ERROR_INVALID_PARAMETERS)]
            data = request.data(1)
            return [pb_main(command_id, _PB_PING_RESP, pb_bytes(1, data) if data else b"")]
        if kind in (_PB_INFO_REQ, _PB_POWER_REQ):
            info = kind == _PB_INFO_REQ
            self.emu._record_rpc("device_info" if info else "power_info")
            rows = state.device_info("_") if info else state.power_info("_")
            bodies = [pb_str(1, key) + pb_str(2, value) for key, value in rows]
            response = _PB_INFO_RESP if info else _PB_POWER_RESP
            return self._rpc_parts(command_id, response, bodies)
        if kind == _PB_ALERT_REQ:
            self.emu._record_rpc("play_audiovisual_alert")
            state.alerts += 1
            return [pb_main(command_id, _PB_EMPTY, b"")]
        if kind == _PB_VERSION_REQ:
            self.emu._record_rpc("protobuf_version")
            major, minor = state.protobuf_version
            return [pb_main(command_id, _PB_VERSION_RESP, pb_uint(1, major) + pb_uint(2, minor))]
        if kind == _PB_DATETIME_REQ:
            self.emu._record_rpc("get_datetime")
            now = datetime.now() + state.clock_offset
            parts = (now.hour, now.minute, now.second, now.day, now.month, now.year)
            fields = b"".join(pb_uint(n, v) for n, v in enumerate(parts, 1))
            fields += pb_uint(7, now.isoweekday())
            return [pb_main(command_id, _PB_DATETIME_RESP, pb_bytes(1, fields))]
        return None

    def _rpc_storage_list(self, request: Request) -> list[bytes]:
        """``rpc_system_storage_list_process``: names that are not ASCII are skipped, and so
        are files over ``filter_max_size`` when it is set; ``include_md5`` adds each file's MD5
        (not a directory's)."""
        command_id, path = request.command_id, request.text(1)
        include_md5 = bool(request.fields.get(_LIST_INCLUDE_MD5))
        max_size = request.fields.get(_LIST_FILTER_MAX_SIZE)
        max_size = max_size if isinstance(max_size, int) else 0
        if path == "/":  # rpc_system_storage_list_root: "any", "int", "ext", in that order
            files = [pb_file(True, root) for root in ("any", "int", "ext")]
        else:
            directory = self._resolve(path)
            if self.state.files.get(directory, b"") is not None:
                raise FsError(FSE_NOT_EXIST)
            files = []
            for child in self.state.children(directory):
                data = self.state.files[child]
                name = child.rsplit("/", 1)[1]
                size = len(data or b"")
                if not name.isascii() or (max_size and size > max_size):
                    continue
                md5 = hashlib.md5(data).hexdigest() if include_md5 and data is not None else ""
                files.append(pb_file(data is None, name, size, md5sum=md5))
        bodies = [
            b"".join(pb_bytes(1, f) for f in files[start : start + RPC_LIST_CHUNK])
            for start in range(0, len(files), RPC_LIST_CHUNK)
        ] or [b""]
        return self._rpc_parts(command_id, _PB_LIST_RESP, bodies)

    def _rpc_storage_read(self, command_id: int, path: str) -> list[bytes]:
        """rpc_system_storage_read_process sets only ``file.data`` (no size) in each part; an
        empty file is one part whose ``data`` is set and empty (nanopb writes it: ``22 00``)."""
        _, data = self._file(path)
        chunks = [data[i : i + RPC_READ_CHUNK] for i in range(0, len(data), RPC_READ_CHUNK)]
        bodies = [pb_bytes(1, pb_file(False, data=c)) for c in chunks or [b""]]
        return self._rpc_parts(command_id, _PB_READ_RESP, bodies)

    def _rpc_storage_stat(self, command_id: int, path: str) -> list[bytes]:
        """``storage_common_stat``: ``/`` is no storage's path, so an invalid name (the CLI's
        ``storage stat /`` prints "Storage" on its own, the RPC has no such case)."""
        resolved = self._resolve(path)
        if resolved not in self.state.files:
            raise FsError(FSE_NOT_EXIST)
        data = self.state.files[resolved]
        file = pb_file(data is None, size=len(data or b""))
        return [pb_main(command_id, _PB_STAT_RESP, pb_bytes(1, file))]

    def _rpc_storage_info(self, command_id: int, path: str) -> list[bytes]:
        """storage_common_fs_info: total and free bytes of the filesystem holding ``path``."""
        resolved = self._resolve(path)
        if resolved.startswith("/int"):
            total, free = self.state.int_total_bytes, self.state.int_free_bytes()
        else:
            total, free = self.state.sd_total_kib * 1024, self.state.sd_free_kib() * 1024
        return [pb_main(command_id, _PB_FS_INFO_RESP, pb_uint(1, total) + pb_uint(2, free))]

    def _rpc_storage_md5sum(self, command_id: int, path: str) -> list[bytes]:
        _, data = self._file(path)
        digest = hashlib.md5(data).hexdigest()
        return [pb_main(command_id, _PB_MD5_RESP, pb_str(1, digest))]

    def _rpc_storage_timestamp(self, command_id: int, path: str) -> list[bytes]:
        """The CLI's ``storage timestamp``: the storage's, for any path under a valid prefix."""
        timestamp = self.state.stamp(self._storage_of(path))
        return [pb_main(command_id, _PB_TIMESTAMP_RESP, pb_uint(1, timestamp))]

    def _rpc_property_get(self, command_id: int, key: str) -> list[bytes]:
        """``rpc_system_property_get_process``: ``devinfo``, ``pwrinfo`` or ``pwrdebug``, then
        optionally ``.`` and a prefix of the keys wanted. Each matching key/value is one part
        (``has_next``), and an ``Empty`` with OK ends the answer; any other category is an
        ``Empty`` with ERROR_INVALID_PARAMETERS."""
        category, _, prefix = key.partition(".")
        tables = {
            "devinfo": lambda: self.state.device_info("."),
            "pwrinfo": lambda: self.state.power_info("."),
            "pwrdebug": self.state.power_debug,
        }
        table = tables.get(category)
        if table is None:
            return [pb_main(command_id, _PB_EMPTY, b"", status=RPC_ERROR_INVALID_PARAMETERS)]
        parts = [
            pb_main(command_id, _PB_PROPERTY_RESP, pb_str(1, k) + pb_str(2, v), has_next=True)
            for k, v in table()
            if k.startswith(prefix)
        ]
        return [*parts, pb_main(command_id, _PB_EMPTY, b"")]


def _rpc_fs_status(exc: FsError) -> int:
    return _RPC_FS_STATUS.get(exc.desc, 1)


class RpcOverBle(RpcPort):
    """The RPC half of a ``_Port`` with no pty under it: what the Flipper's BLE serial service
    carries (only RPC, the session open from the moment the host connects).

    It reuses the port's own RPC answers (``_rpc_request`` and what it calls), so USB and BLE
    answer from one codec and one ``FlipperState``. ``_Port.__init__`` (which opens a pty) is
    deliberately not called: only ``emu``, ``state`` and ``out`` are used on this path.
    """

    def __init__(self, emulator: Board) -> None:
        self.emu = emulator
        self.state = emulator.state
        self.inbuf = bytearray()
        self.answers = bytearray()

    def out(self, data: bytes | str) -> None:
        self.answers += data.encode() if isinstance(data, str) else data

    def feed(self, data: bytes) -> bytes | None:
        """Buffer ``data``; answer every complete frame in it; the rest waits for more."""
        self.inbuf += data
        while self.inbuf:
            length = shift = used = 0
            complete = False
            for byte in self.inbuf[:5]:
                used += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    complete = True
                    break
            if not complete and used < 5:
                break  # the length prefix itself is still arriving
            if len(self.inbuf) < used + length:
                break
            body = bytes(self.inbuf[used : used + length])
            del self.inbuf[: used + length]
            # stop_session over BLE: answered with Empty; the link keeps its RPC session
            self._rpc_request(body)
        answers, self.answers = bytes(self.answers), bytearray()
        return answers or None
