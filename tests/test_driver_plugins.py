"""A driver package added through a ``tiny_hub.drivers`` entry point gets a device, its
settings, an event kind, a tool and a route, with no line of the hub changed.

The package is written to a temporary directory with a ``.dist-info`` beside it (METADATA and
entry_points.txt), the way pip installs one; putting that directory on ``sys.path`` is all it
takes for ``importlib.metadata`` to find the entry point, exactly as for an installed package.
Its device is a pseudo-terminal pinned in its own section of config.toml, ``[drivers.lamp]``.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from drivers.base import load_drivers
from drivers.flipper.usb import FlipperDriver
from fakes.ollama import FakeOllama
from harness.waits import until
from hub import contracts as c
from hub.agent.tools import mount_tools
from hub.agent.tools.context import ToolContext
from hub.api.server import RunningServer
from hub.cli import main
from hub.config import ConfigError, load_settings
from tests.conftest import StartHub, owner_headers
from tests.sse import tool_in_a_turn
from tests.test_import_graph import imported, modules
from tests.toolcall import result_text, use_tool

PACKAGE = "tiny_lamp_driver"

LAMP_MODULE = '''
"""A lamp on a serial line: the smallest driver package there is."""

import os

from aiohttp import web
from strands import tool

from drivers.base import Driver, DriverRoute, DriverStatus, Setting, UsbMatcher, turn_host


class LampDriver(Driver):
    name = "lamp"
    usb = (UsbMatcher(vid=0x1209, pid=0x1A4B),)
    capabilities = ("light",)
    settings = (
        Setting("port", "", "the serial line the lamp is on"),
        Setting("colour", "warm", "the colour it lights in", choices=("warm", "cold")),
    )
    event_kinds = ("lamp_lit",)

    async def start(self):
        if not os.path.exists(self.port):
            raise OSError(f"{self.port} is gone")
        self.audit("hello lamp")
        self.emit("lamp_lit", {"colour": self.config["colour"]})

    async def stop(self):
        pass

    def status(self):
        return DriverStatus("online", f"lamp on {self.port}")

    async def probe(self):
        return os.path.exists(self.port)

    @classmethod
    def agent_tools(cls):
        return (lamp_state,)

    @classmethod
    def http_routes(cls):
        return (
            DriverRoute("GET", "/api/drivers/lamp/state", lamp_route, "owner"),
            DriverRoute("GET", "/api/drivers/lamp/broken", broken_route, "user"),
            DriverRoute("GET", "/api/health", lamp_route, "anyone"),
            DriverRoute("GET", "/api/drivers/flipper/lamp", lamp_route, "anyone"),
            DriverRoute("GET", "/api/drivers/lamp/open", lamp_route, "everyone"),
        )


class NotTheFlipper(LampDriver):
    """A package's driver that claims a built-in driver's name: the built-in keeps it."""

    name = "flipper"


class BrokenDriver(Driver):
    """Raises where the hub asks for its tools and routes: the others must still mount."""

    name = "broken"
    capabilities = ()

    async def start(self):
        pass

    async def stop(self):
        pass

    def status(self):
        return DriverStatus("offline")

    async def probe(self):
        return False

    @classmethod
    def agent_tools(cls):
        raise RuntimeError("no tools today")

    @classmethod
    def http_routes(cls):
        raise RuntimeError("no routes today")


@tool(name="lamp_state", context=True)
async def lamp_state(tool_context) -> dict:
    """Whether the lamp is attached to this hub, and where."""
    host = turn_host(tool_context)
    refused = host.owner_refusal("the lamp")
    if refused is not None:
        return refused
    lamps = host.online("lamp")
    if not lamps:
        return host.failed("no lamp is attached")
    host.audit("lamp", lamps[0].device_id, "state")
    return host.ok(f"The lamp is on {lamps[0].port}.", port=lamps[0].port)


async def lamp_route(request, host):
    lamps = host.online("lamp")
    if not lamps:
        raise web.HTTPServiceUnavailable(reason="no lamp is attached")
    return web.json_response({"port": lamps[0].port, "owner": host.owner_refusal("x") is None})


async def broken_route(request, host):
    raise ValueError("the lamp driver has a bug")
'''

ENTRY_POINTS = f"""
[tiny_hub.drivers]
lamp = {PACKAGE}:LampDriver
a_flipper = {PACKAGE}:NotTheFlipper
broken = {PACKAGE}:BrokenDriver
"""


@pytest.fixture
def lamp_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The package "installed": its module and its .dist-info in a directory on sys.path."""
    site = tmp_path / "site"
    dist_info = site / "tiny_lamp_driver-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (site / f"{PACKAGE}.py").write_text(textwrap.dedent(LAMP_MODULE), encoding="utf-8")
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tiny-lamp-driver\nVersion: 0.1\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop(PACKAGE, None)


@pytest.fixture
def lamp_port() -> Iterator[str]:
    """The lamp's serial line: a pseudo-terminal (its far end held open for the test)."""
    controller, device = os.openpty()
    yield os.ttyname(device)
    os.close(device)
    os.close(controller)


LAMP_CONFIG = """# the lamp by the window
[drivers.lamp]
port = "{port}"
colour = "cold"
"""


@pytest.fixture
def lamp_config(home: Path, lamp_port: str) -> Path:
    """The lamp's section of config.toml, as a person writes it."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.toml"
    config.write_text(LAMP_CONFIG.format(port=lamp_port), encoding="utf-8")
    return config


@pytest.fixture
async def hub(
    lamp_package: Path, lamp_config: Path, start_hub: StartHub, fake_ollama: FakeOllama
) -> RunningServer:
    server = await start_hub(ollama_host=fake_ollama.url)
    await until(lambda: lamp_status(server) == "online", what="the lamp is online")
    return server


def lamp_status(server: RunningServer) -> str:
    records = [r for r in server.hub.drivers.records() if r["driver"] == "lamp"]
    return str(records[0]["status"]) if records else "absent"


async def get(
    server: RunningServer, path: str, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(server.url + path, headers=headers) as response,
    ):
        return response.status, await response.json(content_type=None)


def test_the_entry_point_is_found(lamp_package: Path) -> None:
    names = [cls.name for cls in load_drivers()]
    assert "lamp" in names and "flipper" in names


def test_a_package_cannot_take_a_built_in_drivers_name(lamp_package: Path) -> None:
    (flipper,) = [cls for cls in load_drivers() if cls.name == "flipper"]
    assert flipper is FlipperDriver


async def test_its_device_is_in_api_drivers(hub: RunningServer, lamp_port: str) -> None:
    status, body = await get(hub, "/api/drivers", owner_headers(hub))
    assert status == 200
    (record,) = [r for r in body["drivers"] if r["driver"] == "lamp"]
    assert record["status"] == "online" and record["capabilities"] == ["light"]
    assert lamp_port in record["detail"]
    assert "light" in body["capabilities"]


def test_its_settings_are_read_checked_and_shown(
    lamp_package: Path,
    lamp_config: Path,
    lamp_port: str,
    home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = load_settings(home=home, environ={})
    assert settings.drivers["lamp"] == {"enabled": True, "port": lamp_port, "colour": "cold"}
    assert main(["config", "--home", str(home)]) == 0
    (row,) = [
        line for line in capsys.readouterr().out.splitlines() if "drivers.lamp.colour" in line
    ]
    assert "TINY_HUB_LAMP_COLOUR" in row and "'cold'" in row and "config.toml:4" in row
    assert "the colour it lights in" in row
    lamp_config.write_text('[drivers.lamp]\ncolour = "purple"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line 2, key 'drivers.lamp.colour'.*one of: warm, cold"):
        load_settings(home=home, environ={})
    lamp_config.write_text("[drivers.lamp]\nbrightness = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown setting \(keys of \[drivers.lamp\]: enabled"):
        load_settings(home=home, environ={})


async def test_its_own_event_kind_reaches_api_events(hub: RunningServer, lamp_port: str) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{hub.url}/api/events", headers=owner_headers(hub)) as response,
    ):
        assert response.status == 200
        async for line in response.content:
            if line.startswith(b"data: "):
                event = json.loads(line[len(b"data: ") :])
                if event["kind"] == "lamp_lit":
                    break
    assert event["detail"] == {"colour": "cold"}
    assert event["deviceId"] == f"lamp:port:{lamp_port}"


async def test_its_tool_runs_in_a_turn_and_is_audited(
    hub: RunningServer, fake_ollama: FakeOllama, lamp_port: str
) -> None:
    result, _ = await tool_in_a_turn(hub, fake_ollama, "lamp_state")
    assert result["status"] == "success", result
    assert result["content"][1]["json"] == {"port": lamp_port}
    _, audit = await get(hub, "/api/drivers/audit", owner_headers(hub))
    commands = [(c["driver"], c["command"]) for c in audit["commands"]]
    assert ("lamp", "state") in commands and ("lamp", "hello lamp") in commands


async def test_its_tool_is_mounted_after_the_built_in_drivers_tools(hub: RunningServer) -> None:
    tiny = hub.hub.tinys.get("tiny")
    assert tiny is not None
    names = mount_tools(ToolContext(hub=hub.hub, caller=hub.hub.owner, tiny=tiny)).names
    assert names.index("nicla_voice_transcript") < names.index("lamp_state")
    assert names.index("lamp_state") < names.index("camera_photo")


async def test_its_tool_follows_the_owner_rule(hub: RunningServer) -> None:
    tiny = hub.hub.tinys.get("tiny")
    assert tiny is not None
    (lamp,) = [
        t
        for t in mount_tools(ToolContext(hub.hub, None, tiny)).tools
        if t.tool_name == "lamp_state"
    ]
    anonymous = await use_tool(hub, lamp, None)
    assert anonymous["status"] == "error" and result_text(anonymous) == c.LOGIN_REQUIRED
    member = await use_tool(hub, lamp, hub.hub.identity.add_user("member"))
    assert result_text(member) == "only the owner of this hub can use the lamp"


async def test_its_route_answers_with_its_declared_access(
    hub: RunningServer, lamp_port: str
) -> None:
    assert await get(hub, "/api/drivers/lamp/state", owner_headers(hub)) == (
        200,
        {"port": lamp_port, "owner": True},
    )
    status, body = await get(hub, "/api/drivers/lamp/state")
    assert status == 401 and "sign in required" in body["error"]
    token = hub.hub.identity.issue_token(hub.hub.identity.add_user("member"), "plugin test")
    status, body = await get(hub, "/api/drivers/lamp/state", {"Authorization": f"Bearer {token}"})
    assert status == 403 and "owner" in body["error"]


async def test_a_route_that_raises_is_a_clear_502_not_a_500(hub: RunningServer) -> None:
    status, body = await get(hub, "/api/drivers/lamp/broken", owner_headers(hub))
    assert status == 502 and "lamp driver failed" in body["error"]


async def test_routes_it_may_not_have_are_not_mounted(hub: RunningServer) -> None:
    status, body = await get(hub, "/api/health")
    assert status == 200 and "port" not in body, "a driver replaced the hub's own route"
    assert (await get(hub, "/api/drivers/flipper/lamp"))[0] == 404
    assert (await get(hub, "/api/drivers/lamp/open", owner_headers(hub)))[0] == 404


async def test_a_driver_whose_hooks_raise_leaves_the_others_mounted(hub: RunningServer) -> None:
    tiny = hub.hub.tinys.get("tiny")
    assert tiny is not None
    names = mount_tools(ToolContext(hub=hub.hub, caller=hub.hub.owner, tiny=tiny)).names
    assert "lamp_state" in names and "flipper_status" in names
    assert "broken" in [cls.name for cls in hub.hub.drivers.catalog.installed]


def test_the_hub_imports_no_concrete_driver() -> None:
    """hub/ reaches the drivers through drivers.base and the manager, never by name: no hub
    module imports a module of a driver family (``drivers.flipper*``, ``drivers.nicla_voice*``)."""
    families = tuple(f"drivers.{cls.name}" for cls in load_drivers())
    assert "drivers.flipper" in families
    named = {
        name: sorted(t for t in imported(path, name) if t.startswith(families))
        for name, path in modules("hub").items()
    }
    assert {name: found for name, found in named.items() if found} == {}


DRIVERS = Path(__file__).resolve().parent.parent / "drivers"


def family_packages() -> list[str]:
    """The device families this repository ships: each a package of ``drivers/`` (the
    transports, which every family shares, are none)."""
    return sorted(
        p.parent.name for p in DRIVERS.glob("*/__init__.py") if p.parent.name != "transports"
    )


def family_names() -> list[str]:
    """What names a shipped family, as the hub would write it: each family package's name and
    each of its drivers' names, with ``_`` as written, as a space and as a hyphen ("nicla vision",
    "nicla-vision"). The machine's own camera and microphone go by what they do, which the hub
    does name (capabilities, settings sections), so their names are not among these."""
    shipped = [cls for cls in load_drivers() if cls.__module__.split(".")[0] == "drivers"]
    names = {cls.name for cls in shipped if not cls.machine}
    names |= {cls.__module__.split(".")[1] for cls in shipped if not cls.machine}
    return sorted({n.replace("_", joint) for n in names for joint in ("_", " ", "-")})


def naming(root: Path, names: Sequence[str], families: Sequence[str]) -> dict[str, list[str]]:
    """Each module under ``root`` that names one of ``names`` (in any case, in code, strings,
    comments or docstrings) or imports a package of ``families``, with what it names."""
    found: dict[str, list[str]] = {}
    packages = tuple(f"drivers.{family}" for family in families)
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8").casefold()
        said = [name for name in names if name.casefold() in text]
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        said += sorted(t for t in imported(path, name) if t.startswith(packages))
        if said:
            found[str(path.relative_to(root.parent))] = said
    return found


def test_the_check_finds_a_family_named(tmp_path: Path) -> None:
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "ok.py").write_text('"""Any board a driver runs."""\n')
    (tmp_path / "hub" / "said.py").write_text('"""The Nicla Vision\'s camera."""\n')
    (tmp_path / "hub" / "used.py").write_text("def f():\n    from drivers.machine import tools\n")
    assert naming(tmp_path / "hub", ["nicla vision"], ["machine"]) == {
        "hub/said.py": ["nicla vision"],
        "hub/used.py": ["drivers.machine", "drivers.machine.tools"],
    }


def test_the_hub_names_no_device_family() -> None:
    """No module of hub/ names a family this repository ships or imports its package: a family
    (its settings, events, tools, routes and captures) reaches the hub only through
    ``drivers.base`` and the driver catalog, as a package someone else writes does."""
    families, names = family_packages(), family_names()
    assert {"flipper", "nicla_vision", "nicla_voice", "machine"} <= set(families)
    assert {"flipper", "flipper_ble", "nicla vision", "nicla-voice"} <= set(names)
    assert naming(DRIVERS.parent / "hub", names, families) == {}
