"""Requests generated from a live hub's own OpenAPI document, and what each answer says about it.

schemathesis reads ``GET /api/openapi.json`` and makes requests for each operation: ones the
document calls valid (positive) and ones that break it (negative). Every answer is judged the
same way by the suite's bounded run (tests/test_openapi.py) and the longer one of
``scripts/bench openapi_fuzz``:

- a 500 (or any 5xx the document does not list) is a bug;
- a schema-valid request refused for its shape (400, 413, 415, 422) is the document saying less
  than the code checks, unless the refusal is one of the rules a schema cannot state
  (:data:`UNSAYABLE`);
- a schema-violating request accepted (schemathesis's ``negative_data_rejection``) is the code
  checking less than the document says;
- a status the document does not list, or an answer that is not its documented type and shape.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import schemathesis

# Imported here, before a hub's threads start: schemathesis imports this lazily, and CPython
# 3.11 before 3.11.8 can fail compiling a module while another thread compiles ("AST constructor
# recursion depth mismatch").
import schemathesis.specs.openapi.schemas
from schemathesis.config._checks import NegativeDataRejectionConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

__all__ = [
    "NOT_FUZZED",
    "Tally",
    "hub_schema",
    "judge",
]

# A stream that stays open until the client leaves: a request to it never ends on its own, so
# generated requests cannot wait for an answer; tests/test_devices.py covers it.
NOT_FUZZED = "/api/events"
# The hub's own 5xx (502/503/504) are documented answers: a device or model that failed, a
# camera that is not there, a busy database. A 500 is a bug.
DOCUMENTED_SERVER_ANSWERS = (502, 503, 504)
# The one known exclusion: a request line longer than aiohttp's HTTP parser reads (8190 bytes)
# is refused by the parser itself, before any of the hub's code runs, with a plain-text 400.
REQUEST_LINE_LIMIT = 8190
# A request the document calls valid must not be refused for its shape: 404, 409, 402 and the
# like are about what exists, not about the request.
SHAPE_REJECTIONS = (400, 413, 415, 422)
# What a schema-violating request may be answered with: any refusal, none a success.
REFUSALS = [400, 401, 402, 403, 404, 405, 406, 408, 409, 410, 413, 415, 422, 428, 429]
# The rules JSON Schema and OpenAPI's parameters cannot state, each with the handler's words:
# which item of an array is the last, "one of these two query parameters", what only the
# running hub knows.
UNSAYABLE: dict[tuple[str, str], tuple[str, ...]] = {
    # And of the tool calls a history carries: each answered right after it, the results
    # not last, the input's and results' JSON within bounds.
    ("POST", "/api/chat"): (
        "the last message must have role user",
        "the last message must be the person's words",
        "needs its toolResult in the user message right after it",
        "matches no earlier toolUse block",
        "answers no call of the assistant message right before it",
        "is nested deeper than",
        "characters as JSON",
        "is longer than 20000 characters",
    ),
    ("DELETE", "/learnings"): ("give ?id=<fact> to close one fact, or ?scope=all",),
    # A schedule's ranges (N minutes or hours, a real time of day).
    ("POST", "/api/jobs"): ("must be 1 to", "needs a time from"),
    # Two query parameters, exactly one of them: OpenAPI's parameters cannot say so.
    ("GET", "/api/jobs/preview"): ("give either every", "must be 1 to", "needs a time from"),
    # What only the kept bot (its token, its tiny) or Telegram itself can say.
    ("PUT", "/api/telegram"): ("give the bot token", "name the tiny", "Telegram refuses"),
    # The code's size in bytes, its JSON schema's size, and what the sandbox finds running it.
    ("POST", "/api/tools"): ("a forged tool is at most", "input_schema is over", "not saved:"),
    # Where the file is and whether its owner is trusted are the fetch's to find out.
    ("POST", "/api/tools/install"): (
        "install_tool takes",
        "has a query or a fragment",
        "is not https",
        "has an encoded /",
        "is not pinned",
        "is neither in the hub's tool allowlist",
        "cannot fetch",
    ),
    ("PATCH", "/api/tools/{name}"): ("is protected and cannot be turned off",),
    # A model base URL's address is the network guard's to judge, after DNS.
    ("PUT", "/api/model"): ("model base URL refused",),
    # OpenAI's messages: which comes last, each call answered by the message right after it,
    # and a user message's parts together holding something; and the tools' names, each one
    # once (a schema can make items unique, not one field of them).
    ("POST", "/v1/chat/completions"): (
        "more than once ('-' and '_' count as one)",
        "the last message must have role user or tool",
        "needs its tool message right after it",
        "has no text, image or audio",
        "answers no call of the assistant message before it",
        "must name a call of the assistant message before it",
    ),
}
CONFORMANCE = [status_code_conformance, content_type_conformance, response_schema_conformance]


@dataclass
class Tally:
    """What a run sent and what came back, by kind of mismatch."""

    operations: set[str] = field(default_factory=set)  # every operation of the document
    sent: Counter[str] = field(default_factory=Counter)  # requests per operation
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    valid_refused: list[str] = field(default_factory=list)
    invalid_accepted: list[str] = field(default_factory=list)
    nonconforming: list[str] = field(default_factory=list)  # status, content type, shape

    @property
    def unreached(self) -> list[str]:
        return sorted(self.operations - set(self.sent))

    def summary(self) -> str:
        return (
            f"{len(self.sent)}/{len(self.operations)} operations, {sum(self.sent.values())} "
            f"requests, statuses {dict(sorted(self.statuses.items()))}; 5xx bugs "
            f"{len(self.server_errors)}, valid refused {len(self.valid_refused)}, invalid "
            f"accepted {len(self.invalid_accepted)}, nonconforming {len(self.nonconforming)}"
        )


def hub_schema(url: str) -> Any:
    """The hub's document at ``url`` (its base), set to generate valid and invalid requests,
    with every refusal counted as a refusal."""
    schema = schemathesis.openapi.from_url(f"{url}/api/openapi.json")
    schema.config.generation.update(modes=list(schemathesis.GenerationMode))
    schema.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
        expected_statuses=REFUSALS
    )
    return schema


def operations_of(schema: Any) -> set[str]:
    return {
        op.label
        for result in schema.get_all_operations()
        if (op := result.ok()) is not None and op.path != NOT_FUZZED
    }


def judge(case: schemathesis.Case, response: schemathesis.Response, tally: Tally) -> list[str]:
    """Record the answer in ``tally`` and return what is wrong with it (empty: nothing)."""
    tally.sent[case.operation.label] += 1
    tally.statuses[response.status_code] += 1
    where = f"{case.method} {case.path}"
    shown = f"{response.status_code} {response.text[:300]!r} (body {str(case.body)[:200]})"
    request = response.request
    if len(f"{request.method} {request.path_url} HTTP/1.1".encode()) > REQUEST_LINE_LIMIT:
        if response.status_code == 400:
            return []
        return _note(tally.nonconforming, f"{where}: a request line over the limit: {shown}")
    problems: list[str] = []
    status = response.status_code
    if status >= 500 and status not in DOCUMENTED_SERVER_ANSWERS:
        problems += _note(tally.server_errors, f"{where} answered {shown}")
    unsayable = UNSAYABLE.get((case.method, case.path), ())
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if (
        positive
        and status in SHAPE_REJECTIONS
        and not any(rule in response.text for rule in unsayable)
    ):
        problems += _note(tally.valid_refused, f"a schema-valid {where} was refused: {shown}")
    if not positive and (failure := _failed(case, response, [negative_data_rejection])):
        problems += _note(
            tally.invalid_accepted, f"a schema-violating {where} was accepted: {failure}"
        )
    if failure := _failed(case, response, CONFORMANCE):
        problems += _note(tally.nonconforming, f"{where}: {failure}")
    return problems


def _failed(case: schemathesis.Case, response: schemathesis.Response, checks: list[Any]) -> str:
    try:
        case.validate_response(response, checks=checks)
    except BaseExceptionGroup as group:  # schemathesis's FailureGroup: one per check failed
        return "; ".join(f"{type(e).__name__}: {e}" for e in group.exceptions)[:1500]
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:1500]
    return ""


def _note(found: list[str], problem: str) -> list[str]:
    found.append(problem)
    return [problem]
