"""The hub's address on the home network (``lanUrl``): what a phone on the same Wi-Fi dials.

The kernel already knows which interface reaches the LAN: connecting a UDP socket toward the mDNS
group (224.0.0.251, as Wyoming does) sends nothing but makes it pick a source address. When that
gives no usable answer (a route through loopback, a container), the machine's interfaces are read
instead. Loopback, link-local and container bridges (docker0, br-*, veth*, ...) are never the
answer: a phone cannot reach them, and a lanUrl that points there would only confuse it.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import ifaddr

log = logging.getLogger(__name__)

MDNS_GROUP = "224.0.0.251"
MDNS_PORT = 5353
#: Interfaces that belong to containers or virtual machines on this host, not to the home network.
VIRTUAL_PREFIXES = ("docker", "br-", "veth", "virbr", "cni", "flannel", "podman", "lxcbr", "vmnet")
ANY_HOSTS = ("0.0.0.0", "", "::")

#: (interface name, IPv4 address) for every address on the machine.
Interfaces = Callable[[], Iterable[tuple[str, str]]]


@dataclass
class LanInfo:
    """What the running hub knows about itself on the LAN, shown by ``/api/health``.

    Mutable on purpose: the advertiser updates ``url`` when the machine's address changes.
    """

    url: str | None = None
    loopback_url: str | None = None
    fingerprint: str | None = None
    advertised_as: str | None = None


def machine_interfaces() -> list[tuple[str, str]]:
    """Every IPv4 address of the machine with its interface's name (via ifaddr, zeroconf's own
    dependency, so no psutil)."""
    found: list[tuple[str, str]] = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if isinstance(ip.ip, str):  # IPv6 entries are tuples
                found.append((str(adapter.nice_name), ip.ip))
    return found


def routed_address(target: str = MDNS_GROUP) -> str | None:
    """The source address the kernel would use toward ``target`` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect((target, MDNS_PORT))
            address = str(sock.getsockname()[0])
        except OSError:
            return None
    return address


def is_virtual(interface: str) -> bool:
    return interface.startswith(VIRTUAL_PREFIXES)


def usable(address: str) -> bool:
    """An IPv4 address a phone on the LAN could plausibly reach."""
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast)


def lan_address(
    interfaces: Interfaces = machine_interfaces,
    routed: Callable[[], str | None] = routed_address,
) -> str | None:
    """The machine's LAN IPv4 address, or None when it has none (only loopback, only bridges)."""
    names = list(interfaces())
    on_virtual = {address for name, address in names if is_virtual(name)}
    chosen = routed()
    if chosen is not None and usable(chosen) and chosen not in on_virtual:
        return chosen
    candidates = [a for name, a in names if not is_virtual(name) and usable(a)]
    private = [a for a in candidates if ipaddress.IPv4Address(a).is_private]
    ranked = private or candidates
    return ranked[0] if ranked else None


def dialable(host: str) -> str:
    """``host`` as this machine dials it in a URL: a wildcard address becomes loopback (IPv4
    for 0.0.0.0, IPv6 for ::), an IPv6 address gets its brackets."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def is_loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def lan_url(
    configured: str,
    host: str,
    port: int,
    *,
    tls: bool = False,
    address: Callable[[], str | None] = lan_address,
) -> str | None:
    """The URL a phone should dial: the ``lan.url`` setting if given, else the bound address
    when it is a specific one, else the LAN interface's; None when the hub is not on a LAN."""
    if configured:
        return configured.rstrip("/")
    if is_loopback_host(host):
        return None
    ip = address() if host in ANY_HOSTS else host
    if ip is None:
        return None
    shown = f"[{ip}]" if ":" in ip else ip
    return f"{'https' if tls else 'http'}://{shown}:{port}"
