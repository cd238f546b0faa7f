"""Archives and shares: full-fidelity private snapshots, their public sanitised copies, redaction.

Every HTTP test runs a real hub on 127.0.0.1 with a real SQLite database; Ollama is pointed at a
closed port so no model is probed. An over-long explicit title is refused (400), not cut; only
the default title (the first user text) is cut, to 60 characters.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp
import pytest

from hub.api.chat import parse_messages
from hub.api.server import RunningServer
from hub.archives.store import (
    DEFAULT_TITLE_CHARS,
    MAX_MESSAGES,
    MAX_TITLE_CHARS,
    sanitise_for_share,
)
from hub.core.redaction import REDACTED, redact
from tests.conftest import StartHub, owner_headers

# -- helpers ---------------------------------------------------------------------------------


async def hub_up(start_hub: StartHub, closed_port: int) -> RunningServer:
    return await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")


def member(server: RunningServer, name: str) -> dict[str, str]:
    """Headers that sign in as a second, non-owner user."""
    user = server.hub.identity.add_user(name)
    token = server.hub.identity.issue_token(user, "test")
    return {"Authorization": f"Bearer {token}"}


async def call(
    http: aiohttp.ClientSession,
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    json: Any = None,
    data: str | bytes | None = None,
) -> tuple[int, dict[str, Any]]:
    """One request; the status and the JSON body (every answer of the hub is JSON)."""
    async with http.request(method, url, headers=headers, json=json, data=data) as response:
        assert response.content_type == "application/json", await response.text()
        return response.status, await response.json()


def conversation() -> dict[str, Any]:
    """A conversation as a client holds it: system prompt, tool call, tool result, usage."""
    return {
        "messages": [
            {"role": "system", "content": "You are tiny."},
            {"role": "user", "content": "What's the weather in Lisbon tomorrow?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {
                        "toolUse": {
                            "toolUseId": "tu_1",
                            "name": "weather",
                            "input": {"city": "Lisbon"},
                        }
                    },
                ],
                "toolCalls": [{"id": "tu_1", "name": "weather", "input": {"city": "Lisbon"}}],
                "modelId": "qwen3:4b",
            },
            {
                "role": "tool",
                "content": [{"toolResult": {"toolUseId": "tu_1", "content": [{"text": "21C"}]}}],
                "toolUseId": "tu_1",
            },
            {
                "role": "assistant",
                "content": [{"text": "Sunny, 21C."}],
                "usage": {"inputTokens": 120, "outputTokens": 8, "totalTokens": 128},
                "modelId": "qwen3:4b",
            },
        ],
        "usage": {"inputTokens": 300, "outputTokens": 20, "totalTokens": 320, "max_tokens": 4096},
        "models": [{"provider": "ollama", "modelId": "qwen3:4b"}],
        "client": {"app": "tiny-ios", "version": "1.2.3"},
    }


async def archive(
    http: aiohttp.ClientSession, server: RunningServer, body: Any, headers: dict[str, str]
) -> str:
    status, answer = await call(http, "POST", f"{server.url}/archive", headers=headers, json=body)
    assert status == 201, answer
    assert answer["ok"] is True and answer["id"].startswith("ar_")
    return str(answer["id"])


# -- round trip --------------------------------------------------------------------------------


async def test_archive_list_fetch_restore_round_trip(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner = owner_headers(server)
    sent = conversation()
    archive_id = await archive(http, server, sent, owner)

    status, listing = await call(http, "GET", f"{server.url}/archive", headers=owner)
    assert status == 200
    [entry] = listing["archives"]
    assert entry["id"] == archive_id
    assert entry["title"] == "What's the weather in Lisbon tomorrow?"  # the default title
    assert entry["messages"] == 5
    assert isinstance(entry["created_at"], float)

    status, fetched = await call(http, "GET", f"{server.url}/archive/{archive_id}", headers=owner)
    assert status == 200
    # Full fidelity: every field and every message comes back as sent.
    assert fetched["messages"] == sent["messages"]
    assert fetched["usage"] == sent["usage"]
    assert fetched["models"] == sent["models"]
    assert fetched["client"] == sent["client"]
    assert fetched["id"] == archive_id
    assert fetched["title"] == entry["title"]
    assert fetched["created_at"] == entry["created_at"]

    status, restored = await call(
        http, "POST", f"{server.url}/archive/{archive_id}/restore", headers=owner
    )
    assert status == 200
    assert restored == {
        "messages": [
            {"role": "system", "content": "You are tiny."},
            {"role": "user", "content": "What's the weather in Lisbon tomorrow?"},
            # the tool turn is gone, so the two assistant texts become one message
            {"role": "assistant", "content": "Let me check.\n\nSunny, 21C."},
        ]
    }
    # What /api/chat's own parser accepts, once the client adds its next question.
    next_turn = {"messages": [*restored["messages"], {"role": "user", "content": "And Porto?"}]}
    parsed = parse_messages(next_turn)
    assert [m.role for m in parsed] == ["system", "user", "assistant", "user"]
    assert parsed[2].texts == ("Let me check.\n\nSunny, 21C.",)


async def test_list_is_own_only_and_newest_first(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner, alice = owner_headers(server), member(server, "alice")
    first = await archive(
        http, server, {"title": "first", "messages": [{"role": "user", "content": "a"}]}, owner
    )
    second = await archive(
        http, server, {"title": "second", "messages": [{"role": "user", "content": "b"}]}, owner
    )
    theirs = await archive(http, server, {"messages": [{"role": "user", "content": "c"}]}, alice)
    _, listing = await call(http, "GET", f"{server.url}/archive", headers=owner)
    assert [a["id"] for a in listing["archives"]] == [second, first]
    assert [a["title"] for a in listing["archives"]] == ["second", "first"]
    _, listing = await call(http, "GET", f"{server.url}/archive", headers=alice)
    assert [a["id"] for a in listing["archives"]] == [theirs]


async def test_delete_archive(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner = owner_headers(server)
    archive_id = await archive(http, server, conversation(), owner)
    status, shared = await call(
        http, "POST", f"{server.url}/share", headers=owner, json={"archiveId": archive_id}
    )
    assert status == 201
    url = f"{server.url}/archive/{archive_id}"
    assert await call(http, "DELETE", url, headers=owner) == (200, {"ok": True})
    assert (await call(http, "GET", url, headers=owner))[0] == 404
    assert (await call(http, "DELETE", url, headers=owner))[0] == 404
    assert (await call(http, "GET", f"{server.url}/archive", headers=owner))[1] == {"archives": []}
    # A share is its own copy: it outlives the archive it was made from.
    status, public = await call(http, "GET", f"{server.url}{shared['url']}")
    assert status == 200 and public["messages"]


# -- privacy -----------------------------------------------------------------------------------


async def test_someone_elses_archive_is_404_like_an_unknown_one(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner, alice = owner_headers(server), member(server, "alice")
    archive_id = await archive(http, server, conversation(), owner)
    unknown = "ar_doesnotexist00"
    for target in (archive_id, unknown):
        for method, path in (
            ("GET", f"/archive/{target}"),
            ("POST", f"/archive/{target}/restore"),
            ("DELETE", f"/archive/{target}"),
        ):
            status, answer = await call(http, method, f"{server.url}{path}", headers=alice)
            assert status == 404, (method, path)
            assert answer == {"error": f"no archive {target}"}  # same words either way
        status, answer = await call(
            http, "POST", f"{server.url}/share", headers=alice, json={"archiveId": target}
        )
        assert (status, answer) == (404, {"error": f"no archive {target}"})
    # Alice's attempts changed nothing.
    status, fetched = await call(http, "GET", f"{server.url}/archive/{archive_id}", headers=owner)
    assert status == 200 and fetched["id"] == archive_id


async def test_signing_in_is_required_except_to_read_a_share(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    archive_id = await archive(http, server, conversation(), owner_headers(server))
    for method, path, body in (
        ("POST", "/archive", conversation()),
        ("GET", "/archive", None),
        ("GET", f"/archive/{archive_id}", None),
        ("POST", f"/archive/{archive_id}/restore", None),
        ("DELETE", f"/archive/{archive_id}", None),
        ("POST", "/share", {"archiveId": archive_id}),
        ("POST", "/share", conversation()),
        ("DELETE", "/share/sh_whatever", None),
    ):
        status, answer = await call(http, method, f"{server.url}{path}", json=body)
        assert status == 401, (method, path)
        assert "sign in" in answer["error"]


# -- redaction ---------------------------------------------------------------------------------

SENTENCE = "The bearer of bad news asked for a task-skills list and a token of thanks."


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("curl -H 'Authorization: Bearer abc123def456ghi'", "abc123def456ghi"),
        ("bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "eyJhbGciOiJIUzI1NiJ9"),
        ("my key is sk-proj-AbCdEf0123456789xyzXYZ, keep it", "sk-proj-AbCdEf0123456789"),
        ("anthropic: sk-ant-api03-abcdefghijklmnop_QRS", "sk-ant-api03"),
        ("stripe sk_live_51HabcdefghijklmnopQR", "sk_live_51H"),
        ("hub token th_AbCdEfGhIjKlMnOpQrStUvWxYz0123-_", "th_AbCdEfGhIjKlMnOpQrSt"),
        ("gh: ghp_0123456789abcdefghijABCDEFGHIJ", "ghp_0123456789"),
        ("slack xoxb-12345678-abcdefgh", "xoxb-12345678"),
        ("slack xoxp-1111-2222-abcdef", "xoxp-1111-2222"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
    ],
)
def test_secrets_in_text_are_redacted(text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted
    assert REDACTED in redacted


def test_redact_keys_and_keeps_the_rest() -> None:
    body = {
        "apiKey": "anything at all",
        "OPENAI_API_KEY": "x",
        "headers": {
            "Authorization": "Basic dXNlcjpwYXNz",
            "x-tiny-model-api-key": "k",
            "X-Tiny-Key": "k2",
            "Cookie": "tiny_session=abc",
        },
        "deep": [{"config": {"client_secret": {"nested": "s"}, "password": 1234, "passwd": "p"}}],
        "accessToken": "opaque",
        "usage": {"inputTokens": 10, "outputTokens": 2, "max_tokens": 50, "token_count": 12},
        "text": SENTENCE,
        "n": 3,
        "flag": True,
        "none": None,
    }
    original = copy.deepcopy(body)
    clean = redact(body)
    assert body == original, "redact returns a copy"
    assert clean["apiKey"] == clean["OPENAI_API_KEY"] == clean["accessToken"] == REDACTED
    assert set(clean["headers"].values()) == {REDACTED}
    config = clean["deep"][0]["config"]
    assert config == {"client_secret": REDACTED, "password": REDACTED, "passwd": REDACTED}
    assert clean["usage"] == body["usage"], "token counts are not credentials"
    assert clean["text"] == SENTENCE
    assert (clean["n"], clean["flag"], clean["none"]) == (3, True, None)


async def test_archives_are_stored_redacted(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner = owner_headers(server)
    own_token = owner["Authorization"].removeprefix("Bearer ")
    body = conversation()
    body["messages"][1]["content"] = f"my token is {own_token} and my key sk-abcdefghijklmnop1234"
    body["messages"][2]["toolCalls"][0]["input"]["headers"] = {"Authorization": "Bearer zzz999zzz"}
    body["messages"][2]["toolCalls"][0]["input"]["api_key"] = "plain-looking-value"
    body["messages"][4]["content"] = [{"type": "text", "text": SENTENCE}]
    body["settings"] = {"provider": {"apiKey": "nested-value", "base_url": "https://x.example"}}
    body["title"] = "keys: AKIAIOSFODNN7EXAMPLE"
    archive_id = await archive(http, server, body, owner)

    _, fetched = await call(http, "GET", f"{server.url}/archive/{archive_id}", headers=owner)
    stored = server.hub.db.execute(
        "SELECT title, body_json FROM archives WHERE id = ?", (archive_id,)
    ).fetchone()
    for text in (json.dumps(fetched), *stored):
        for secret in (
            own_token,
            "sk-abcdefghijklmnop1234",
            "zzz999zzz",
            "plain-looking-value",
            "nested-value",
            "AKIAIOSFODNN7EXAMPLE",
        ):
            assert secret not in text
    assert fetched["title"] == f"keys: {REDACTED}"
    assert fetched["messages"][1]["content"] == f"my token is {REDACTED} and my key {REDACTED}"
    tool_input = fetched["messages"][2]["toolCalls"][0]["input"]
    assert tool_input == {
        "city": "Lisbon",
        "headers": {"Authorization": REDACTED},
        "api_key": REDACTED,
    }
    assert fetched["settings"] == {
        "provider": {"apiKey": REDACTED, "base_url": "https://x.example"}
    }
    assert fetched["messages"][4]["content"] == [{"type": "text", "text": SENTENCE}]
    assert fetched["messages"][4]["usage"] == body["messages"][4]["usage"]


# -- shares ------------------------------------------------------------------------------------


def assert_sanitised(public: dict[str, Any]) -> None:
    assert set(public) == {"id", "title", "messages", "created_at"}
    for message in public["messages"]:
        assert set(message) == {"role", "text"}
        assert message["role"] in ("user", "assistant")
    text = json.dumps(public)
    for gone in ("toolUse", "toolCalls", "toolResult", "usage", "Tokens", "qwen3", "modelId"):
        assert gone not in text
    assert "You are tiny." not in text  # system prompts stay private


async def test_share_from_an_archive_is_public_and_sanitised(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner = owner_headers(server)
    archive_id = await archive(http, server, conversation(), owner)
    status, shared = await call(
        http, "POST", f"{server.url}/share", headers=owner, json={"archiveId": archive_id}
    )
    assert status == 201
    assert shared["ok"] is True and shared["id"].startswith("sh_")
    assert shared["url"] == f"/share/{shared['id']}"

    status, public = await call(http, "GET", f"{server.url}{shared['url']}")  # nobody signed in
    assert status == 200
    assert_sanitised(public)
    assert public["id"] == shared["id"]
    assert public["title"] == "What's the weather in Lisbon tomorrow?"
    assert public["messages"] == [
        {"role": "user", "text": "What's the weather in Lisbon tomorrow?"},
        {"role": "assistant", "text": "Let me check."},
        {"role": "assistant", "text": "Sunny, 21C."},
    ]
    row = server.hub.db.execute(
        "SELECT archive_id FROM shares WHERE id = ?", (shared["id"],)
    ).fetchone()
    assert row == (archive_id,)


async def test_share_from_a_body_and_delete_it(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner, alice = owner_headers(server), member(server, "alice")
    body = conversation()
    body["title"] = "Weather, with my key sk-abcdefghijklmnop1234"
    body["messages"][1]["content"] = "ask with Bearer abc123def456ghi please"
    status, shared = await call(http, "POST", f"{server.url}/share", headers=owner, json=body)
    assert status == 201
    url = f"{server.url}{shared['url']}"
    status, public = await call(http, "GET", url)
    assert status == 200
    assert_sanitised(public)
    assert public["title"] == f"Weather, with my key {REDACTED}"
    assert public["messages"][0] == {"role": "user", "text": f"ask with Bearer {REDACTED} please"}
    assert (await call(http, "GET", f"{server.url}/archive", headers=owner))[1] == {"archives": []}

    # Only its owner may delete it; to anyone else it does not exist.
    assert (await call(http, "DELETE", url, headers=alice))[0] == 404
    assert (await call(http, "DELETE", url))[0] == 401
    assert await call(http, "DELETE", url, headers=owner) == (200, {"ok": True})
    status, answer = await call(http, "GET", url)
    assert (status, answer) == (404, {"error": f"no share {shared['id']}"})
    assert (await call(http, "GET", f"{server.url}/share/sh_unknown000000"))[0] == 404


def test_sanitise_for_share_keeps_title_and_text_only() -> None:
    public = sanitise_for_share({**conversation(), "title": "  Lisbon  "})
    assert public == {
        "title": "Lisbon",
        "messages": [
            {"role": "user", "text": "What's the weather in Lisbon tomorrow?"},
            {"role": "assistant", "text": "Let me check."},
            {"role": "assistant", "text": "Sunny, 21C."},
        ],
    }


async def test_nothing_to_share_is_400(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    body = {"messages": [{"role": "system", "content": "x"}, {"role": "tool", "content": "y"}]}
    status, answer = await call(
        http, "POST", f"{server.url}/share", headers=owner_headers(server), json=body
    )
    assert status == 400 and "nothing to share" in answer["error"]


# -- bad input ---------------------------------------------------------------------------------

BAD_BODIES: list[tuple[Any, str]] = [
    ([], "body must be a JSON object"),
    ("text", "body must be a JSON object"),
    (3, "body must be a JSON object"),
    ({}, "messages is missing"),
    ({"title": "x"}, "messages is missing"),
    ({"messages": "hi"}, "messages must be a non-empty array"),
    ({"messages": []}, "messages must be a non-empty array"),
    ({"messages": ["hi"]}, "messages[0] must be an object"),
    ({"messages": [{"content": "hi"}]}, "messages[0].role must be one of"),
    ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role must be one of"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content must be"),
    ({"messages": [{"role": "user", "content": ["hi"]}]}, "messages[0].content[0] must be"),
    (
        {
            "messages": [
                {"role": "user", "content": "a"},
                {"role": "user", "content": [{"text": 1}]},
            ]
        },
        "messages[1].content[0].text must be a string",
    ),
    ({"title": 7, "messages": [{"role": "user", "content": "a"}]}, "title must be a string"),
    (
        {"title": "t" * (MAX_TITLE_CHARS + 1), "messages": [{"role": "user", "content": "a"}]},
        f"title is longer than {MAX_TITLE_CHARS} characters",
    ),
]


@pytest.mark.parametrize("path", ["/archive", "/share"])
async def test_bad_bodies_are_400_naming_the_field(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int, path: str
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner = owner_headers(server)
    for body, words in BAD_BODIES:
        status, answer = await call(http, "POST", f"{server.url}{path}", headers=owner, json=body)
        assert status == 400, body
        assert words in answer["error"], (body, answer)
    status, answer = await call(
        http,
        "POST",
        f"{server.url}{path}",
        headers={**owner, "Content-Type": "application/json"},
        data='{"messages": [',
    )
    assert status == 400 and "not valid JSON" in answer["error"]
    deep = "[" * 50_000 + "]" * 50_000
    status, answer = await call(
        http,
        "POST",
        f"{server.url}{path}",
        headers={**owner, "Content-Type": "application/json"},
        data=deep,
    )
    assert status == 400 and "nested too deeply" in answer["error"]
    nested: Any = "x"
    for _ in range(100):
        nested = {"a": nested}
    body = {"messages": [{"role": "user", "content": "hi"}], "extra": nested}
    status, answer = await call(http, "POST", f"{server.url}{path}", headers=owner, json=body)
    assert status == 400 and "nested too deeply" in answer["error"]
    # The hub is still up and nothing was stored.
    assert (await call(http, "GET", f"{server.url}/api/health"))[0] == 200
    assert (await call(http, "GET", f"{server.url}/archive", headers=owner))[1] == {"archives": []}


async def test_bad_archive_id_for_a_share_is_400(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner = owner_headers(server)
    archive_id = await archive(http, server, conversation(), owner)
    for body, words in (
        ({"archiveId": 12}, "archiveId must be a string"),
        ({"archiveId": archive_id, "messages": []}, "either archiveId or messages"),
    ):
        status, answer = await call(http, "POST", f"{server.url}/share", headers=owner, json=body)
        assert status == 400 and words in answer["error"], answer


# -- limits ------------------------------------------------------------------------------------


async def test_message_limit(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    owner = owner_headers(server)
    many = [{"role": "user", "content": f"m{i}"} for i in range(MAX_MESSAGES + 1)]
    status, answer = await call(
        http, "POST", f"{server.url}/archive", headers=owner, json={"messages": many}
    )
    assert status == 400
    assert answer["error"] == f"messages has {MAX_MESSAGES + 1} entries; the limit is 2000"
    archive_id = await archive(http, server, {"messages": many[:MAX_MESSAGES]}, owner)
    _, listing = await call(http, "GET", f"{server.url}/archive", headers=owner)
    assert (listing["archives"][0]["id"], listing["archives"][0]["messages"]) == (archive_id, 2000)


async def test_titles(start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int) -> None:
    server = await hub_up(start_hub, closed_port)
    owner = owner_headers(server)
    words = "word " * 40
    long_title = "t" * MAX_TITLE_CHARS
    cases: list[tuple[dict[str, Any], str]] = [
        ({"messages": [{"role": "user", "content": words}]}, words[:DEFAULT_TITLE_CHARS].strip()),
        (
            {"title": "  ", "messages": [{"role": "user", "content": [{"text": "Hi\n there"}]}]},
            "Hi there",
        ),
        ({"messages": [{"role": "assistant", "content": "hello"}]}, "Untitled conversation"),
        ({"title": long_title, "messages": [{"role": "user", "content": "a"}]}, long_title),
    ]
    for body, expected in cases:
        archive_id = await archive(http, server, body, owner)
        _, fetched = await call(http, "GET", f"{server.url}/archive/{archive_id}", headers=owner)
        assert fetched["title"] == expected
        assert len(fetched["title"]) <= MAX_TITLE_CHARS


async def test_body_over_the_size_limit_is_413_json(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    huge = {"messages": [{"role": "user", "content": "x" * (4 * 1024 * 1024)}]}
    status, answer = await call(
        http, "POST", f"{server.url}/archive", headers=owner_headers(server), json=huge
    )
    assert status == 413 and "too large" in answer["error"]
    assert (await call(http, "GET", f"{server.url}/api/health"))[0] == 200
