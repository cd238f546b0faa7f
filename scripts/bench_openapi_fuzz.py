"""The published OpenAPI document against the code, at length: schemathesis generates ``runs``
requests per operation valid by the document and as many that break it, against a real
``tiny-hub serve`` (chat on the fake Ollama, ``access.rate_limit_scale`` relaxed for the run),
and harness/openapi_fuzz.py judges every answer as the suite's shorter run does.

Rows: the operations reached out of the document's, the requests sent, and each kind of
mismatch counted — 500s, schema-valid requests refused, schema-violating requests accepted,
answers off the document (status, type, shape). Every request must be answered and the hub must
still be up after each; it needs the dev extra (schemathesis): ``TINY_HUB_EXTRAS=dev
./scripts/bench openapi_fuzz``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scripts.bench_common import BenchmarkFailed, served_hub

RATE_LIMIT_SCALE = "1000000"


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    return asyncio.run(_bench(runs))


async def _bench(runs: int) -> list[tuple[str, float, str, str]]:
    from fakes.ollama import FakeOllama

    fake = FakeOllama()
    await fake.start()
    try:
        async with served_hub(fake.url, {"TINY_HUB_RATE_LIMIT_SCALE": RATE_LIMIT_SCALE}) as hub:
            tally = await asyncio.to_thread(_fuzz, hub.url, hub.token, runs)
    finally:
        await fake.stop()
    for kind in ("server_errors", "valid_refused", "invalid_accepted", "nonconforming"):
        for problem in getattr(tally, kind)[:20]:
            print(f"openapi_fuzz {kind}: {problem[:400]}")
    how = f"schemathesis, {runs} valid + {runs} invalid examples per operation, seed fixed"
    return [
        (
            "openapi_fuzz operations reached",
            len(tally.sent),
            "operations",
            f"{how}; of "
            f"{len(tally.operations)} in the document, unreached: {tally.unreached or 'none'}",
        ),
        ("openapi_fuzz requests", sum(tally.sent.values()), "requests", how),
        ("openapi_fuzz 500s", len(tally.server_errors), "answers", "a 5xx not documented"),
        (
            "openapi_fuzz valid refused",
            len(tally.valid_refused),
            "answers",
            "schema-valid, refused for its shape (400/413/415/422)",
        ),
        (
            "openapi_fuzz invalid accepted",
            len(tally.invalid_accepted),
            "answers",
            "schema-violating, answered 2xx (negative_data_rejection)",
        ),
        (
            "openapi_fuzz off the document",
            len(tally.nonconforming),
            "answers",
            "an undocumented status, content type or shape",
        ),
    ]


def _fuzz(url: str, token: str, runs: int) -> Any:
    import requests
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.errors import Unsatisfiable

    from harness import openapi_fuzz

    schema = openapi_fuzz.hub_schema(url)
    tally = openapi_fuzz.Tally(operations=openapi_fuzz.operations_of(schema))
    auth = {"Authorization": f"Bearer {token}"}
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation is None or operation.path == openapi_fuzz.NOT_FUZZED:
            continue
        for mode in schemathesis.GenerationMode:

            @given(operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=runs,
                deadline=None,
                derandomize=True,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            def one(case: schemathesis.Case) -> None:
                response = case.call(base_url=url, headers=auth, timeout=60)
                openapi_fuzz.judge(case, response, tally)
                if requests.get(f"{url}/api/health", timeout=30).status_code != 200:
                    raise BenchmarkFailed(
                        f"the hub stopped answering after {case.method} {case.path}"
                    )

            try:
                one()
            except Unsatisfiable:  # nothing in it can be made invalid (no body, no parameters)
                continue
    return tally
