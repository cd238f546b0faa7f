"""A fixture that fails a test on any connection or name lookup beyond loopback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from hub.api.auth import is_loopback_peer

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def is_loopback(host: object) -> bool:
    if host is None:  # getaddrinfo(None, port): the local host
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    return host.lower().rstrip(".") in LOOPBACK_NAMES or is_loopback_peer(host)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Any non-loopback connection or name lookup raises AssertionError, and is recorded.

    The record matters: a library that swallows the error (telemetry does) still fails
    the test, which asserts the list is empty at the end.
    """
    attempts: list[str] = []

    def refuse(what: str) -> None:
        attempts.append(what)
        raise AssertionError(f"network access attempted: {what}")

    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_create_connection = socket.create_connection
    real_getaddrinfo = socket.getaddrinfo
    inet = (socket.AF_INET, socket.AF_INET6)

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in inet and not is_loopback(address[0]):
            refuse(f"connect {address!r}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in inet and not is_loopback(address[0]):
            refuse(f"connect_ex {address!r}")
        return real_connect_ex(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        if not is_loopback(address[0]):
            refuse(f"create_connection {address!r}")
        return real_create_connection(address, *args, **kwargs)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_loopback(host):
            refuse(f"getaddrinfo {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    yield attempts
