"""``tiny-hub cloud join|status|adopt`` as a person runs them: a real process against a real hub.

A hub started in this test process plays the cloud (it serves the dial-in protocol of
docs/protocol.md); the CLI runs as a subprocess with its own data dir. The subprocess runs in a
thread so the in-process cloud keeps answering while the test waits for it.
"""

from __future__ import annotations

import asyncio
import stat
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hub.api.server import RunningServer
from hub.cloud.account import CloudAccountError, load_token, save_token, write_cloud_config
from hub.config import load_settings
from tests.conftest import StartHub, owner_headers
from tests.daemon import enroll, send
from tests.test_cli import SCRIPT, cli_env


async def cli(
    args: list[str], env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )

    return await asyncio.to_thread(run)


@pytest.fixture
def hub_home(tmp_path: Path) -> Path:
    """The joining hub's data dir (``home`` is the cloud's)."""
    return tmp_path / "joining-hub"


async def listed(http: aiohttp.ClientSession, cloud: RunningServer, device_id: str) -> Any:
    status, answer = await send(
        http, "GET", f"{cloud.url}/api/devices", headers=owner_headers(cloud)
    )
    assert status == 200, answer
    return next(d for d in answer["devices"] if d["id"] == device_id)


def join_args(app: str, device_id: str, token_path: Path) -> list[str]:
    return [
        "cloud",
        "join",
        "--app",
        app,
        "--device-id",
        device_id,
        "--token-file",
        str(token_path),
    ]


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def token_file(tmp_path: Path, token: str, name: str = "token.txt") -> Path:
    path = tmp_path / name
    path.write_text(token + "\n")
    return path


def assert_saved(home: Path, url: str, device_id: str, token: str) -> None:
    token_path = home / "cloud.token"
    assert stat.S_IMODE(token_path.stat().st_mode) == 0o600
    assert token_path.read_text().strip() == token
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["cloud"] == {"url": url, "device_id": device_id}


def assert_nothing_saved(home: Path, config_before: str | None) -> None:
    assert not (home / "cloud.token").exists()
    config = home / "config.toml"
    assert (config.read_text() if config.exists() else None) == config_before


async def test_join_with_flags_verifies_saves_and_keeps_the_config(
    start_hub: StartHub,
    http: aiohttp.ClientSession,
    hub_home: Path,
    closed_port: int,
    tmp_path: Path,
) -> None:
    cloud = await start_hub()
    device = await enroll(http, cloud, name="kitchen-hub")
    device_id, token = device["device_id"], device["device_token"]
    assert (await listed(http, cloud, device_id))["online"] is False
    write_config(
        hub_home,
        '# my hub\n[server]\nport = 9999  # not the default\n\n[log]\nlevel = "debug"\n',
    )

    result = await cli(
        join_args(cloud.url + "/", device_id, token_file(tmp_path, token)),
        cli_env(hub_home, closed_port),
    )

    assert result.returncode == 0, result.stderr
    assert token not in result.stdout + result.stderr
    assert_saved(hub_home, cloud.url, device_id, token)
    text = (hub_home / "config.toml").read_text()
    assert text.startswith("# my hub\n[server]\nport = 9999  # not the default\n")
    settings = load_settings(home=hub_home, environ={})
    assert (settings.port, settings.log_level) == (9999, "debug")
    assert (settings.cloud_url, settings.cloud_device_id) == (cloud.url, device_id)
    seen = await listed(http, cloud, device_id)
    assert seen["online"] is True
    assert seen["capabilities"] == ["shell", "screenshot"]  # the verifying heartbeat kept them


async def test_join_with_a_wrong_token_is_one_line_and_saves_nothing(
    start_hub: StartHub,
    http: aiohttp.ClientSession,
    hub_home: Path,
    closed_port: int,
    tmp_path: Path,
) -> None:
    cloud = await start_hub()
    device = await enroll(http, cloud)
    before = "[server]\nport = 9999\n"
    write_config(hub_home, before)
    wrong = "dt_not-the-token"

    result = await cli(
        join_args(cloud.url, device["device_id"], token_file(tmp_path, wrong)),
        cli_env(hub_home, closed_port),
    )

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "the cloud refused the token" in result.stderr
    assert wrong not in result.stdout + result.stderr
    assert_nothing_saved(hub_home, before)
    assert (await listed(http, cloud, device["device_id"]))["online"] is False


async def test_join_an_unreachable_cloud_is_one_line_and_saves_nothing(
    hub_home: Path, closed_port: int, tmp_path: Path
) -> None:
    result = await cli(
        join_args(f"http://127.0.0.1:{closed_port}", "d1", token_file(tmp_path, "dt_whatever")),
        cli_env(hub_home, closed_port),
    )

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "cannot reach" in result.stderr
    assert_nothing_saved(hub_home, None)


async def test_join_with_a_bad_origin_or_missing_token_file_is_one_line(
    hub_home: Path, closed_port: int, tmp_path: Path
) -> None:
    env = cli_env(hub_home, closed_port)
    bad_origin = await cli(
        join_args("tiny.example", "d1", token_file(tmp_path, "dt_x")),
        env,
    )
    missing = await cli(
        join_args("http://127.0.0.1:1", "d1", tmp_path / "nope"),
        env,
    )
    for result in (bad_origin, missing):
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1, result.stderr
    assert "origin" in bad_origin.stderr
    assert "cannot read the token file" in missing.stderr
    assert_nothing_saved(hub_home, None)


async def test_interactive_join_explains_then_reads_id_and_token_from_stdin(
    start_hub: StartHub, http: aiohttp.ClientSession, hub_home: Path, closed_port: int
) -> None:
    cloud = await start_hub()
    device = await enroll(http, cloud)
    device_id, token = device["device_id"], device["device_token"]

    result = await cli(
        ["cloud", "join", "--app", cloud.url],
        cli_env(hub_home, closed_port, TINY_HUB_LAN_NAME="den-hub"),
        stdin=f"{device_id}\n{token}\n",
    )

    assert result.returncode == 0, result.stderr
    assert f"open {cloud.url}" in result.stdout
    assert 'kind "daemon", name "den-hub"' in result.stdout
    assert "device id: " in result.stdout and "device token: " in result.stdout
    assert token not in result.stdout + result.stderr
    assert_saved(hub_home, cloud.url, device_id, token)
    assert (await listed(http, cloud, device_id))["online"] is True


async def test_interactive_join_with_closed_stdin_saves_nothing(
    hub_home: Path, closed_port: int
) -> None:
    result = await cli(
        ["cloud", "join", "--app", "http://127.0.0.1:1"], cli_env(hub_home, closed_port), ""
    )
    assert result.returncode == 2
    assert "no device id given" in result.stderr
    assert_nothing_saved(hub_home, None)


async def test_status_prints_the_state_but_never_the_token(
    start_hub: StartHub,
    http: aiohttp.ClientSession,
    hub_home: Path,
    closed_port: int,
    tmp_path: Path,
) -> None:
    env = cli_env(hub_home, closed_port, TINY_HUB_PORT=str(closed_port))
    before = await cli(["cloud", "status"], env)
    assert before.returncode == 0, before.stderr
    assert "(not joined)" in before.stdout and "token: missing" in before.stdout

    cloud = await start_hub()
    device = await enroll(http, cloud)
    joined = await cli(
        join_args(cloud.url, device["device_id"], token_file(tmp_path, device["device_token"])),
        env,
    )
    assert joined.returncode == 0, joined.stderr
    (hub_home / "cloud.token").chmod(0o644)  # loosened by someone: status tightens it again

    result = await cli(["cloud", "status"], env)

    assert result.returncode == 0, result.stderr
    assert f"cloud url: {cloud.url}" in result.stdout
    assert f"device id: {device['device_id']}" in result.stdout
    assert "token: present" in result.stdout
    assert "the hub is not running" in result.stdout
    assert device["device_token"] not in result.stdout + result.stderr
    assert stat.S_IMODE((hub_home / "cloud.token").stat().st_mode) == 0o600


async def test_status_asks_the_running_hub(
    start_hub: StartHub, hub_home: Path, closed_port: int
) -> None:
    local = await start_hub()  # plays this machine's running hub
    result = await cli(
        ["cloud", "status"], cli_env(hub_home, closed_port, TINY_HUB_PORT=str(local.port))
    )
    assert result.returncode == 0, result.stderr
    assert f"hub: running at http://127.0.0.1:{local.port}; cloud: " in result.stdout


@dataclass
class Adopted:
    """A hub joined to a cloud as ``device_id`` with ``old``, whose owner then gave the same
    device ``new`` in the web app (``POST /api/devices/adopt``)."""

    cloud: RunningServer
    device_id: str
    old: str
    new: str
    env: dict[str, str]


async def join_then_adopt(
    start_hub: StartHub,
    http: aiohttp.ClientSession,
    hub_home: Path,
    closed_port: int,
    tmp_path: Path,
) -> Adopted:
    cloud = await start_hub()
    device = await enroll(http, cloud)
    device_id, old = device["device_id"], device["device_token"]
    env = cli_env(hub_home, closed_port)
    joined = await cli(join_args(cloud.url, device_id, token_file(tmp_path, old)), env)
    assert joined.returncode == 0, joined.stderr
    status, adopted = await send(
        http,
        "POST",
        f"{cloud.url}/api/devices/adopt",
        {"deviceId": device_id},
        owner_headers(cloud),
    )
    assert status == 200, adopted
    return Adopted(cloud, device_id, old, adopted["device_token"], env)


async def test_adopt_takes_a_new_token_for_the_same_device(
    start_hub: StartHub,
    http: aiohttp.ClientSession,
    hub_home: Path,
    closed_port: int,
    tmp_path: Path,
) -> None:
    rig = await join_then_adopt(start_hub, http, hub_home, closed_port, tmp_path)
    cloud, device_id, new, env = rig.cloud, rig.device_id, rig.new, rig.env

    explained = await cli(["cloud", "adopt"], env, stdin="")
    result = await cli(
        ["cloud", "adopt", "--token-file", str(token_file(tmp_path, new, "new.txt"))], env
    )

    assert explained.returncode == 2  # no token given: explained, asked, nothing changed
    assert "/api/devices/adopt" in explained.stdout and device_id in explained.stdout
    assert result.returncode == 0, result.stderr
    assert new not in result.stdout + result.stderr
    assert_saved(hub_home, cloud.url, device_id, new)
    devices = [
        d
        for d in (
            await send(http, "GET", f"{cloud.url}/api/devices", headers=owner_headers(cloud))
        )[1]["devices"]
    ]
    assert [d["id"] for d in devices] == [device_id]  # the same device, no ghost


async def test_adopt_interactive_and_refused_old_token(
    start_hub: StartHub,
    http: aiohttp.ClientSession,
    hub_home: Path,
    closed_port: int,
    tmp_path: Path,
) -> None:
    rig = await join_then_adopt(start_hub, http, hub_home, closed_port, tmp_path)
    cloud, device_id, old, env = rig.cloud, rig.device_id, rig.old, rig.env

    stale = await cli(["cloud", "adopt"], env, stdin=old + "\n")
    assert stale.returncode == 2 and "the cloud refused the token" in stale.stderr
    assert (hub_home / "cloud.token").read_text().strip() == old  # unchanged on failure

    result = await cli(["cloud", "adopt", "--app", cloud.url], env, stdin=rig.new)
    assert result.returncode == 0, result.stderr
    assert "device token: " in result.stdout
    assert_saved(hub_home, cloud.url, device_id, rig.new)


async def test_adopt_before_joining_says_to_join(hub_home: Path, closed_port: int) -> None:
    result = await cli(
        ["cloud", "adopt", "--app", "http://127.0.0.1:1"], cli_env(hub_home, closed_port)
    )
    assert result.returncode == 2
    assert "tiny-hub cloud join" in result.stderr


@pytest.mark.parametrize("action", ["join", "status", "adopt"])
async def test_every_cloud_action_has_help(action: str, tmp_path: Path) -> None:
    result = await cli(["cloud", action, "--help"], cli_env(tmp_path, 1))
    assert result.returncode == 0
    assert f"usage: tiny-hub cloud {action}" in result.stdout


# --- the account module without a process --------------------------------------------------


def test_save_token_is_0600_and_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "data" / "cloud.token"
    save_token(path, "dt_one")
    save_token(path, " dt_two\n")
    assert path.read_text() == "dt_two\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["cloud.token"]
    path.chmod(0o640)
    assert load_token(path) == "dt_two"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_token(tmp_path / "absent") is None


def test_write_cloud_config_edits_in_place_and_keeps_comments(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text(
        '[cloud]\n# where we dial\nurl = "https://old.example"\n\n[server]\nport = 1234\n'
    )
    settings = load_settings(home=home, environ={})
    write_cloud_config(settings, 'https://new.example/"x"', "dev-1")
    text = (home / "config.toml").read_text()
    assert "# where we dial" in text and "old.example" not in text
    document = tomllib.loads(text)
    assert document["cloud"] == {"url": 'https://new.example/"x"', "device_id": "dev-1"}
    assert document["server"] == {"port": 1234}


def test_write_cloud_config_edits_an_inline_table_and_refuses_what_is_no_table(
    tmp_path: Path,
) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text('# mine\ncloud = { url = "https://old.example" }\n')
    settings = load_settings(home=home, environ={})
    write_cloud_config(settings, "https://new.example", "dev-1")
    edited = (home / "config.toml").read_text()
    assert edited.startswith("# mine\n"), "the person's comment is kept"
    reloaded = load_settings(home=home, environ={})
    assert (reloaded.cloud_url, reloaded.cloud_device_id) == ("https://new.example", "dev-1")
    broken = 'cloud = "https://old.example"\n'
    (home / "config.toml").write_text(broken)
    with pytest.raises(CloudAccountError, match="by hand"):
        write_cloud_config(settings, "https://new.example", "dev-1")
    assert (home / "config.toml").read_text() == broken
