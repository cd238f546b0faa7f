"""Pairing a phone (docs/lan.md): the owner's offer and QR, the phone's code for a token, the
throttle on guessing, and listing and revoking what was paired — against a real hub."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
import pytest

from hub.api.server import RunningServer
from hub.devices.registry import AdjustableClock
from hub.lan.pairing import (
    MAX_WRONG_PER_OFFER,
    Offer,
    Pairing,
    PairRequest,
    WrongCode,
    render_terminal,
)
from hub.people.identity import hash_token
from tests.conftest import StartHub, owner_headers
from tests.daemon import send

LAN_URL = "http://192.168.1.50:8080"
FINGERPRINT = "ab" * 32


@pytest.fixture
async def server(start_hub: StartHub) -> RunningServer:
    server = await start_hub(lan_url=LAN_URL)
    server.hub.lan.fingerprint = FINGERPRINT  # what the TLS work will set when it serves HTTPS
    return server


def clock(server: RunningServer) -> AdjustableClock:
    found = server.hub.devices.clock
    assert isinstance(found, AdjustableClock)
    return found


async def offer(http: aiohttp.ClientSession, server: RunningServer) -> dict[str, Any]:
    status, answer = await send(
        http, "POST", f"{server.url}/api/pair/offer", None, owner_headers(server)
    )
    assert status == 200, answer
    return dict(answer)


async def pair(
    http: aiohttp.ClientSession,
    server: RunningServer,
    code: str,
    name: str = "Bea's Pixel",
    platform: str = "android",
) -> tuple[int, Any]:
    body = {"code": code, "name": name, "platform": platform}
    return await send(http, "POST", f"{server.url}/api/pair", body)


async def heartbeat(http: aiohttp.ClientSession, server: RunningServer, paired: Any) -> int:
    body = {"deviceId": paired["deviceId"], "token": paired["token"]}
    status, _ = await send(http, "POST", f"{server.url}/api/devices/heartbeat", body)
    return status


def wrong_code(code: str) -> str:
    return f"{(int(code) + 1) % 10**6:06d}"


async def test_happy_path_from_the_qr_payload(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    made = await offer(http, server)
    assert len(made["code"]) == 6 and made["code"].isdigit()
    assert made["expiresAt"] == pytest.approx(clock(server)() + 300, abs=5)
    payload = json.loads(made["qr"]["payload"])
    assert payload == {"v": 1, "lanUrl": LAN_URL, "code": made["code"], "fp": FINGERPRINT}
    assert made["qr"]["svg"].startswith("<svg") and "█" in made["qr"]["text"]

    status, paired = await pair(http, server, payload["code"], platform="Android")
    assert status == 200, paired
    assert set(paired) == {"token", "deviceId", "name"}
    assert await heartbeat(http, server, paired) == 200

    stored = server.hub.db.execute(
        "SELECT kind, platform, token_hash FROM devices WHERE id = ?", [paired["deviceId"]]
    ).fetchone()
    assert stored == ("daemon", "android", hash_token(paired["token"]))
    status, listing = await send(
        http, "GET", f"{server.url}/api/tokens", None, owner_headers(server)
    )
    assert status == 200
    (entry,) = listing["tokens"]
    assert entry["deviceId"] == paired["deviceId"]
    assert (entry["name"], entry["platform"], entry["online"]) == ("Bea's Pixel", "android", True)
    assert entry["pairedAt"] is not None and entry["lastSeen"] is not None
    assert paired["token"] not in json.dumps(listing)


async def test_an_expired_code_is_refused(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    made = await offer(http, server)
    clock(server).advance(301)
    status, answer = await pair(http, server, made["code"])
    assert status == 410
    assert "expired" in answer["error"] and "new one" in answer["error"]
    assert server.hub.db["devices"].count == 0


async def test_a_code_works_once(server: RunningServer, http: aiohttp.ClientSession) -> None:
    made = await offer(http, server)
    assert (await pair(http, server, made["code"]))[0] == 200
    status, answer = await pair(http, server, made["code"], name="Another phone")
    assert status == 410 and "already used" in answer["error"]
    assert server.hub.db["devices"].count == 1


async def test_a_new_offer_voids_the_open_one(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    first = await offer(http, server)
    second = await offer(http, server)
    if first["code"] != second["code"]:  # one chance in a million that they are the same
        status, answer = await pair(http, server, first["code"])
        assert status == 410 and "newer offer" in answer["error"]
    assert (await pair(http, server, second["code"]))[0] == 200


async def test_brute_force_locks_the_address_for_a_minute(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    made = await offer(http, server)
    wrong = wrong_code(made["code"])
    for left in (4, 3, 2, 1):
        status, answer = await pair(http, server, wrong)
        assert status == 403 and f"{left} more wrong code" in answer["error"]
    status, answer = await pair(http, server, wrong)
    assert status == 429 and "try again in 60 seconds" in answer["error"]

    # The lock holds even for the right code, and says when to come back.
    body = {"code": made["code"], "name": "phone", "platform": "ios"}
    async with http.post(f"{server.url}/api/pair", json=body) as response:
        assert response.status == 429
        assert 1 <= int(response.headers["Retry-After"]) <= 60
        locked = await response.json()
    assert "locked" in locked["error"] and "try again in" in locked["error"]
    assert server.hub.db["devices"].count == 0

    clock(server).advance(61)
    status, paired = await pair(http, server, made["code"])
    assert status == 200, paired
    assert await heartbeat(http, server, paired) == 200


async def test_parallel_guesses_do_not_slip_past_the_lock(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    made = await offer(http, server)
    wrong = wrong_code(made["code"])
    answers = await asyncio.gather(*(pair(http, server, wrong) for _ in range(12)))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [403] * 4 + [429] * 8


async def test_an_open_offer_dies_after_too_many_wrong_codes_from_anywhere(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    """Addresses are cheap on a LAN; the per-offer limit bounds the guesses all of them get."""
    made = await offer(http, server)
    pairing, wrong = Pairing(server.hub), wrong_code(made["code"])
    for n in range(MAX_WRONG_PER_OFFER):
        with pytest.raises(WrongCode):
            pairing.redeem(PairRequest(wrong, "phone", "ios"), f"10.0.0.{n}")
    status, answer = await pair(http, server, made["code"])
    assert status == 410 and "too many wrong codes" in answer["error"]


async def test_a_revoked_token_gets_401(server: RunningServer, http: aiohttp.ClientSession) -> None:
    made = await offer(http, server)
    _, paired = await pair(http, server, made["code"])
    assert await heartbeat(http, server, paired) == 200
    tokens = f"{server.url}/api/tokens"
    status, _ = await send(
        http, "DELETE", f"{tokens}?id={paired['deviceId']}", None, owner_headers(server)
    )
    assert status == 200
    assert await heartbeat(http, server, paired) == 401
    status, listing = await send(http, "GET", tokens, None, owner_headers(server))
    assert status == 200 and listing["tokens"] == []
    status, answer = await send(
        http, "DELETE", f"{tokens}?id={paired['deviceId']}", None, owner_headers(server)
    )
    assert status == 404 and paired["deviceId"] in answer["error"]
    status, answer = await send(http, "DELETE", tokens, None, owner_headers(server))
    assert status == 400 and "id" in answer["error"]


async def test_only_the_owner_offers_lists_and_revokes(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    bea = server.hub.identity.add_user("bea")
    bea_auth = {"Authorization": f"Bearer {server.hub.identity.issue_token(bea, 't')}"}
    for method, path in (
        ("POST", "/api/pair/offer"),
        ("GET", "/api/tokens"),
        ("DELETE", "/api/tokens?id=dev_x"),
    ):
        assert (await send(http, method, server.url + path))[0] == 401
        assert (await send(http, method, server.url + path, None, bea_auth))[0] == 403
    assert server.hub.db["pairing_offers"].count == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([], "body"),
        ({"name": "phone", "platform": "ios"}, "code"),
        ({"code": 123456, "name": "phone", "platform": "ios"}, "code"),
        ({"code": "12345", "name": "phone", "platform": "ios"}, "code"),
        ({"code": "123456", "platform": "ios"}, "name"),
        ({"code": "123456", "name": "x" * 65, "platform": "ios"}, "name"),
        ({"code": "123456", "name": "<script>", "platform": "ios"}, "name"),
        ({"code": "123456", "name": "phone"}, "platform"),
        ({"code": "123456", "name": "phone", "platform": "windows phone"}, "platform"),
    ],
)
async def test_bad_input_names_the_field_and_is_not_a_guess(
    server: RunningServer, http: aiohttp.ClientSession, body: Any, field: str
) -> None:
    made = await offer(http, server)
    for _ in range(6):
        status, answer = await send(http, "POST", f"{server.url}/api/pair", body)
        assert status == 400 and field in answer["error"], answer
    assert (await pair(http, server, made["code"]))[0] == 200


async def test_an_oversized_body_is_refused(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    body = {"code": "123456", "name": "phone", "platform": "ios", "pad": "x" * 10_000}
    assert (await send(http, "POST", f"{server.url}/api/pair", body))[0] == 413


async def test_a_phone_paired_again_gets_a_free_name(
    server: RunningServer, http: aiohttp.ClientSession
) -> None:
    for expected in ("Pixel", "Pixel 2"):
        made = await offer(http, server)
        status, paired = await pair(http, server, made["code"], name="Pixel")
        assert status == 200 and paired["name"] == expected


async def test_the_code_and_token_are_not_stored_or_logged_in_plain_text(
    server: RunningServer, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    db_files = [server.hub.settings.db_path, server.hub.settings.db_path.with_name("hub.db-wal")]

    def stored() -> bytes:
        return b"".join(path.read_bytes() for path in db_files if path.exists())

    before = stored()
    made = await offer(http, server)
    code = made["code"].encode()
    # Six digits could already occur by chance (a hex id); the offer must not add one.
    assert stored().count(code) == before.count(code)
    (row,) = server.hub.db.execute("SELECT code_hash FROM pairing_offers").fetchall()
    assert made["code"] not in row[0]

    _, paired = await pair(http, server, made["code"])
    assert paired["token"].encode() not in stored()
    assert made["code"] not in caplog.text and paired["token"] not in caplog.text
    assert "paired Bea's Pixel" in caplog.text


def test_the_terminal_qr_is_text() -> None:
    text = render_terminal(Offer("pair_x", "123456", 0.0, 300.0, None, None))
    lines = text.splitlines()
    assert len(lines) > 10 and len({len(line) for line in lines}) == 1
