"""A household on one hub (docs/people.md): the owner adds two people, each pairs a phone with a
code offered for them, and nothing of one reaches the other — memory, tinys, devices, events,
archives, media, model choice. A member meets 403 on every owner route. Removing a person
ends their tokens at once and keeps or purges their data, as the owner said.

Against a real hub on 127.0.0.1 with real SQLite, Chroma and the media folder.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hub.api.auth import Access, declared_access
from hub.api.server import RunningServer
from hub.cli import main
from hub.cli.common import token
from hub.cli.parser import TOKEN_ENV, build_parser
from hub.people.identity import hash_token
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for
from tests.daemon import send
from tests.test_route_policy import app_routes

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()


@dataclass
class Member:
    login: str
    headers: dict[str, str]  # the account token the phone got from pairing
    device: dict[str, str]  # the phone's dial-in credentials {deviceId, token}


async def add_and_pair(
    http: aiohttp.ClientSession, server: RunningServer, name: str, phone: str
) -> Member:
    """The owner adds ``name``; their phone redeems the code offered for them."""
    status, added = await send(
        http, "POST", f"{server.url}/api/people", {"name": name}, owner_headers(server)
    )
    assert status == 200, added
    login, code = added["person"]["login"], added["pairing"]["code"]
    assert added["person"]["role"] == "member" and "token" not in added
    status, paired = await send(
        http,
        "POST",
        f"{server.url}/api/pair",
        {"code": code, "name": phone, "platform": "android"},
    )
    assert status == 200, paired
    assert set(paired) == {"token", "deviceId", "name", "accountToken"}
    return Member(
        login=login,
        headers={"Authorization": f"Bearer {paired['accountToken']}"},
        device={"deviceId": paired["deviceId"], "token": paired["token"]},
    )


@pytest.fixture
async def server(start_hub: StartHub) -> RunningServer:
    return await start_hub()


@pytest.fixture
async def household(server: RunningServer, http: aiohttp.ClientSession) -> tuple[Member, Member]:
    ann = await add_and_pair(http, server, "Ann", "Ann's Pixel")
    bea = await add_and_pair(http, server, "Bea", "Bea's Pixel")
    return ann, bea


async def get(
    http: aiohttp.ClientSession, server: RunningServer, path: str, member: Member
) -> tuple[int, Any]:
    return await send(http, "GET", f"{server.url}{path}", None, member.headers)


async def status_of(
    http: aiohttp.ClientSession, server: RunningServer, path: str, member: Member
) -> int:
    async with http.get(f"{server.url}{path}", headers=member.headers) as response:
        await response.read()
        return response.status


async def first_event_of(
    http: aiohttp.ClientSession, server: RunningServer, member: Member
) -> dict[str, Any]:
    """The first event on the member's ring, read from GET /api/events."""
    async with http.get(f"{server.url}/api/events", headers=member.headers) as response:
        assert response.status == 200
        async for line in response.content:
            if line.startswith(b"data: "):
                return dict(json.loads(line[6:]))
    raise AssertionError("the event stream ended without an event")


# --- isolation ----------------------------------------------------------------------------------


async def test_two_people_never_see_each_others_things(
    server: RunningServer, http: aiohttp.ClientSession, household: tuple[Member, Member]
) -> None:
    ann, bea = household
    url = server.url

    # memory
    for member, fact in ((ann, "Ann's cat is called Miso"), (bea, "Bea plays the cello")):
        status, _ = await send(http, "POST", f"{url}/learnings", {"fact": fact}, member.headers)
        assert status == 200
    _, anns = await get(http, server, "/learnings?q=cello", ann)
    _, beas = await get(http, server, "/learnings?q=cat", bea)
    assert [f["fact"] for f in anns["learnings"]] == ["Ann's cat is called Miso"]
    assert [f["fact"] for f in beas["learnings"]] == ["Bea plays the cello"]

    # tinys: Bea's private tiny is hers alone
    status, made = await send(
        http,
        "POST",
        f"{url}/api/tinys",
        {"name": "bea-diary", "visibility": "private"},
        bea.headers,
    )
    assert status == 201, made
    assert (await get(http, server, "/api/tinys/bea-diary", ann))[0] in (403, 404)
    status, _ = await send(
        http, "PATCH", f"{url}/api/tinys/bea-diary", {"tagline": "mine"}, ann.headers
    )
    assert status in (403, 404)
    _, listed = await get(http, server, "/api/tinys?mine=true", ann)
    assert "bea-diary" not in [t["name"] for t in listed["tinys"]]

    # devices: each sees only their own phone and cannot remove the other's
    _, anns_devices = await get(http, server, "/api/devices", ann)
    assert [d["id"] for d in anns_devices["devices"]] == [ann.device["deviceId"]]
    status, _ = await send(
        http, "DELETE", f"{url}/api/devices?id={bea.device['deviceId']}", None, ann.headers
    )
    assert status == 404
    assert (await get(http, server, "/api/devices", bea))[1]["devices"][0]["id"] == (
        bea.device["deviceId"]
    )

    # media: what Bea's phone uploads is Bea's
    status, uploaded = await send(
        http, "POST", f"{url}/api/media", {**bea.device, "data": PNG, "contentType": "image/png"}
    )
    assert status == 200, uploaded
    assert await status_of(http, server, uploaded["url"], ann) == 404
    assert await status_of(http, server, uploaded["url"], bea) == 200

    # events: Bea's phone reports first, then Ann's; Ann's ring starts with her own
    for member, task in ((bea, "bea-task"), (ann, "ann-task")):
        status, _ = await send(
            http,
            "POST",
            f"{url}/api/devices/task-result",
            {**member.device, "taskId": task, "summary": f"{task} done"},
        )
        assert status == 200
    anns_event = await asyncio.wait_for(first_event_of(http, server, ann), 10)
    assert "ann-task" in json.dumps(anns_event) and "bea-task" not in json.dumps(anns_event)

    # archives
    body = {"messages": [{"role": "user", "content": "Bea's secret plan"}]}
    status, archived = await send(http, "POST", f"{url}/archive", body, bea.headers)
    assert status == 201, archived
    assert (await get(http, server, "/archive", ann))[1]["archives"] == []
    assert (await get(http, server, f"/archive/{archived['id']}", ann))[0] == 404

    # model choice
    choice = {"provider": "ollama", "id": "bea-model"}
    status, _ = await send(http, "PUT", f"{url}/api/model", choice, bea.headers)
    assert status == 200
    _, anns_model = await get(http, server, "/api/model", ann)
    assert anns_model.get("saved") is None


async def test_a_member_gets_403_on_every_owner_route(
    server: RunningServer, http: aiohttp.ClientSession, household: tuple[Member, Member]
) -> None:
    ann, _ = household
    owner_routes = [
        (method, re.sub(r"\{[^}]+\}", "owner", path))
        for (method, path), handler in app_routes(server.runner.app).items()
        if declared_access(handler) is Access.OWNER
    ]
    assert ("GET", "/api/people") in owner_routes and ("POST", "/api/pair/offer") in owner_routes
    for method, path in owner_routes:
        status, answer = await send(http, method, f"{server.url}{path}", {}, ann.headers)
        assert status == 403, (method, path, answer)
    # and the owner's own routes still answer the owner
    status, listed = await send(
        http, "GET", f"{server.url}/api/people", None, owner_headers(server)
    )
    assert status == 200
    assert [p["login"] for p in listed["people"]] == ["owner", ann.login, household[1].login]


# --- removing a person ---------------------------------------------------------------------------


async def test_removing_needs_a_keep_or_purge_and_never_the_owner(
    server: RunningServer, http: aiohttp.ClientSession, household: tuple[Member, Member]
) -> None:
    _, bea = household
    people = f"{server.url}/api/people"
    owner = owner_headers(server)
    for body in (None, {}, {"data": "maybe"}):
        status, answer = await send(http, "DELETE", f"{people}/{bea.login}", body, owner)
        assert status == 400 and "keep" in answer["error"] and "purge" in answer["error"]
    assert (await get(http, server, "/api/devices", bea))[0] == 200  # nothing happened
    status, answer = await send(http, "DELETE", f"{people}/owner", {"data": "purge"}, owner)
    assert status == 400 and "owner" in answer["error"]
    status, _ = await send(http, "DELETE", f"{people}/nobody", {"data": "keep"}, owner)
    assert status == 404


async def test_removed_keeping_data_their_tokens_stop_at_once(
    server: RunningServer, http: aiohttp.ClientSession, household: tuple[Member, Member]
) -> None:
    ann, bea = household
    status, _ = await send(
        http, "POST", f"{server.url}/learnings", {"fact": "Bea likes figs"}, bea.headers
    )
    assert status == 200
    events = await http.get(f"{server.url}/api/events", headers=bea.headers)
    assert events.status == 200  # a stream Bea holds open while she is removed
    status, removed = await send(
        http,
        "DELETE",
        f"{server.url}/api/people/{bea.login}",
        {"data": "keep"},
        owner_headers(server),
    )
    assert status == 200 and removed["tokensRevoked"] == 1 and removed["devicesRevoked"] == 1
    await asyncio.wait_for(events.read(), 10)  # the hub ended it
    events.release()

    assert (await get(http, server, "/api/devices", bea))[0] == 401
    status, _ = await send(http, "POST", f"{server.url}/api/devices/heartbeat", bea.device)
    assert status == 401
    assert (await get(http, server, "/api/devices", ann))[0] == 200  # Ann is untouched

    bea_id = server.hub.identity.by_login(bea.login).id  # type: ignore[union-attr]
    assert server.hub.memory.count(bea_id) == 1  # kept
    _, listed = await send(http, "GET", f"{server.url}/api/people", None, owner_headers(server))
    (row,) = [p for p in listed["people"] if p["login"] == bea.login]
    assert row["removedAt"] is not None and row["tokens"] == 0
    status, answer = await send(
        http,
        "POST",
        f"{server.url}/api/people/{bea.login}/credential",
        {"with": "token"},
        owner_headers(server),
    )
    assert status == 409 and "removed" in answer["error"]


async def test_removed_purging_data_leaves_nothing_of_them(
    server: RunningServer, http: aiohttp.ClientSession, household: tuple[Member, Member]
) -> None:
    ann, bea = household
    url = server.url
    await send(
        http, "POST", f"{url}/learnings", {"fact": "Bea hides keys in the boot"}, bea.headers
    )
    await send(http, "POST", f"{url}/api/tinys", {"name": "bea-tiny"}, bea.headers)
    _, uploaded = await send(
        http, "POST", f"{url}/api/media", {**bea.device, "data": PNG, "contentType": "image/png"}
    )
    media_file = server.hub.settings.media_path / uploaded["key"]
    assert media_file.is_file()
    bea_id = server.hub.identity.by_login(bea.login).id  # type: ignore[union-attr]
    assert server.hub.memory.vectors.count(bea_id) == 1

    status, _ = await send(
        http, "DELETE", f"{url}/api/people/{bea.login}?data=purge", None, owner_headers(server)
    )
    assert status == 200
    assert (await get(http, server, "/api/devices", bea))[0] == 401
    assert server.hub.identity.by_login(bea.login) is None
    assert server.hub.tinys.get("bea-tiny") is None
    assert not media_file.exists()
    assert server.hub.memory.vectors.count(bea_id) == 0
    for table, column in (("entity", "owner"), ("devices", "owner"), ("tokens", "user_id")):
        row = server.hub.db.execute(f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", [bea_id])
        assert row.fetchone()[0] == 0, table
    assert (await get(http, server, "/api/devices", ann))[0] == 200


async def test_unpairing_a_persons_phone_ends_its_account_token(
    server: RunningServer, http: aiohttp.ClientSession, household: tuple[Member, Member]
) -> None:
    ann, _ = household
    status, _ = await send(
        http, "DELETE", f"{server.url}/api/devices?id={ann.device['deviceId']}", None, ann.headers
    )
    assert status == 200
    assert (await get(http, server, "/api/devices", ann))[0] == 401


# --- adding, renaming ---------------------------------------------------------------------------


async def test_add_with_a_token_rename_and_bad_input(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    people = f"{server.url}/api/people"
    owner = owner_headers(server)
    status, added = await send(
        http, "POST", people, {"name": "Cy Young", "login": "@cy", "with": "token"}, owner
    )
    assert status == 200 and added["person"]["login"] == "cy" and "pairing" not in added
    stored = server.hub.db.execute(
        "SELECT token_hash FROM tokens WHERE token_hash = ?", [hash_token(added["token"])]
    ).fetchone()
    assert stored is not None  # only its hash is kept
    cy = {"Authorization": f"Bearer {added['token']}"}
    assert (await send(http, "GET", f"{server.url}/api/devices", None, cy))[0] == 200

    status, renamed = await send(http, "PATCH", f"{people}/cy", {"name": "Cyrus"}, owner)
    assert status == 200 and renamed["person"]["name"] == "Cyrus"

    bad = [
        ("POST", people, {"name": "Dee", "login": "@cy"}, 409),
        ("POST", people, {"name": ""}, 400),
        ("POST", people, {"name": "x" * 65}, 400),
        ("POST", people, {"name": "Dee", "login": "no spaces"}, 400),
        ("POST", people, {"name": "Dee", "with": "carrier pigeon"}, 400),
        ("POST", people, {"name": "Dee", "role": "owner"}, 400),
        ("POST", people, ["Dee"], 400),
        ("PATCH", f"{people}/cy", {"name": 7}, 400),
        ("PATCH", f"{people}/cy", {"login": "owner"}, 400),
        ("PATCH", f"{people}/nobody", {"name": "N"}, 404),
        ("POST", f"{people}/cy/credential", {"with": "fax"}, 400),
    ]
    for method, url, body, expected in bad:
        status, answer = await send(http, method, url, body, owner)
        assert status == expected, (method, url, body, answer)
        assert isinstance(answer, dict) and answer["error"]
    _, listed = await send(http, "GET", people, None, owner)
    assert [p["login"] for p in listed["people"]] == ["owner", "cy"]  # nothing half-made


# --- the command line ---------------------------------------------------------------------------


def test_the_people_command(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def run(*argv: str) -> tuple[int, str, str]:
        status = main(["people", *argv, "--home", str(home)])
        out, err = capsys.readouterr()
        return status, out, err

    status, out, _ = run("add", "Bea Smith", "--token")
    assert status == 0 and "@bea-smith" in out
    token = re.findall(r"th_[A-Za-z0-9_-]+", out)[0]
    assert f"tiny-hub tui --token {token}" in out
    status, out, _ = run("add", "Cy", "--login", "cy")
    assert status == 0 and re.search(r"pairing code for @cy: \d{6}", out)
    assert run("rename", "cy", "Cyrus")[0] == 0
    status, out, _ = run("list")
    assert status == 0
    assert [line.split()[0] for line in out.splitlines()] == ["@owner", "@bea-smith", "@cy"]
    assert "Cyrus" in out

    status, _, err = run("remove", "bea-smith")
    assert status == 2 and "--keep-data" in err and "--purge-data" in err
    status, _, err = run("remove", "owner", "--purge-data")
    assert status == 2 and "owner cannot be removed" in err
    status, out, _ = run("remove", "bea-smith", "--keep-data")
    assert status == 0 and "1 token(s)" in out and "kept" in out

    hub = Hub.open(settings_for(home))
    try:
        assert hub.identity.resolve(token) is None
        assert hub.identity.by_login("bea-smith") is not None
    finally:
        hub.close()
    status, out, _ = run("remove", "bea-smith", "--purge-data")  # later: purge what was kept
    assert status == 0 and "purged" in out
    status, out, _ = run("list")
    assert "@bea-smith" not in out


def test_tui_and_chat_take_a_persons_token_from_the_flag_or_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_for(home)
    home.mkdir(parents=True)
    settings.owner_token_path.write_text("th_owner\n")
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert token(settings, None) == "th_owner"
    monkeypatch.setenv(TOKEN_ENV, "th_bea")
    assert token(settings, None) == "th_bea"
    assert token(settings, "th_cy") == "th_cy"
    parsed = build_parser().parse_args(["tui", "--token", "th_cy"])
    assert parsed.token == "th_cy"


async def test_a_purge_the_database_refuses_keeps_everything_and_says_so(
    server: RunningServer, http: aiohttp.ClientSession, household: tuple[Member, Member]
) -> None:
    _, bea = household
    url = server.url
    await send(http, "POST", f"{url}/learnings", {"fact": "Bea owns a kayak"}, bea.headers)
    _, uploaded = await send(
        http, "POST", f"{url}/api/media", {**bea.device, "data": PNG, "contentType": "image/png"}
    )
    bea_id = server.hub.identity.by_login(bea.login).id  # type: ignore[union-attr]
    # a record of some other part of the hub that points at Bea and does not let go of her
    server.hub.db.execute(
        "CREATE TABLE held_by_another_part (user_id TEXT NOT NULL REFERENCES users (id))"
    )
    server.hub.db.execute("INSERT INTO held_by_another_part VALUES (?)", [bea_id])

    status, answer = await send(
        http, "DELETE", f"{url}/api/people/{bea.login}", {"data": "purge"}, owner_headers(server)
    )
    assert status == 409 and "kept" in answer["error"]
    assert (await get(http, server, "/api/devices", bea))[0] == 401  # her tokens still ended
    assert server.hub.memory.count(bea_id) == 1
    assert server.hub.memory.vectors.count(bea_id) == 1
    assert (server.hub.settings.media_path / uploaded["key"]).is_file()
