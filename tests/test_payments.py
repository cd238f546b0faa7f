"""Money, switched off (docs/payments.md): every money route answers 404 ``payments disabled``
and every money tool says so until ``payments.enabled``; with it on, a quote moves nothing until
the payer confirms it from a client with their own token, confirming moves it once, and no chat
turn — whatever the model calls — can move money. Against a real hub, the fake Ollama and
strands' real Ollama provider.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from hub import contracts as c
from hub.agent.tools import money
from hub.agent.tools.context import ToolContext
from hub.api.server import RunningServer
from hub.payments.ledger import SALE_FEE_MICRO, Payments, payments_of
from hub.people.identity import User
from hub.store.migrations import open_database
from tests.conftest import StartHub, owner_headers
from tests.daemon import send
from tests.sse import post_chat
from tests.toolcall import call_tool, result_text

MONEY_ROUTES = [
    ("GET", "/api/wallet", None),
    ("POST", "/api/wallet/deposit", {"login": "ann", "amountMicro": 5}),
    ("POST", "/api/prices", {"tiny": "tiny", "priceMicro": 0}),
    ("POST", "/api/payments/quote", {"kind": "transfer", "to": "@ann", "amountMicro": 5}),
    ("POST", "/api/payments/confirm", {"quoteId": "q_x"}),
]
DOLLAR = 1_000_000


@dataclass
class Person:
    user: User
    headers: dict[str, str]


def person(server: RunningServer, name: str) -> Person:
    user = server.hub.identity.add_user(name, login=name.lower())
    token = server.hub.identity.issue_token(user, "test")
    return Person(user, {"Authorization": f"Bearer {token}"})


def use_tool(server: RunningServer, tool: Any, caller: User | None, **arguments: Any) -> Any:
    """Call a money tool in a turn of ``caller`` (None: anonymous) with the default tiny."""
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    return dict(call_tool(tool, ToolContext(server.hub, caller, tiny), **arguments))


def balance(server: RunningServer, who: Person) -> int:
    return payments_of(server.hub).balance(who.user.id)


def ledger_rows(server: RunningServer) -> int:
    return int(server.hub.db.execute("SELECT COUNT(*) FROM ledger").fetchone()[0])


async def quote(
    http: aiohttp.ClientSession, server: RunningServer, who: Person, body: dict[str, Any]
) -> dict[str, Any]:
    status, answer = await send(http, "POST", f"{server.url}/api/payments/quote", body, who.headers)
    assert status == 200, answer
    return dict(answer["quote"])


async def confirm(
    http: aiohttp.ClientSession, server: RunningServer, who: Person, quote_id: str
) -> tuple[int, Any]:
    return await send(
        http, "POST", f"{server.url}/api/payments/confirm", {"quoteId": quote_id}, who.headers
    )


# --- off ----------------------------------------------------------------------------------------


async def test_every_money_route_and_tool_is_off_by_default(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub()
    ann = person(server, "Ann")
    for headers in (ann.headers, owner_headers(server)):
        for method, path, body in MONEY_ROUTES:
            status, answer = await send(http, method, f"{server.url}{path}", body, headers)
            if path == "/api/wallet/deposit" and headers is ann.headers:
                assert status == 403  # an owner route refuses a member before anything else
                continue
            assert (status, answer) == (404, {"error": "payments disabled"}), (method, path)
    arguments: dict[str, dict[str, Any]] = {
        "wallet": {},
        "set_price": {"tiny": "tiny", "price_micro": 0},
        "pay_x402": {"target": "tiny"},
        "make_payment": {"to": "@owner", "amount_micro": 5},
    }
    for tool in (money.wallet, money.set_price, money.pay_x402, money.make_payment):
        result = use_tool(server, tool, ann.user, **arguments[tool.tool_name])
        assert result["status"] == "error" and result_text(result) == "payments disabled"
        anonymous = use_tool(server, tool, None, **arguments[tool.tool_name])
        assert result_text(anonymous) == c.LOGIN_REQUIRED
    assert ledger_rows(server) == 0


async def test_the_settled_header_is_not_read_while_payments_are_off(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    ann = person(server, "Ann")
    # a price left from a time payments were on must not wall a tiny while they are off
    server.hub.db.execute(
        "INSERT INTO tiny_prices (tiny, price_micro, updated_at) VALUES ('tiny', 5000, 0)"
    )
    fake_ollama.script(Reply(chunks=["free today"]))
    headers = {**ann.headers, c.H_X402_SETTLED: "not-a-receipt"}
    transcript = await post_chat(
        server.url, {"messages": [{"role": "user", "content": "hi"}]}, headers
    )
    assert transcript.done and "free today" in transcript.text


# --- on -----------------------------------------------------------------------------------------


@pytest.fixture
async def paying(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url, payments_enabled=True)


async def test_a_quote_moves_nothing_until_its_payer_confirms_and_then_once(
    paying: RunningServer, http: aiohttp.ClientSession
) -> None:
    server = paying
    ann, bea = person(server, "Ann"), person(server, "Bea")
    status, deposited = await send(
        http,
        "POST",
        f"{server.url}/api/wallet/deposit",
        {"login": "@ann", "amountMicro": 2 * DOLLAR, "memo": "pocket money"},
        owner_headers(server),
    )
    assert (status, deposited) == (200, {"balanceMicro": 2 * DOLLAR})

    made = use_tool(server, money.make_payment, ann.user, to="@bea", amount_micro=DOLLAR)
    assert made["status"] == "success" and "cannot approve" in result_text(made)
    quote_id = made["content"][1]["json"]["quote"]["quoteId"]
    assert (balance(server, ann), balance(server, bea)) == (2 * DOLLAR, 0)

    assert (await confirm(http, server, bea, quote_id))[0] == 404  # not Bea's to confirm
    status, _ = await send(
        http, "POST", f"{server.url}/api/payments/confirm", {"quoteId": quote_id}
    )
    assert status == 401  # nor anyone's without a token
    assert (balance(server, ann), balance(server, bea)) == (2 * DOLLAR, 0)

    status, confirmed = await confirm(http, server, ann, quote_id)
    assert status == 200 and confirmed["moved"] is True and confirmed["quote"]["confirmed"]
    assert (balance(server, ann), balance(server, bea)) == (DOLLAR, DOLLAR)
    rows = ledger_rows(server)
    for _ in range(3):  # a retried confirmation moves nothing more
        status, again = await confirm(http, server, ann, quote_id)
        assert status == 200 and again["moved"] is False
    assert (balance(server, ann), balance(server, bea)) == (DOLLAR, DOLLAR)
    assert ledger_rows(server) == rows

    status, wallet = await send(http, "GET", f"{server.url}/api/wallet", None, bea.headers)
    assert status == 200 and wallet["balanceMicro"] == DOLLAR
    assert [(e["kind"], e["deltaMicro"]) for e in wallet["entries"]] == [("received", DOLLAR)]


async def test_not_enough_money_moves_nothing(
    paying: RunningServer, http: aiohttp.ClientSession
) -> None:
    server = paying
    ann, _ = person(server, "Ann"), person(server, "Bea")
    made = await quote(http, server, ann, {"kind": "transfer", "to": "@bea", "amountMicro": DOLLAR})
    status, answer = await confirm(http, server, ann, made["quoteId"])
    assert status == 402 and "not enough money" in answer["error"]
    assert ledger_rows(server) == 0
    payments_of(server.hub).deposit(ann.user.id, DOLLAR)
    status, answer = await confirm(http, server, ann, made["quoteId"])  # still confirmable
    assert status == 200 and answer["moved"] is True


async def test_a_chat_turn_cannot_move_money(
    paying: RunningServer, fake_ollama: FakeOllama
) -> None:
    server = paying
    ann, bea = person(server, "Ann"), person(server, "Bea")
    payments_of(server.hub).deposit(ann.user.id, 5 * DOLLAR)
    bea_tiny, _ = server.hub.tinys.create(bea.user, {"name": "bea-tiny"})
    payments_of(server.hub).set_price(bea.user, bea_tiny.name, 10_000)
    calls = [
        {"function": {"name": "make_payment", "arguments": {"to": "@bea", "amount_micro": DOLLAR}}},
        {"function": {"name": "pay_x402", "arguments": {"target": "bea-tiny"}}},
        {"function": {"name": "confirm_payment", "arguments": {"quoteId": "q_any"}}},
        {"function": {"name": "set_price", "arguments": {"tiny": "tiny", "price_micro": 0}}},
    ]
    fake_ollama.script(Reply(chunks=[], tool_calls=calls), Reply(chunks=["Done."]))
    transcript = await post_chat(
        server.url, {"messages": [{"role": "user", "content": "pay Bea $1"}]}, ann.headers
    )
    assert transcript.done
    results = {
        e["toolResult"]["name"]: e["toolResult"] for e in transcript.of_type(c.EV_AFTER_TOOL)
    }
    assert results["make_payment"]["status"] == "success"
    assert results["pay_x402"]["status"] == "success"
    assert results["set_price"]["status"] == "error"  # the owner's tiny is not Ann's to price
    assert "confirm_payment" not in results or results["confirm_payment"]["status"] == "error"
    quotes = server.hub.db.execute(
        "SELECT COUNT(*), COUNT(confirmed_at) FROM payment_quotes"
    ).fetchone()
    assert tuple(quotes) == (2, 0)
    assert (balance(server, ann), balance(server, bea)) == (5 * DOLLAR, 0)
    assert [row[0] for row in server.hub.db.execute("SELECT kind FROM ledger")] == ["deposit"]


async def test_a_priced_tiny_takes_one_confirmed_quote_per_message(
    paying: RunningServer, fake_ollama: FakeOllama, http: aiohttp.ClientSession
) -> None:
    server = paying
    ann, bea = person(server, "Ann"), person(server, "Bea")
    payments_of(server.hub).deposit(ann.user.id, DOLLAR)
    server.hub.tinys.create(bea.user, {"name": "bea-tiny"})
    status, priced = await send(
        http,
        "POST",
        f"{server.url}/api/prices",
        {"tiny": "bea-tiny", "priceMicro": 20_000},
        bea.headers,
    )
    assert (status, priced) == (200, {"tiny": "bea-tiny", "priceMicro": 20_000})
    chat = f"{server.url}/api/chat"
    body = {"messages": [{"role": "user", "content": "hello"}]}
    headers = {**ann.headers, c.H_NAME: "bea-tiny"}

    status, answer = await send(http, "POST", chat, body, headers)
    assert status == 402 and c.H_X402_SETTLED in answer["error"]
    made = await quote(http, server, ann, {"kind": "message", "tiny": "bea-tiny"})
    status, answer = await send(
        http, "POST", chat, body, {**headers, c.H_X402_SETTLED: made["quoteId"]}
    )
    assert status == 402  # quoted but not confirmed: not paid
    assert (await confirm(http, server, ann, made["quoteId"]))[0] == 200
    assert balance(server, ann) == DOLLAR - 20_000
    assert balance(server, bea) == 20_000 - SALE_FEE_MICRO
    paid = {**headers, c.H_X402_SETTLED: made["quoteId"]}
    status, _ = await send(http, "POST", chat, {"messages": "not a list"}, paid)
    assert status == 400  # a bad request does not spend the receipt (the turn below uses it)
    fake_ollama.script(Reply(chunks=["paid answer"]))
    transcript = await post_chat(server.url, body, paid)
    assert "paid answer" in transcript.text
    status, answer = await send(http, "POST", chat, body, paid)
    assert status == 402  # a receipt pays for one message
    fake_ollama.script(Reply(chunks=["my own"]))
    own = await post_chat(server.url, body, {**bea.headers, c.H_NAME: "bea-tiny"})
    assert "my own" in own.text  # the tiny's owner never pays


async def test_money_routes_refuse_bad_input(
    paying: RunningServer, http: aiohttp.ClientSession
) -> None:
    server = paying
    ann, _ = person(server, "Ann"), person(server, "Bea")
    quotes = f"{server.url}/api/payments/quote"
    bad: list[tuple[str, Any, int]] = [
        (quotes, {"kind": "transfer", "to": "@bea", "amountMicro": -5}, 400),
        (quotes, {"kind": "transfer", "to": "@bea", "amountMicro": True}, 400),
        (quotes, {"kind": "transfer", "to": "@bea", "amountMicro": "5"}, 400),
        (quotes, {"kind": "transfer", "to": "@bea", "amountMicro": 10**15}, 400),
        (quotes, {"kind": "transfer", "to": "@nobody", "amountMicro": 5}, 400),
        (quotes, {"kind": "transfer", "to": "@ann", "amountMicro": 5}, 400),
        (quotes, {"kind": "transfer", "to": "@bea", "amountMicro": 5, "approve": True}, 400),
        (quotes, {"kind": "message", "tiny": "tiny"}, 400),  # free: nothing to pay
        (quotes, {"kind": "refund"}, 400),
        (quotes, [1], 400),
        (f"{server.url}/api/prices", {"tiny": "tiny", "priceMicro": 50}, 400),
        (f"{server.url}/api/prices", {"tiny": "nope", "priceMicro": 0}, 400),
        (f"{server.url}/api/payments/confirm", {"quoteId": ""}, 400),
        (f"{server.url}/api/payments/confirm", {"quoteId": "q_nope"}, 404),
    ]
    for url, body, expected in bad:
        status, answer = await send(http, "POST", url, body, ann.headers)
        assert status == expected, (url, body, answer)
        assert answer["error"]
    assert ledger_rows(server) == 0


def test_reputation_can_never_enter_the_ledger(tmp_path: Path) -> None:
    db = open_database(tmp_path / "hub.db")
    db.execute("INSERT INTO users (id, name, role, created_at) VALUES ('u1', 'Ann', 'member', 0)")
    for kind in ("follow_received", "mutual_follow", "reputation"):
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(
                "INSERT INTO ledger (user_id, delta_micro, kind, ref, created_at)"
                " VALUES ('u1', 10, ?, 'r1', 0)",
                [kind],
            )
    assert Payments(db, enabled=True).balance("u1") == 0
