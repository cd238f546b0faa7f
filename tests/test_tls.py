"""lan.tls: HTTPS with a self-signed certificate a phone pins by fingerprint; plain HTTP stays on
loopback for the local TUI."""

from __future__ import annotations

import datetime
import stat
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from hub.lan.tls import ensure_certificate
from tests.conftest import StartHub, owner_headers


async def test_pinned_fingerprint_handshake(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(lan_tls=True, lan_name="Den")
    fp = server.hub.lan.fingerprint
    assert fp is not None and len(fp) == 64
    pinned = aiohttp.Fingerprint(bytes.fromhex(fp))
    async with http.get(
        f"https://127.0.0.1:{server.port}/api/health", ssl=pinned, headers=owner_headers(server)
    ) as response:
        assert response.status == 200
        health = await response.json()
    assert health["loopbackUrl"] == server.url and server.url.startswith("http://127.0.0.1:")

    wrong = aiohttp.Fingerprint(bytes.fromhex("00" * 32))
    with pytest.raises(aiohttp.ServerFingerprintMismatch):
        async with http.get(f"https://127.0.0.1:{server.port}/api/health", ssl=wrong):
            pass

    async with http.get(f"{server.url}/api/health") as response:  # the TUI's plain loopback
        assert response.status == 200


async def test_certificate_is_made_once_and_kept(
    start_hub: StartHub, http: aiohttp.ClientSession, home: Path
) -> None:
    first = await start_hub(lan_tls=True, lan_name="Den")
    again = await start_hub(lan_tls=True, lan_name="Den")
    assert first.hub.lan.fingerprint == again.hub.lan.fingerprint
    key = home / "tls" / "key.pem"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


async def test_without_tls_there_is_no_loopback_listener(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub()
    async with http.get(f"{server.url}/api/health", headers=owner_headers(server)) as response:
        assert (await response.json())["loopbackUrl"] is None
    assert server.hub.lan.fingerprint is None


def test_certificate_names_and_validity(tmp_path: Path) -> None:
    made = ensure_certificate(tmp_path, "Kitchen hub", "192.168.1.20", "kitchen-pc")
    cert = x509.load_pem_x509_certificate(made.cert_path.read_bytes())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "Kitchen hub"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "kitchen-pc" in san.get_values_for_type(x509.DNSName)
    assert str(san.get_values_for_type(x509.IPAddress)[0]) == "192.168.1.20"
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime >= datetime.timedelta(days=3650)
    assert ensure_certificate(tmp_path, "other", None, "x").fingerprint == made.fingerprint


async def test_a_client_on_this_machine_pins_the_hubs_own_certificate(
    start_hub: StartHub, home: Path
) -> None:
    """What `tiny-hub tui` and `tiny-hub chat` do for a local hub with lan.tls: https to the
    configured port, trusted by the fingerprint read from the data dir — and only by it."""
    from hub.cli.common import local_url, pin
    from hub.client.http import HubClient, HubError
    from tests.conftest import settings_for

    server = await start_hub(lan_tls=True)
    settings = settings_for(home, lan_tls=True, port=server.port)
    url = local_url(settings, None)
    assert url == f"https://127.0.0.1:{server.port}"
    pinned = HubClient(url, pin=pin(settings, url))
    assert (await pinned.health())["ok"] is True
    with pytest.raises(HubError):  # no pin: a self-signed certificate is not trusted
        await HubClient(url).health()
