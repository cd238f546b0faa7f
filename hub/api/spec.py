"""What a route handler declares about its HTTP shape: query, body, answers and their schemas.

``@documented(Operation(...))`` sits beside ``@access`` on each handler, so the route table
carries both; ``hub.api.openapi`` walks that table into the OpenAPI document. Schemas are JSON
Schema (draft 2020-12, which OpenAPI 3.1 uses) written as plain dicts through the helpers here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

Schema = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])

_OPERATION_ATTR = "__tiny_hub_operation__"

JSON = "application/json"
EVENT_STREAM = "text/event-stream"

STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
BOOLEAN: Schema = {"type": "boolean"}
NUMBER: Schema = {"type": "number"}
ANY: Schema = {}
OK: Schema = {"type": "object", "required": ["ok"], "properties": {"ok": {"const": True}}}
# A string with something in it besides whitespace: what "non-empty" means to the handlers.
# A character that is no space to JSON Schema's regular expressions (ECMA-262's \s, which counts
# U+FEFF) nor to Python's str.strip(), which the handlers trim with (it counts U+001C-U+001F and
# U+0085): text the schema calls non-blank is never blank to the handler.
TEXT: Schema = {"type": "string", "pattern": "[^\\s\\x1c-\\x1f\\x85\\ufeff]"}


def text(max_chars: int) -> Schema:
    """A non-blank string of at most ``max_chars`` characters."""
    return {**TEXT, "maxLength": max_chars}


def matching(pattern: str) -> Schema:
    """A string the handler's own regular expression accepts (written here as it is there)."""
    return {"type": "string", "pattern": pattern}


# A person's @login and a tiny's name, as hub.identity and hub.tinys.records check them.
LOGIN = matching(r"^@?[a-z0-9][a-z0-9_-]{0,38}$")
TINY_NAME = matching(r"^[a-z0-9][a-z0-9-]{1,39}$")


def obj(required: Mapping[str, Schema] | None = None, **optional: Schema) -> Schema:
    """A JSON object with these fields; others are allowed (answers grow fields over time)."""
    required = dict(required or {})
    schema: Schema = {"type": "object", "properties": {**required, **optional}}
    if required:
        schema["required"] = sorted(required)
    return schema


def closed(required: Mapping[str, Schema] | None = None, **optional: Schema) -> Schema:
    """A request body that refuses fields it does not name."""
    return {**obj(required, **optional), "additionalProperties": False}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def bounded(low: int, high: int) -> Schema:
    return {"type": "integer", "minimum": low, "maximum": high}


@dataclass(frozen=True)
class Operation:
    """One route's shape. ``answers``: success status → JSON schema of the body (None: the
    answer has no body);
    ``errors``: the statuses only this route answers, beyond the ones every route may."""

    summary: str
    answers: Mapping[int, Schema | None] = field(default_factory=lambda: {200: obj()})
    body: Schema | None = None
    query: Mapping[str, Schema] = field(default_factory=dict)
    required_query: tuple[str, ...] = ()
    errors: tuple[int, ...] = ()
    # of the success answer: JSON, an event stream, image/jpeg...; the JSON one gets the schema
    content_types: tuple[str, ...] = (JSON,)
    # the components schema its errors follow: the hub's {"error": "..."}, or OpenAI's on /v1
    error_schema: str = "Error"


def documented(operation: Operation) -> Callable[[F], F]:
    """Declare a route handler's HTTP shape for the OpenAPI document."""

    def mark(handler: F) -> F:
        setattr(handler, _OPERATION_ATTR, operation)
        return handler

    return mark


def declared_operation(handler: Callable[..., Any]) -> Operation | None:
    found = getattr(handler, _OPERATION_ATTR, None)
    return found if isinstance(found, Operation) else None
