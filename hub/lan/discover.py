"""``tiny-hub discover``: the hubs answering on this LAN, from their ``_tinyhub._tcp`` records.

Browses for a fixed time rather than stopping at the first answer: a household may run several
hubs, and the point of the command is to see all of them (and which one has which id).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from zeroconf import IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from hub.lan.advertise import SERVICE_TYPE

log = logging.getLogger(__name__)

RESOLVE_TIMEOUT_MS = 3000


@dataclass(frozen=True)
class FoundHub:
    name: str
    addresses: tuple[str, ...]
    port: int
    txt: dict[str, str]

    @property
    def lan_url(self) -> str:
        if self.txt.get("lanUrl"):
            return self.txt["lanUrl"]
        host = self.addresses[0] if self.addresses else "?"
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def tls(self) -> bool:
        return self.txt.get("tls") == "1"

    def line(self) -> str:
        security = f"tls fp {self.txt.get('fp') or '?'}" if self.tls else "tls off"
        return (
            f"{self.name}  {self.lan_url}  version {self.txt.get('version') or '?'}  "
            f"id {self.txt.get('id') or '?'}  {security}"
        )


def _text(properties: dict[bytes, bytes | None]) -> dict[str, str]:
    return {
        k.decode("utf-8", "replace"): (v or b"").decode("utf-8", "replace")
        for k, v in properties.items()
    }


async def discover(seconds: float = 3.0) -> list[FoundHub]:
    """Browse for ``seconds``, then resolve every hub seen (and not said goodbye to)."""
    aiozc = AsyncZeroconf(ip_version=IPVersion.V4Only)
    names: set[str] = set()

    def on_change(
        zeroconf: Zeroconf, service_type: str, name: str, state_change: ServiceStateChange
    ) -> None:
        if state_change is ServiceStateChange.Removed:
            names.discard(name)
        else:
            names.add(name)

    browser = AsyncServiceBrowser(aiozc.zeroconf, [SERVICE_TYPE], handlers=[on_change])
    try:
        await asyncio.sleep(seconds)
        found = []
        for name in sorted(names):
            info = AsyncServiceInfo(SERVICE_TYPE, name)
            if not await info.async_request(aiozc.zeroconf, RESOLVE_TIMEOUT_MS):
                log.info("%s did not resolve", name)
                continue
            found.append(
                FoundHub(
                    name=name.removesuffix("." + SERVICE_TYPE),
                    addresses=tuple(info.parsed_addresses()),
                    port=int(info.port or 0),
                    txt=_text(info.properties),
                )
            )
        return found
    finally:
        await browser.async_cancel()
        await aiozc.async_close()


async def discover_command(seconds: float) -> int:
    """Print one line per hub, or ``no hubs found``; exit 0 either way (none is an answer)."""
    try:
        hubs = await discover(seconds)
    except OSError as exc:
        print(f"no hubs found (mDNS unavailable on this machine: {exc})")
        return 0
    for found in hubs:
        print(found.line())
    if not hubs:
        print("no hubs found")
    return 0
