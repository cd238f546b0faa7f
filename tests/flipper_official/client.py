"""Official ``PB.Main`` frames over raw pyserial: a client of the Flipper's RPC that shares no
code with the hub's driver, so the emulator is judged by the firmware's own messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import serial

from tests.flipper_official import flipper_pb2


class OfficialClient:
    """One RPC session on a port; ``main`` is the message class (a newer protobuf's may be
    passed per call)."""

    def __init__(self, port: serial.Serial) -> None:
        self.port = port
        self.command_id = 0

    def send(
        self, fill: Callable[[Any], None], main: Any = flipper_pb2.Main, *, has_next: bool = False
    ) -> int:
        self.command_id += 1
        request = main(command_id=self.command_id, has_next=has_next)
        fill(request)
        body = request.SerializeToString()
        self.port.write(varint(len(body)) + body)
        return self.command_id

    def raw(self) -> bytes:
        """One answer's bytes, its length prefix read and dropped."""
        length = shift = 0
        while True:
            byte = self.port.read(1)
            assert byte, "no answer"
            length |= (byte[0] & 0x7F) << shift
            shift += 7
            if byte[0] < 0x80:
                break
        body = bytes(self.port.read(length))
        assert len(body) == length, "answer cut short"
        return body

    def answer(self, main: Any = flipper_pb2.Main) -> Any:
        return main.FromString(self.raw())

    def call(self, fill: Callable[[Any], None], main: Any = flipper_pb2.Main) -> list[Any]:
        command_id = self.send(fill, main)
        parts = [self.answer(main)]
        while parts[-1].has_next:
            parts.append(self.answer(main))
        assert {p.command_id for p in parts} == {command_id}
        return parts


def varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes([*out, value])
