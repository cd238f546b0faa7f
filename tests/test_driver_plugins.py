"""A driver package added through a ``tiny_hub.drivers`` entry point gets a device, a tool and a
route, with no line of the hub changed.

The package is written to a temporary directory with a ``.dist-info`` beside it (METADATA and
entry_points.txt), the way pip installs one; putting that directory on ``sys.path`` is all it
takes for ``importlib.metadata`` to find the entry point, exactly as for an installed package.
Its device is a pseudo-terminal pinned in the driver's settings.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
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

from drivers.base import Driver, DriverRoute, DriverStatus, UsbMatcher, turn_host


class LampDriver(Driver):
    name = "lamp"
    usb = (UsbMatcher(vid=0x1209, pid=0x1A4B),)
    capabilities = ("light",)

    async def start(self):
        if not os.path.exists(self.port):
            raise OSError(f"{self.port} is gone")
        self.audit("hello lamp")

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


@pytest.fixture
async def hub(
    lamp_package: Path, lamp_port: str, start_hub: StartHub, fake_ollama: FakeOllama
) -> RunningServer:
    server = await start_hub(
        ollama_host=fake_ollama.url, hardware={"drivers": {"lamp": {"port": lamp_port}}}
    )
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
