"""Money over HTTP (docs/payments.md). Every route answers 404 ``{"error": "payments
disabled"}`` until ``payments.enabled``; the rules live in :mod:`hub.payments.ledger`.

``POST /api/payments/confirm`` is the only way money moves: a client calls it with the payer's
own token after showing them the quote. No tool calls it.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.body import read_json_body
from hub.api.keys import HUB
from hub.api.spec import BOOLEAN, INTEGER, STRING, Operation, closed, documented, obj
from hub.payments.ledger import PaymentError, Payments, payments_of

routes = web.RouteTableDef()

MAX_PAYMENT_BODY_BYTES = 4096
QUOTE = obj({"quoteId": STRING, "kind": STRING, "amountMicro": INTEGER, "to": STRING})
WALLET = obj({"balanceMicro": INTEGER, "balance": STRING, "entries": {"type": "array"}})
#: Statuses every money route may answer beyond the common ones: 404 while payments are off.
OFF = (404,)


def _enabled(request: web.Request) -> Payments:
    payments = payments_of(request.app[HUB])
    payments.require_enabled()
    return payments


async def _body(request: web.Request, fields: set[str]) -> dict[str, Any]:
    body = await read_json_body(request, MAX_PAYMENT_BODY_BYTES)
    if not isinstance(body, dict):
        raise PaymentError("body must be a JSON object")
    unknown = sorted(set(body) - fields)
    if unknown:
        raise PaymentError(f"unknown field(s): {', '.join(unknown)} ({', '.join(sorted(fields))})")
    return body


@routes.get("/api/wallet")
@documented(Operation("your balance and ledger (read only)", answers={200: WALLET}, errors=OFF))
async def wallet(request: web.Request) -> web.Response:
    return web.json_response(_enabled(request).wallet(signed_in(request)))


@routes.post("/api/wallet/deposit")
@access(Access.OWNER)
@documented(
    Operation(
        "record money a person paid in from outside the hub",
        answers={200: obj({"balanceMicro": INTEGER})},
        body=closed({"login": STRING, "amountMicro": INTEGER}, memo=STRING),
        errors=OFF,
    )
)
async def deposit(request: web.Request) -> web.Response:
    payments = _enabled(request)
    body = await _body(request, {"login", "amountMicro", "memo"})
    login = body.get("login")
    person = request.app[HUB].identity.by_login(login) if isinstance(login, str) else None
    if person is None:
        raise PaymentError("login must be the @login of a person on this hub")
    balance = payments.deposit(person.id, body.get("amountMicro"), body.get("memo"))
    return web.json_response({"balanceMicro": balance})


@routes.post("/api/prices")
@documented(
    Operation(
        "price one message to a tiny you own (0: free)",
        answers={200: obj({"tiny": STRING, "priceMicro": INTEGER})},
        body=closed({"tiny": STRING, "priceMicro": INTEGER}),
        errors=OFF,
    )
)
async def set_price(request: web.Request) -> web.Response:
    payments = _enabled(request)
    body = await _body(request, {"tiny", "priceMicro"})
    price = payments.set_price(signed_in(request), body.get("tiny"), body.get("priceMicro"))
    return web.json_response({"tiny": str(body["tiny"]).strip().lower(), "priceMicro": price})


@routes.post("/api/payments/quote")
@documented(
    Operation(
        "a quote: a transfer to a person, or one message to a priced tiny; nothing moves",
        answers={200: obj({"quote": QUOTE})},
        body=closed(
            {"kind": {"enum": ["transfer", "message"]}},
            to=STRING,
            amountMicro=INTEGER,
            memo=STRING,
            tiny=STRING,
        ),
        errors=OFF,
    )
)
async def quote(request: web.Request) -> web.Response:
    payments = _enabled(request)
    body = await _body(request, {"kind", "to", "amountMicro", "memo", "tiny"})
    payer = signed_in(request)
    if body.get("kind") == "transfer":
        to = body.get("to")
        payee = request.app[HUB].identity.by_login(to) if isinstance(to, str) else None
        made = payments.quote_transfer(payer, payee, body.get("amountMicro"), body.get("memo"))
    elif body.get("kind") == "message":
        made = payments.quote_message(payer, body.get("tiny"))
    else:
        raise PaymentError('kind must be "transfer" (to, amountMicro) or "message" (tiny)')
    return web.json_response({"quote": made.as_json()})


@routes.post("/api/payments/confirm")
@documented(
    Operation(
        "confirm your quote: the money moves once (a repeat moves nothing)",
        answers={200: obj({"quote": QUOTE, "moved": BOOLEAN})},
        body=closed({"quoteId": STRING}),
        errors=(*OFF, 402, 410),
    )
)
async def confirm(request: web.Request) -> web.Response:
    payments = _enabled(request)
    body = await _body(request, {"quoteId"})
    confirmed, moved = payments.confirm(signed_in(request), body.get("quoteId"))
    return web.json_response({"quote": confirmed.as_json(), "moved": moved})
