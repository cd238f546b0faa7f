"""The hub's mDNS advertisement, ``_tinyhub._tcp.local.``, so phones find it without typing an IP.

Modelled on Home Assistant's ``_home-assistant._tcp``: registered only once HTTP is up, with a
stable id in TXT so a phone recognises the same hub after an address change, the instance renamed
by zeroconf on a name collision, and TXT values over 230 bytes blanked rather than truncated (a
cut URL is worse than none). One AsyncZeroconf per hub: several mDNS stacks on one host fight over
port 5353. The address is checked every ``RECHECK_S`` and the records re-announced when it moves
(DHCP renewals, Wi-Fi roaming). Nothing here may stop the hub: without multicast it logs a warning.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from zeroconf import IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from hub.core.tasks import cancel_all
from hub.lan.address import LanInfo, lan_address, usable

log = logging.getLogger(__name__)

NAME_CHECK_MS = 1500  # how long to wait for another hub to answer to our name
NAME_ATTEMPTS = 9
SERVICE_TYPE = "_tinyhub._tcp.local."
TXT_VALUE_MAX = 230
LABEL_MAX = 63
RECHECK_S = 30.0


def hub_name(configured: str) -> str:
    """The instance name: ``lan.name`` or the hostname, cut to one DNS label (63 bytes)."""
    name = (configured or socket.gethostname() or "tiny-hub").strip().replace(".", "-")
    encoded = name.encode("utf-8")[:LABEL_MAX]
    return encoded.decode("utf-8", "ignore") or "tiny-hub"


def txt_record(
    *, hub_id: str, version: str, lan_url: str | None, fingerprint: str | None
) -> dict[str, str]:
    """The TXT fields; a value over 230 bytes becomes "" (Home Assistant's rule)."""
    fields = {
        "id": hub_id,
        "version": version,
        "lanUrl": lan_url or "",
        "tls": "1" if fingerprint else "0",
    }
    if fingerprint:
        fields["fp"] = fingerprint
    return {k: v if len(v.encode("utf-8")) <= TXT_VALUE_MAX else "" for k, v in fields.items()}


def advertised_addresses(lan_url: str | None, lan_ip: str | None) -> list[str]:
    """The A records: the lanUrl's host when it is an IP, else the LAN address, else loopback
    (so a hub on a machine with no LAN can still be found by something on the same machine)."""
    host = urlsplit(lan_url).hostname if lan_url else None
    if host and usable(host):
        return [host]
    return [lan_ip] if lan_ip else ["127.0.0.1"]


class Advertiser:
    """Registers the hub's service once, keeps it current, withdraws it on :meth:`stop`."""

    def __init__(
        self,
        *,
        name: str,
        port: int,
        hub_id: str,
        version: str,
        lan: LanInfo,
        compute_url: Callable[[], str | None],
        address: Callable[[], str | None] = lan_address,
        recheck_s: float = RECHECK_S,
    ) -> None:
        self._name, self._port, self._id, self._version = name, port, hub_id, version
        self._lan, self._compute_url, self._address = lan, compute_url, address
        self._recheck_s = recheck_s
        self._zc: AsyncZeroconf | None = None
        self._info: AsyncServiceInfo | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Register in the background: probing takes a second or more, and serving must not
        wait for it."""
        self._task = asyncio.create_task(self._run(), name="lan-advertise")

    def _build_info(self, name: str) -> AsyncServiceInfo:
        txt: Mapping[str, str] = txt_record(
            hub_id=self._id,
            version=self._version,
            lan_url=self._lan.url,
            fingerprint=self._lan.fingerprint,
        )
        return AsyncServiceInfo(
            SERVICE_TYPE,
            f"{name}.{SERVICE_TYPE}",
            port=self._port,
            properties=dict(txt),
            server=f"tinyhub-{self._id[:12]}.local.",
            parsed_addresses=advertised_addresses(self._lan.url, self._address()),
        )

    async def _free_name(self, zc: AsyncZeroconf) -> str:
        """The hub's name, or ``name-2``, ``name-3``... when another hub already answers to it.

        zeroconf's own probe (``allow_name_change``) also renames on a conflict, but it gives
        the other responder only ~250 ms per probe; a busy machine answers later than that and
        two hubs end up with one name. Asking for the name first, with a longer wait, catches
        those. A name held by this hub's own id (a restart) is kept.
        """
        name = self._name
        for suffix in range(2, NAME_ATTEMPTS + 2):
            held = await zc.async_get_service_info(
                SERVICE_TYPE, f"{name}.{SERVICE_TYPE}", timeout=NAME_CHECK_MS
            )
            if held is None or held.properties.get(b"id") == self._id.encode():
                return name
            name = f"{self._name}-{suffix}"
        return name

    async def _run(self) -> None:
        try:
            self._zc = AsyncZeroconf(ip_version=IPVersion.V4Only)
            self._info = self._build_info(await self._free_name(self._zc))
            await self._zc.async_register_service(self._info, allow_name_change=True)
        except Exception as exc:  # no multicast, no interfaces: the hub serves on regardless
            log.warning("not advertised on the LAN (mDNS unavailable: %s)", exc)
            await self._close()
            return
        self._lan.advertised_as = self._info.name.removesuffix("." + SERVICE_TYPE)
        log.info(
            "advertised on the LAN as %r (%s, lanUrl %s)",
            self._lan.advertised_as,
            SERVICE_TYPE,
            self._lan.url or "none",
        )
        while True:
            await asyncio.sleep(self._recheck_s)
            try:
                await self._recheck()
            except Exception:
                log.warning("could not re-announce the hub on the LAN", exc_info=True)

    async def _recheck(self) -> None:
        """Re-announce when the lanUrl or the LAN address moved."""
        assert self._zc is not None and self._info is not None
        url = self._compute_url()
        addresses = advertised_addresses(url, self._address())
        if url == self._lan.url and addresses == self._info.parsed_addresses():
            return
        log.info("LAN address changed (%s -> %s); re-announcing", self._lan.url, url)
        self._lan.url = url
        self._info = self._build_info(self._lan.advertised_as or self._name)
        await self._zc.async_update_service(self._info)

    async def stop(self) -> None:
        """Cancel the watcher and send goodbyes, so browsers drop the hub at once."""
        await cancel_all([self._task])
        await self._close()

    async def _close(self) -> None:
        zc, self._zc = self._zc, None
        if zc is None:
            return
        try:
            await zc.async_close()  # unregisters every service first (goodbye packets)
        except Exception:
            log.warning("closing mDNS failed", exc_info=True)
        self._lan.advertised_as = None
