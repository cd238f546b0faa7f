"""The hub on the LAN: lanUrl, its mDNS advertisement and ``tiny-hub discover``.

The mDNS tests are real: a network namespace made for the test (loopback with multicast on, a
veth pair standing in for the Wi-Fi card, a docker0 bridge that must never be the lanUrl), the
real ``tiny-hub serve`` and ``tiny-hub discover`` processes inside it. Nothing reaches the
machine's own network. The rules underneath (TXT building, blanking, address choice) are unit
tests that run everywhere.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hub.api.listen_socket import bind_socket
from hub.api.server import RunningServer, start_server
from hub.cli.serve import where_to_reach
from hub.config import ConfigError, load_settings
from hub.lan import advertise
from hub.lan.address import LanInfo, is_virtual, lan_address, lan_url
from hub.lan.advertise import (
    SERVICE_TYPE,
    Advertiser,
    advertised_addresses,
    hub_name,
    txt_record,
)
from hub.lan.hub_id import hub_id
from hub.lan.tls import ensure_certificate
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for

SCRIPT = Path(sys.executable).with_name("tiny-hub")
PYTHON = Path(sys.executable)
LAN_IP = "10.77.0.2"
LISTEN_ANYWHERE = ("--host", "0.0.0.0", "--port", "0")

# --- lanUrl selection -------------------------------------------------------------------------

MACHINE = [("lo", "127.0.0.1"), ("docker0", "172.17.0.1"), ("eth0", "192.168.1.20")]


def test_lan_address_takes_the_routed_address() -> None:
    assert lan_address(lambda: MACHINE, lambda: "192.168.1.20") == "192.168.1.20"


@pytest.mark.parametrize("routed", [None, "0.0.0.0", "127.0.0.1", "172.17.0.1", "169.254.3.4"])
def test_lan_address_falls_back_to_a_real_interface(routed: str | None) -> None:
    """A route through loopback, nowhere, link-local or a docker bridge is not the LAN."""
    assert lan_address(lambda: MACHINE, lambda: routed) == "192.168.1.20"


def test_no_lan_when_only_loopback_and_bridges() -> None:
    bridges = [("lo", "127.0.0.1"), ("docker0", "172.17.0.1"), ("br-1a2b", "172.18.0.1")]
    bridges.append(("veth9f", "172.19.0.5"))
    assert lan_address(lambda: bridges, lambda: "172.18.0.1") is None


def test_private_address_preferred_over_public_one() -> None:
    machine = [("wan0", "81.2.69.142"), ("wlan0", "192.168.1.9")]
    assert lan_address(lambda: machine, lambda: None) == "192.168.1.9"


@pytest.mark.parametrize("name", ["docker0", "br-5f1e2a", "veth12ab", "virbr0"])
def test_container_interfaces_are_virtual(name: str) -> None:
    assert is_virtual(name)
    assert not is_virtual("eth0") and not is_virtual("wlp2s0")


def test_lan_url_rules() -> None:
    def found() -> str:
        return "192.168.1.20"

    assert lan_url("", "0.0.0.0", 8765, address=found) == "http://192.168.1.20:8765"
    assert lan_url("", "0.0.0.0", 8765, tls=True, address=found) == "https://192.168.1.20:8765"
    assert lan_url("", "192.168.1.30", 80, address=found) == "http://192.168.1.30:80"
    assert lan_url("", "127.0.0.1", 8765, address=found) is None  # loopback only: no LAN
    assert lan_url("", "0.0.0.0", 8765, address=lambda: None) is None
    configured = "https://hub.home.arpa:9000/"
    assert lan_url(configured, "127.0.0.1", 1, address=found) == "https://hub.home.arpa:9000"


def test_lan_url_setting_must_be_a_url(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"TINY_HUB_LAN_URL.*not an http"):
        load_settings(home=home, environ={"TINY_HUB_LAN_URL": "hub.local:8765"})
    settings = load_settings(home=home, environ={"TINY_HUB_LAN_ADVERTISE": "false"})
    assert settings.lan_advertise is False and settings.lan_tls is False


# --- TXT record, names, id --------------------------------------------------------------------


def test_txt_record_fields() -> None:
    txt = txt_record(
        hub_id="a" * 32, version="0.1.0", lan_url="http://10.0.0.2:1", fingerprint=None
    )
    assert txt == {"id": "a" * 32, "version": "0.1.0", "lanUrl": "http://10.0.0.2:1", "tls": "0"}
    with_tls = txt_record(hub_id="b" * 32, version="1", lan_url=None, fingerprint="ab" * 32)
    assert with_tls["tls"] == "1" and with_tls["fp"] == "ab" * 32 and with_tls["lanUrl"] == ""


def test_txt_values_over_230_bytes_are_blanked_not_cut() -> None:
    exactly = "https://" + "h" * (230 - len("https://"))
    over = exactly + "x"
    assert txt_record(hub_id="i", version="v", lan_url=exactly, fingerprint=None)["lanUrl"] == (
        exactly
    )
    assert txt_record(hub_id="i", version="v", lan_url=over, fingerprint=None)["lanUrl"] == ""
    multibyte = "é" * 116  # 232 bytes, 116 characters: the limit is in bytes
    assert (
        txt_record(hub_id="i", version=multibyte, lan_url=None, fingerprint=None)["version"] == ""
    )


def test_hub_id_is_made_once_and_kept(tmp_path: Path) -> None:
    first = hub_id(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{32}", first)
    assert hub_id(tmp_path) == first
    assert (tmp_path / "hub.id").read_text().strip() == first


def test_hub_name_defaults_to_hostname_and_fits_one_label(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(advertise.socket, "gethostname", lambda: "den-pc")
    assert hub_name("") == "den-pc"
    assert hub_name("Kitchen hub") == "Kitchen hub"
    assert hub_name("a.b") == "a-b"  # a dot would split the DNS label
    assert len(hub_name("ü" * 40).encode()) <= 63


def test_advertised_addresses() -> None:
    assert advertised_addresses("http://10.1.2.3:80", "192.168.1.2") == ["10.1.2.3"]
    assert advertised_addresses("https://hub.home.arpa", "192.168.1.2") == ["192.168.1.2"]
    assert advertised_addresses(None, None) == ["127.0.0.1"]


async def test_no_multicast_is_a_warning_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_mdns(**_: Any) -> None:
        raise OSError(19, "No such device")

    monkeypatch.setattr(advertise, "AsyncZeroconf", no_mdns)
    lan = LanInfo(url="http://10.0.0.2:1")
    advertiser = Advertiser(
        name="x", port=1, hub_id="c" * 32, version="0", lan=lan, compute_url=lambda: lan.url
    )
    with caplog.at_level(logging.WARNING, logger="hub.lan.advertise"):
        advertiser.start()
        for _ in range(100):
            if caplog.records:
                break
            await asyncio.sleep(0.01)
        await advertiser.stop()
    assert "not advertised on the LAN" in caplog.text
    assert lan.advertised_as is None


async def test_health_shows_lan_url(start_hub: StartHub, http: aiohttp.ClientSession) -> None:
    """On loopback only there is no LAN (null) and no advertisement; lan.url is shown as set."""
    server: RunningServer = await start_hub()
    async with http.get(f"{server.url}/api/health", headers=owner_headers(server)) as response:
        health = await response.json()
    assert health["lanUrl"] is None
    assert health["id"] == hub_id(server.hub.settings.home), "the id its mDNS record carries"
    assert server.parts.advertiser is None
    named = await start_hub(lan_url="http://hub.home.arpa:8765")
    async with http.get(f"{named.url}/api/health", headers=owner_headers(named)) as response:
        assert (await response.json())["lanUrl"] == "http://hub.home.arpa:8765"
    assert named.parts.advertiser is None  # still loopback-only


# --- for real, in a network namespace ---------------------------------------------------------


def _ip(*args: str, ns: str | None = None) -> subprocess.CompletedProcess[str]:
    prefix = ["ip", "netns", "exec", ns] if ns else []
    return subprocess.run([*prefix, "ip", *args], capture_output=True, text=True, timeout=30)


WITHOUT_NS = (
    "without one, the address choice, TXT record, name and no-multicast tests above cover "
    "the hub's side; only the multicast round trip needs the namespace"
)


@pytest.fixture
def netns() -> Iterator[str]:
    """A namespace with loopback (multicast on, 224.0.0.0/4 routed to it), a veth pair as the
    LAN card (10.77.0.2/24) and a docker0 bridge (172.17.0.1/16) that must never be chosen."""
    if shutil.which("ip") is None:
        pytest.skip(f"needs the `ip` command (iproute2) for a network namespace; {WITHOUT_NS}")
    if os.geteuid() != 0:
        pytest.skip(f"needs root to create a network namespace (ip netns add); {WITHOUT_NS}")
    name = f"tinyhub-{secrets.token_hex(4)}"
    made = _ip("netns", "add", name)
    if made.returncode != 0:
        pytest.skip(f"cannot create a network namespace: {made.stderr.strip()}; {WITHOUT_NS}")
    try:
        for step in (
            ("link", "set", "lo", "up"),
            ("link", "set", "lo", "multicast", "on"),
            ("link", "add", "lan0", "type", "veth", "peer", "name", "lan1"),
            ("addr", "add", f"{LAN_IP}/24", "dev", "lan0"),
            ("link", "set", "lan0", "up"),
            ("link", "set", "lan1", "up"),
            ("link", "add", "docker0", "type", "bridge"),
            ("addr", "add", "172.17.0.1/16", "dev", "docker0"),
            ("link", "set", "docker0", "up"),
            ("route", "add", "224.0.0.0/4", "dev", "lo"),
        ):
            done = _ip(*step, ns=name)
            if done.returncode != 0:
                failed = f"ip {' '.join(step)}: {done.stderr.strip()}"
                pytest.skip(f"cannot set up the namespace ({failed}); {WITHOUT_NS}")
        yield name
    finally:
        _ip("netns", "delete", name)


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINY_HUB_", "OLLAMA_"))}
    env.update(
        TINY_HUB_HOME=str(home),
        OLLAMA_HOST="http://127.0.0.1:9",
        TINY_HUB_CAMERA="",
        TINY_HUB_MICROPHONE="off",
        TINY_HUB_EMBEDDED_MODEL="smollm2",
        **extra,
    )
    return env


class NsHub:
    """``tiny-hub serve --host 0.0.0.0 --port 0`` inside the namespace."""

    def __init__(self, ns: str, home: Path, name: str, **env: str) -> None:
        self.home = home
        self.log = home.parent / f"{home.name}.stderr"
        home.mkdir(parents=True)
        with self.log.open("w") as stderr:
            self.process = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    str(SCRIPT),
                    "serve",
                    "--host",
                    "0.0.0.0",
                    "--port",
                    "0",
                ],
                env=_env(home, TINY_HUB_LAN_NAME=name, **env),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                stdin=subprocess.DEVNULL,
            )
        assert self.process.stdout is not None
        self.port, self.lan_url = 0, ""
        for line in self.process.stdout:
            if match := re.search(r"serving on https?://127\.0\.0\.1:(\d+)", line):
                self.port = int(match.group(1))
            if line.startswith("lanUrl: "):
                self.lan_url = line.removeprefix("lanUrl: ").strip()
                break
        assert self.port and self.lan_url, self.log.read_text()

    def advertised_as(self) -> str | None:
        """The name the hub logged once registered (probing done), polled from its log."""
        for _ in range(600):
            if found := re.search(r"advertised on the LAN as '([^']+)'", self.log.read_text()):
                return found.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"never advertised: {self.log.read_text()}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=60)


RESOLVE = """
import asyncio, json, sys
from zeroconf import IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

async def main():
    zc = AsyncZeroconf(ip_version=IPVersion.V4Only)
    info = AsyncServiceInfo(sys.argv[1], sys.argv[2])
    ok = await info.async_request(zc.zeroconf, 10000)
    txt = {k.decode(): (v or b"").decode() for k, v in info.properties.items()} if ok else {}
    print(json.dumps({"ok": ok, "port": info.port, "addresses": info.parsed_addresses(),
                      "txt": txt}))
    await zc.async_close()

asyncio.run(main())
"""

HEALTH = """
import json, sys, urllib.request
print(urllib.request.urlopen(sys.argv[1] + "/api/health", timeout=30).read().decode())
"""


def _in_ns(ns: str, *argv: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["ip", "netns", "exec", ns, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_advertised_resolved_discovered_and_withdrawn(netns: str, tmp_path: Path) -> None:
    kitchen = NsHub(netns, tmp_path / "kitchen", "Kitchen")
    twin: NsHub | None = None
    try:
        assert kitchen.lan_url == f"http://{LAN_IP}:{kitchen.port}"  # not 127.0.0.1, not docker0
        assert kitchen.advertised_as() == "Kitchen"
        resolved = json.loads(
            _in_ns(netns, str(PYTHON), "-c", RESOLVE, SERVICE_TYPE, f"Kitchen.{SERVICE_TYPE}")
        )
        the_id = (tmp_path / "kitchen" / "hub.id").read_text().strip()
        assert resolved["ok"] is True
        assert resolved["port"] == kitchen.port
        assert resolved["addresses"] == [LAN_IP]
        assert resolved["txt"] == {
            "id": the_id,
            "version": _in_ns(netns, str(SCRIPT), "version").split()[1],
            "lanUrl": kitchen.lan_url,
            "tls": "0",
        }
        health = json.loads(_in_ns(netns, str(PYTHON), "-c", HEALTH, kitchen.lan_url))
        # Asked from the LAN without a token: the hub answers, and keeps its addresses to itself.
        assert health["ok"] is True and "lanUrl" not in health

        twin = NsHub(netns, tmp_path / "twin", "Kitchen")  # same name: renamed, not clashing
        renamed = twin.advertised_as()
        assert renamed is not None and renamed != "Kitchen"

        listed = _in_ns(netns, str(SCRIPT), "discover", "--seconds", "3", env=_env(tmp_path))
        lines = listed.splitlines()
        assert len(lines) == 2, listed
        kitchen_line = next(line for line in lines if line.startswith("Kitchen  "))
        assert kitchen.lan_url in kitchen_line and f"id {the_id}" in kitchen_line
        assert "tls off" in kitchen_line and "version " in kitchen_line
        assert any(line.startswith(f"{renamed}  ") for line in lines)
    finally:
        assert kitchen.stop() == 0
        if twin is not None:
            assert twin.stop() == 0
    after = _in_ns(netns, str(SCRIPT), "discover", "--seconds", "2", env=_env(tmp_path))
    assert after.strip() == "no hubs found"


def test_hub_on_loopback_only_is_not_advertised(netns: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    process = subprocess.Popen(
        ["ip", "netns", "exec", netns, str(SCRIPT), "serve", "--host", "127.0.0.1", "--port", "0"],
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if line.startswith("lanUrl: "):
                assert line.startswith("lanUrl: none")
                break
        listed = _in_ns(netns, str(SCRIPT), "discover", "--seconds", "2", env=_env(tmp_path))
        assert listed.strip() == "no hubs found"
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert "not advertising on the LAN: listening on 127.0.0.1 only" in err


def test_tls_hub_advertises_https_and_its_fingerprint(netns: str, tmp_path: Path) -> None:
    hub = NsHub(netns, tmp_path / "den", "Den", TINY_HUB_LAN_TLS="true")
    try:
        assert hub.lan_url == f"https://{LAN_IP}:{hub.port}"
        assert hub.advertised_as() == "Den"
        resolved = json.loads(
            _in_ns(netns, str(PYTHON), "-c", RESOLVE, SERVICE_TYPE, f"Den.{SERVICE_TYPE}")
        )
        fingerprint = ensure_certificate(tmp_path / "den", "Den", None, "x").fingerprint
        assert resolved["txt"]["tls"] == "1" and resolved["txt"]["fp"] == fingerprint
        assert resolved["txt"]["lanUrl"] == hub.lan_url
        listed = _in_ns(netns, str(SCRIPT), "discover", env=_env(tmp_path))
        assert f"tls fp {fingerprint}" in listed and hub.lan_url in listed
    finally:
        assert hub.stop() == 0


@pytest.mark.parametrize("host", ["::", "0.0.0.0", "127.0.0.1"])
async def test_the_urls_serve_prints_for_this_machine_answer(home: Path, host: str) -> None:
    """``serve --host ::`` listens on IPv6 and IPv4 alike (phones dial an IPv4 LAN address),
    and the URLs it prints for this machine are ones a client can dial. Only loopback URLs are
    dialled here: a test reaches nothing but this machine's loopback."""
    hub = Hub.open(settings_for(home, host=host, lan_advertise=False))
    server = await start_server(hub, host, 0, bind_socket(host, 0))
    try:
        said = "\n".join([server.main_url, *where_to_reach(server)])
        printed = set(re.findall(r"http://(?:127\.0\.0\.1|\[::1\]):\d+", said))
        assert printed, said
        if host != "127.0.0.1":
            printed.add(f"http://127.0.0.1:{server.port}")  # the LAN's IPv4, on loopback
        async with aiohttp.ClientSession() as http:
            for url in printed:
                async with http.get(f"{url}/api/health") as response:
                    assert response.status == 200, url
    finally:
        await server.stop()
        hub.close()
