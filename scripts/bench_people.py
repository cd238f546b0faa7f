"""People and payments, against an in-process hub on loopback (payments on).

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``people_add_p50``: ``POST /api/people`` as the owner → the person and their pairing code (the
  offer is written and its QR drawn); each answer is checked to carry a 6-digit code.
- ``people_remove_keep_p50``: ``DELETE /api/people/<login> {"data": "keep"}`` of a person with
  a token and a paired phone; after each, their token is checked to answer 401.
- ``people_remove_purge_p50``: the same with ``"purge"`` for a person with 20 facts (and their
  vectors) and a private tiny; after each, their facts and login are checked gone.
- ``payment_quote_confirm_p50``: ``POST /api/payments/quote`` (a transfer) then
  ``POST /api/payments/confirm`` with the payer's token; each confirmation is checked to have
  moved the money once.

``python -m scripts.bench_people [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from typing import Any

import aiohttp

from scripts.bench_common import BenchmarkFailed, owner_headers, percentile, running_hub
from scripts.bench_rows import run_alone

FACTS_PER_PERSON = 20
AMOUNT_MICRO = 1_000


async def _call(
    http: aiohttp.ClientSession, method: str, url: str, headers: dict[str, str], body: Any = None
) -> Any:
    async with http.request(method, url, json=body, headers=headers) as response:
        answer = await response.json()
        if response.status != 200:
            raise BenchmarkFailed(f"{method} {url}: {response.status} {answer}")
        return answer


async def _status(http: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> int:
    async with http.get(url, headers=headers) as response:
        await response.read()
        return response.status


async def _add(http: aiohttp.ClientSession, url: str, owner: dict[str, str], name: str) -> float:
    started = time.perf_counter()
    added = await _call(http, "POST", f"{url}/api/people", owner, {"name": name})
    elapsed = time.perf_counter() - started
    if not re.fullmatch(r"\d{6}", added["pairing"]["code"]):
        raise BenchmarkFailed(f"no pairing code for {name}: {added}")
    return elapsed * 1000


async def _person(
    http: aiohttp.ClientSession, url: str, owner: dict[str, str], name: str, facts: int
) -> tuple[str, dict[str, str]]:
    """A person with a token, a paired phone and ``facts`` facts; their login and headers."""
    added = await _call(http, "POST", f"{url}/api/people", owner, {"name": name})
    pair = {"code": added["pairing"]["code"], "name": "phone", "platform": "android"}
    paired = await _call(http, "POST", f"{url}/api/pair", {}, pair)
    headers = {"Authorization": f"Bearer {paired['accountToken']}"}
    for n in range(facts):
        fact = {"fact": f"{name} keeps spare key number {n} in drawer {n % 7}"}
        await _call(http, "POST", f"{url}/learnings", headers, fact)
    return added["person"]["login"], headers


async def _remove(
    http: aiohttp.ClientSession, server: Any, owner: dict[str, str], data: str, facts: int, n: int
) -> float:
    url = server.url
    login, headers = await _person(http, url, owner, f"Person {data} {n}", facts)
    user = server.hub.identity.by_login(login)
    started = time.perf_counter()
    await _call(http, "DELETE", f"{url}/api/people/{login}", owner, {"data": data})
    elapsed = time.perf_counter() - started
    if await _status(http, f"{url}/api/devices", headers) != 401:
        raise BenchmarkFailed(f"@{login}'s token still works after removal")
    if data == "purge" and (
        server.hub.identity.by_login(login) is not None or server.hub.memory.count(user.id)
    ):
        raise BenchmarkFailed(f"@{login} was not purged")
    return elapsed * 1000


async def _pay(
    http: aiohttp.ClientSession, server: Any, payer: Any, headers: dict[str, str]
) -> float:
    from hub.payments.ledger import payments_of

    url = server.url
    before = payments_of(server.hub).balance(payer.id)
    started = time.perf_counter()
    quote = await _call(
        http,
        "POST",
        f"{url}/api/payments/quote",
        headers,
        {"kind": "transfer", "to": "@owner", "amountMicro": AMOUNT_MICRO},
    )
    confirmed = await _call(
        http, "POST", f"{url}/api/payments/confirm", headers, {"quoteId": quote["quote"]["quoteId"]}
    )
    elapsed = time.perf_counter() - started
    moved = before - payments_of(server.hub).balance(payer.id)
    if not confirmed["moved"] or moved != AMOUNT_MICRO:
        raise BenchmarkFailed(f"the payment moved {moved}, not {AMOUNT_MICRO}")
    return elapsed * 1000


async def _measure(runs: int) -> dict[str, list[float]]:
    from hub.payments.ledger import payments_of

    async with running_hub(payments_enabled=True) as server, aiohttp.ClientSession() as http:
        owner = owner_headers(server)
        added = [await _add(http, server.url, owner, f"Added {n}") for n in range(runs)]
        kept = [await _remove(http, server, owner, "keep", 0, n) for n in range(runs)]
        purged = [
            await _remove(http, server, owner, "purge", FACTS_PER_PERSON, n) for n in range(runs)
        ]
        payer = server.hub.identity.add_user("Payer", login="payer")
        headers = {"Authorization": f"Bearer {server.hub.identity.issue_token(payer, 'bench')}"}
        payments_of(server.hub).deposit(payer.id, AMOUNT_MICRO * runs)
        paid = [await _pay(http, server, payer, headers) for _ in range(runs)]
    return {"add": added, "keep": kept, "purge": purged, "pay": paid}


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    measured = asyncio.run(_measure(max(1, runs)))
    return [
        (
            "people_add_p50",
            percentile(measured["add"], 0.5),
            "ms",
            f"POST /api/people → person + pairing code (offer stored, QR drawn); p50 of {runs}",
        ),
        (
            "people_remove_keep_p50",
            percentile(measured["keep"], 0.5),
            "ms",
            "DELETE /api/people/<login> keep, a person with a token and a paired phone; their "
            f"token checked 401 after; p50 of {runs}",
        ),
        (
            "people_remove_purge_p50",
            percentile(measured["purge"], 0.5),
            "ms",
            f"DELETE ... purge, a person with {FACTS_PER_PERSON} facts and their vectors and a "
            f"paired phone; checked gone after; p50 of {runs}",
        ),
        (
            "payment_quote_confirm_p50",
            percentile(measured["pay"], 0.5),
            "ms",
            "POST /api/payments/quote (transfer) + POST /api/payments/confirm, the payer's "
            f"token; each checked to move the amount once; p50 of {runs}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 10))
