from __future__ import annotations

import stat
from pathlib import Path

import aiohttp
import pytest

from hub.people.identity import Identity, LoginError, hash_token
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for


def test_owner_and_token_file_at_first_start(home: Path) -> None:
    hub = Hub.open(settings_for(home))
    token_file = home / "owner.token"
    token = token_file.read_text().strip()
    assert hub.owner.is_owner
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert hub.identity.resolve(token) == hub.owner
    stored = [row["token_hash"] for row in hub.db["tokens"].rows]
    assert stored == [hash_token(token)], "only the hash is stored"
    assert token not in (home / "hub.db").read_bytes().decode("latin-1")
    hub.close()


def test_second_start_keeps_owner_and_token(home: Path) -> None:
    first = Hub.open(settings_for(home))
    token = (home / "owner.token").read_text()
    first.close()
    second = Hub.open(settings_for(home))
    assert second.owner == first.owner
    assert (home / "owner.token").read_text() == token
    # one owner, however often the hub starts (the platform row of migration 0012 is no person)
    assert second.db["users"].count_where("role = 'owner'") == 1
    second.close()


def test_lost_or_loosened_token_file_is_repaired(home: Path) -> None:
    Hub.open(settings_for(home)).close()
    token_file = home / "owner.token"
    token_file.chmod(0o644)
    hub = Hub.open(settings_for(home))
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    hub.close()
    token_file.unlink()
    hub = Hub.open(settings_for(home))
    assert hub.identity.resolve(token_file.read_text().strip()) == hub.owner
    hub.close()


def test_members_get_their_own_tokens(home: Path) -> None:
    hub = Hub.open(settings_for(home))
    identity = Identity(hub.db)
    alice = identity.add_user("alice")
    token = identity.issue_token(alice, "phone")
    assert identity.resolve(token) == alice
    assert not alice.is_owner
    assert identity.resolve(token + "x") is None
    hub.close()


async def test_wrong_token_is_401_json_not_anonymous(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")
    for headers in (
        {"Authorization": "Bearer th_wrong"},
        {"Authorization": "Basic abc"},
        {"Authorization": "Bearer "},
    ):
        async with http.get(f"{server.url}/api/health", headers=headers) as response:
            assert response.status == 401
            assert "invalid token" in (await response.json())["error"]
    async with http.get(f"{server.url}/api/health", cookies={"tiny_session": "nope"}) as response:
        assert response.status == 401


async def test_bearer_and_cookie_resolve_the_owner(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")
    async with http.get(f"{server.url}/api/health", headers=owner_headers(server)) as response:
        assert response.status == 200
    token = owner_headers(server)["Authorization"].split()[1]
    async with http.get(f"{server.url}/api/health", cookies={"tiny_session": token}) as response:
        assert response.status == 200


async def test_health_allows_anonymous_and_unknown_routes_are_json_404(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")
    async with http.get(f"{server.url}/api/health") as response:
        health = await response.json()
    assert response.status == 200
    assert health["ok"] is True
    assert health["model"]["provider"] == "embedded"
    assert "dataDir" not in health, "an anonymous caller sees no paths"
    async with http.get(f"{server.url}/api/nothing") as response:
        assert response.status == 404
        assert "no route" in (await response.json())["error"]
    async with http.delete(f"{server.url}/api/health") as response:
        assert response.status == 405
        assert "not allowed" in (await response.json())["error"]


def test_every_person_has_a_unique_login(home: Path) -> None:
    hub = Hub.open(settings_for(home))
    assert hub.owner.login == "owner"
    bea = hub.identity.add_user("Bea Smith")
    again = hub.identity.add_user("bea smith")
    assert (bea.login, again.login) == ("bea-smith", "bea-smith-2")
    assert hub.identity.by_login("@Bea-Smith") == bea
    assert hub.identity.by_login("platform") is None, "the platform row has no login"
    with pytest.raises(LoginError, match="taken"):
        hub.identity.add_user("Other", login="bea-smith")
    with pytest.raises(LoginError, match="letters"):
        hub.identity.add_user("Other", login="no spaces")
    token = hub.identity.issue_token(bea, "phone")
    assert hub.identity.resolve(token) == bea
    hub.close()
