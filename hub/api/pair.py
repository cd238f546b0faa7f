"""Pairing a phone over HTTP (docs/lan.md); the rules live in :mod:`hub.lan.pairing`.

``POST /api/pair/offer`` (owner) makes a code and its QR; ``POST /api/pair`` (anonymous: the
phone has no credential yet, the code is one) trades a code for a device token;
``GET /api/tokens`` and ``DELETE /api/tokens?id=`` (owner) list and revoke what was paired.
"""

from __future__ import annotations

from aiohttp import web

from hub.api.auth import Access, access, signed_in
from hub.api.body import read_json_body
from hub.api.errors import http_error
from hub.api.keys import HUB
from hub.api.spec import OK, STRING, Operation, array, documented, matching, obj
from hub.lan.pairing import (
    MAX_PAIR_BODY_BYTES,
    PLATFORMS,
    Pairing,
    PairingLocked,
    make_offer,
    parse_pair_request,
)

routes = web.RouteTableDef()

#: What a request with no peer address (a Unix socket) is throttled as.
UNKNOWN_ADDRESS = "unknown"


def _locked(exc: PairingLocked) -> web.Response:
    """429 with the sentence and ``Retry-After``, so a phone app can wait the right time."""
    return web.json_response(
        {"error": str(exc), "retryAfter": exc.retry_after},
        status=exc.status,
        headers={"Retry-After": str(exc.retry_after)},
    )


@routes.post("/api/pair/offer")
@access(Access.OWNER)
@documented(Operation("a new pairing code and QR", answers={200: obj({"code": STRING})}))
async def offer(request: web.Request) -> web.Response:
    """A new code and QR (the older open offer stops working). lanUrl and the certificate
    fingerprint are what the running hub knows of itself; either may be null."""
    hub = request.app[HUB]
    made = make_offer(hub, lan_url=hub.lan.url, fingerprint=hub.lan.fingerprint)
    return web.json_response(made.as_json())


@routes.post("/api/pair")
@access(Access.ANONYMOUS)
@documented(
    Operation(
        "a phone pairs with a code",
        answers={200: obj({"token": STRING, "deviceId": STRING}, accountToken=STRING)},
        body=obj(
            {
                "code": matching(r"^[0-9]{6}$"),
                "name": matching(r"^[\w.'-][\w .'-]{0,63}$"),
                "platform": {"enum": list(PLATFORMS)},
            }
        ),
        # 404: no offer for this phone; 410: a code that was right once (expired, used, voided)
        errors=(404, 410),
    )
)
async def pair(request: web.Request) -> web.Response:
    pairing = Pairing(request.app[HUB])
    address = request.remote or UNKNOWN_ADDRESS
    try:
        pairing.check_unlocked(address)  # a locked address is refused before its body is read
        wanted = parse_pair_request(await read_json_body(request, MAX_PAIR_BODY_BYTES))
        paired = pairing.redeem(wanted, address)
    except PairingLocked as exc:
        return _locked(exc)
    return web.json_response(paired.as_json())


@routes.get("/api/tokens")
@access(Access.OWNER)
@documented(
    Operation(
        "the paired phones' tokens (never the tokens themselves)",
        answers={200: obj({"tokens": array(obj())})},
    )
)
async def list_tokens(request: web.Request) -> web.Response:
    paired = Pairing(request.app[HUB]).paired(signed_in(request).id)
    return web.json_response({"tokens": paired})


@routes.delete("/api/tokens")
@access(Access.OWNER)
@documented(
    Operation(
        "revoke a paired phone's token",
        answers={200: OK},
        query={"id": {"type": "string", "minLength": 1}},
        required_query=("id",),
        errors=(404,),
    )
)
async def revoke_token(request: web.Request) -> web.Response:
    device_id = request.query.get("id", "")
    if not device_id:
        raise http_error(web.HTTPBadRequest, "id is required (a deviceId from GET /api/tokens)")
    Pairing(request.app[HUB]).revoke(signed_in(request).id, device_id)
    return web.json_response({"ok": True})
