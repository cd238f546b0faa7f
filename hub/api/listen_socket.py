"""The hub's listening socket: bound here by ``serve`` before the hub starts, and the same way by
``tiny-hub doctor`` to see whether the port is free (this module imports nothing of the hub, so
the doctor need not load the server to ask)."""

from __future__ import annotations

import errno
import socket


class StartError(Exception):
    """The hub cannot start; the message is one line saying why and what to do."""


def bind_socket(host: str, port: int) -> socket.socket:
    """Listen on host:port (0 picks a free port); StartError when that is impossible. ``::``
    (every IPv6 address) takes IPv4 too where the system can, as ``0.0.0.0`` and ``::``
    together would: phones dial the hub's IPv4 LAN address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    both = host == "::" and socket.has_dualstack_ipv6()
    try:
        return socket.create_server((host, port), family=family, backlog=128, dualstack_ipv6=both)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartError(
                f"port {port} on {host} is already in use (is another tiny-hub running? "
                "choose another with --port or TINY_HUB_PORT, or 0 for any free port)"
            ) from None
        raise StartError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
