"""Direct messages between two people of a real hub: the tools, the routes, the notice each
recipient gets, and the ``messaged`` edge of the community graph."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from fakes.ollama import FakeOllama
from hub.agent.tools.messages import read_messages, send_message_tool
from hub.api.server import RunningServer
from hub.devices.notify import NOTIFY_KIND
from hub.messages.store import MAX_LIST, MAX_TEXT, Inbox
from hub.people.identity import User
from hub.tinys.social import MESSAGED, PLATFORM, user_node
from tests.conftest import StartHub, owner_headers
from tests.sse import tool_in_a_turn
from tests.toolcall import result_text, use_tool


def person(server: RunningServer, name: str, login: str) -> tuple[User, dict[str, str]]:
    """A second (third...) person of the hub, and the headers that sign in as them."""
    user = server.hub.identity.add_user(name, login=login)
    token = server.hub.identity.issue_token(user, label="test")
    return user, {"Authorization": f"Bearer {token}"}


def data(result: dict[str, Any]) -> dict[str, Any]:
    json_blocks = [b["json"] for b in result["content"] if "json" in b]
    assert json_blocks, result
    found: dict[str, Any] = json_blocks[0]
    return found


def messaged_weight(server: RunningServer, sender: User, recipient: User) -> float | None:
    row = server.hub.db.execute(
        "SELECT weight, visibility FROM edge WHERE owner = ? AND rel = ? AND src = ? AND dst = ?"
        " AND valid_to IS NULL",
        [PLATFORM, MESSAGED, user_node(sender.id), user_node(recipient.id)],
    ).fetchone()
    if row is None:
        return None
    assert row[1] == "private"  # who writes to whom is not public
    return float(row[0])


async def test_a_message_to_a_login_reaches_the_inbox_and_reading_marks_it_read(
    start_hub: StartHub,
) -> None:
    server = await start_hub()
    ann, _ = person(server, "Ann", "ann")
    bea, _ = person(server, "Bea", "bea")

    sent = await use_tool(server, send_message_tool, ann, to="@bea", text="Tea at four?")
    assert sent["status"] == "success", sent
    assert result_text(sent) == "Sent to @bea."

    inbox = await use_tool(server, read_messages, bea)
    overview = data(inbox)
    assert overview["unread"] == 1
    (line,) = overview["conversations"]
    assert (line["with"], line["unread"], line["last"]["text"]) == ("@ann", 1, "Tea at four?")
    assert "@ann (1 unread)" in result_text(inbox)

    opened = await use_tool(server, read_messages, bea, with_login="@ann")
    assert data(opened)["markedRead"] == 1
    (message,) = data(opened)["messages"]
    assert (message["from"], message["to"], message["text"]) == ("@ann", "@bea", "Tea at four?")
    assert data(await use_tool(server, read_messages, bea))["unread"] == 0
    # the sender sees the conversation too, with nothing unread for them
    (theirs,) = data(await use_tool(server, read_messages, ann))["conversations"]
    assert (theirs["with"], theirs["unread"]) == ("@bea", 0)


async def test_a_message_is_pushed_to_the_recipients_ring_and_dial_in_devices(
    start_hub: StartHub,
) -> None:
    server = await start_hub()
    ann, _ = person(server, "Ann", "ann")
    bea, _ = person(server, "Bea", "bea")
    phone = server.hub.devices.registry.enroll(bea.id, name="bea-phone", kind="daemon")[0]

    await use_tool(server, send_message_tool, ann, to="bea", text="The parcel came")

    (envelope,) = server.hub.devices.mailbox.pull(phone)
    assert json.loads(envelope.payload) == {
        "type": "notify",
        "title": "Message from @ann",
        "body": "The parcel came",
        "tag": "message:ann",
        "url": "",
    }
    (event,) = server.hub.devices.events.recent(bea.id)
    assert (event.kind, event.detail["title"]) == (NOTIFY_KIND, "Message from @ann")
    assert server.hub.devices.events.recent(ann.id) == []


async def test_a_message_to_a_tiny_reaches_its_owner_noting_the_tiny(
    start_hub: StartHub,
) -> None:
    server = await start_hub()
    ann, _ = person(server, "Ann", "ann")
    bea, _ = person(server, "Bea", "bea")
    server.hub.tinys.create(bea, {"name": "chef", "systemPrompt": "Cook."})

    sent = await use_tool(server, send_message_tool, ann, to="chef", text="Loved the risotto")
    assert result_text(sent) == "Sent to @bea (via their tiny chef)."
    (line,) = data(await use_tool(server, read_messages, bea))["conversations"]
    assert (line["with"], line["last"]["tiny"]) == ("@ann", "chef")
    (event,) = server.hub.devices.events.recent(bea.id)
    assert event.detail["title"] == "Message from @ann (to your tiny chef)"


async def test_each_message_weighs_up_one_private_messaged_edge(start_hub: StartHub) -> None:
    server = await start_hub()
    ann, _ = person(server, "Ann", "ann")
    bea, _ = person(server, "Bea", "bea")
    assert messaged_weight(server, ann, bea) is None
    for text in ("one", "two", "three"):
        await use_tool(server, send_message_tool, ann, to="@bea", text=text)
    await use_tool(server, send_message_tool, bea, to="@ann", text="hi back")
    assert messaged_weight(server, ann, bea) == 3.0
    assert messaged_weight(server, bea, ann) == 1.0


async def test_bad_messages_get_a_clear_error_and_store_nothing(start_hub: StartHub) -> None:
    server = await start_hub()
    ann, _ = person(server, "Ann", "ann")
    bea, _ = person(server, "Bea", "bea")
    server.hub.tinys.create(bea, {"name": "diary", "systemPrompt": "x", "visibility": "private"})
    server.hub.tinys.create(ann, {"name": "mine", "systemPrompt": "x"})
    refusals = {
        ("@nobody", "hello"): "nobody on this hub is @nobody",
        ("@ann", "hello"): "that is you",
        ("mine", "hello"): "that is you",
        ("diary", "hello"): "nobody on this hub is diary",  # private: never revealed
        ("", "hello"): "say who the message is for",
        ("@bea", "   "): "a message needs some text",
        ("@bea", "x" * (MAX_TEXT + 1)): f"at most {MAX_TEXT} characters",
    }
    for (to, text), why in refusals.items():
        result = await use_tool(server, send_message_tool, ann, to=to, text=text)
        assert result["status"] == "error", (to, result)
        assert why in result_text(result), (to, result_text(result))
    anonymous = await use_tool(server, send_message_tool, None, to="@bea", text="hi")
    assert result_text(anonymous) == "Login required"
    assert result_text(await use_tool(server, read_messages, None)) == "Login required"
    assert server.hub.db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    unknown = await use_tool(server, read_messages, ann, with_login="@nobody")
    assert result_text(unknown) == "nobody on this hub is @nobody"


async def test_the_inbox_routes_send_list_and_read(start_hub: StartHub) -> None:
    server = await start_hub()
    _, ann = person(server, "Ann", "ann")
    _, bea = person(server, "Bea", "bea")
    url = server.url + "/api/messages"
    async with aiohttp.ClientSession() as http:
        for n in range(3):
            body = {"to": "@bea", "text": f"note {n}"}
            async with http.post(url, json=body, headers=ann) as response:
                assert response.status == 201
                assert (await response.json())["message"]["text"] == f"note {n}"
        async with http.get(url, headers=bea) as response:
            assert (await response.json())["unread"] == 3
        async with http.get(url + "/ann", params={"limit": 2}, headers=bea) as response:
            page = await response.json()
        assert [m["text"] for m in page["messages"]] == ["note 1", "note 2"]
        assert (page["more"], page["markedRead"], page["with"]) == (True, 3, "@ann")
        before = {"limit": 2, "before": page["messages"][0]["id"]}
        async with http.get(url + "/ann", params=before, headers=bea) as response:
            earlier = await response.json()
        assert ([m["text"] for m in earlier["messages"]], earlier["more"]) == (["note 0"], False)
        async with http.get(url, headers=bea) as response:
            assert (await response.json())["unread"] == 0
        # the owner's inbox is their own: nothing of Ann and Bea's shows there
        async with http.get(url, headers=owner_headers(server)) as response:
            assert (await response.json())["conversations"] == []


async def test_a_page_at_the_largest_limit_still_says_there_is_more(start_hub: StartHub) -> None:
    server = await start_hub()
    ann, _ = person(server, "Ann", "ann")
    bea, headers = person(server, "Bea", "bea")
    inbox = Inbox(server.hub.db)  # the store writes them: 250 sends are not the point here
    for n in range(MAX_LIST + 50):
        inbox.add(ann.id, bea.id, f"note {n}")
    url = f"{server.url}/api/messages/ann"
    async with aiohttp.ClientSession() as http:
        async with http.get(url, params={"limit": MAX_LIST}, headers=headers) as response:
            page = await response.json()
        assert len(page["messages"]) == MAX_LIST and page["more"] is True
        assert page["messages"][-1]["text"] == f"note {MAX_LIST + 49}"
        older = {"limit": MAX_LIST, "before": page["messages"][0]["id"]}
        async with http.get(url, params=older, headers=headers) as response:
            rest = await response.json()
    assert (len(rest["messages"]), rest["more"]) == (50, False)


async def test_the_inbox_routes_refuse_bad_input_with_a_sentence(start_hub: StartHub) -> None:
    server = await start_hub()
    _, ann = person(server, "Ann", "ann")
    url = server.url + "/api/messages"
    cases: list[tuple[str, str, Any, int, str]] = [
        ("POST", url, {"to": "@nobody", "text": "hi"}, 404, "nobody on this hub is @nobody"),
        ("POST", url, {"to": "@ann", "text": "hi"}, 400, "that is you"),
        ("POST", url, {"to": "@owner", "text": ""}, 400, "a message needs some text"),
        ("POST", url, {"to": "@owner"}, 400, "must both be strings"),
        ("POST", url, {"to": "@owner", "text": "hi", "cc": "x"}, 400, "unknown field(s): cc"),
        ("POST", url, ["to", "text"], 400, "body must be a JSON object"),
        ("GET", url + "/nobody", None, 404, "nobody on this hub is @nobody"),
        ("GET", url + "/owner?limit=0", None, 400, "limit"),
    ]
    async with aiohttp.ClientSession() as http:
        for method, where, body, status, why in cases:
            async with http.request(method, where, json=body, headers=ann) as response:
                answer = await response.json()
                assert response.status == status, (method, where, answer)
                assert why in answer["error"], (method, where, answer)
        async with http.get(url) as response:
            assert response.status == 401


async def test_send_message_works_in_a_chat_turn(
    fake_ollama: FakeOllama, start_hub: StartHub
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    bea, _ = person(server, "Bea", "bea")
    call = {"to": "@bea", "text": "Dinner at eight"}
    result, _ = await tool_in_a_turn(server, fake_ollama, "send_message", call)
    assert result["status"] == "success", result
    (line,) = Inbox(server.hub.db).overview(bea.id)
    assert (line.login, line.unread, line.last.text) == ("owner", 1, "Dinner at eight")
    result, _ = await tool_in_a_turn(server, fake_ollama, "read_messages", {"limit": 5})
    assert result["status"] == "success", result
    assert "1 conversation(s), 0 unread message(s)." in json.dumps(result)
