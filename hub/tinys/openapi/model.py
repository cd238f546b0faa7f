"""What an operation is, and every bound on a stranger's schema in one place.

A schema is a stranger's text, and so is every call the model makes with it. These numbers are
what keeps both small: how much of a schema is fetched and for how long it is cached, how many
operations, references, schema nodes, properties and parameters are read, how long a description
the model sees, and how much of an answer it gets back. An `Operation` is the parsed, bounded
result; nothing of the document it came from is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CACHE_ENTRIES",
    "CACHE_TTL_S",
    "CALL_TIMEOUT_S",
    "DESCRIPTION_CHARS",
    "FAILURE_TTL_S",
    "FETCH_TIMEOUT_S",
    "FIELD_DESCRIPTION_CHARS",
    "MAX_ENUM",
    "MAX_OPERATIONS",
    "MAX_PARAMETERS",
    "MAX_PROPERTIES",
    "MAX_REF_DEPTH",
    "MAX_RESULT_BYTES",
    "MAX_RESULT_CHARS",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "NAME_LIMIT",
    "TEMPLATE_VARIABLE",
    "OpenAPIError",
    "Operation",
    "Parameter",
]

MAX_SCHEMA_BYTES = 2_000_000
FETCH_TIMEOUT_S = 15.0
CALL_TIMEOUT_S = 30.0
CACHE_TTL_S = 300.0
FAILURE_TTL_S = 30.0  # a broken schema is retried soon, but not on every turn
CACHE_ENTRIES = 64
MAX_OPERATIONS = 64
MAX_REF_DEPTH = 8
MAX_SCHEMA_DEPTH = 12
MAX_SCHEMA_NODES = 400  # per operation's input schema: what the model reads on every turn
MAX_PROPERTIES = 64
MAX_ENUM = 50
MAX_PARAMETERS = 32
DESCRIPTION_CHARS = 1000
FIELD_DESCRIPTION_CHARS = 300
MAX_RESULT_BYTES = 262_144
MAX_RESULT_CHARS = 20_000
NAME_LIMIT = 64

# A `{name}` in a path template or a server URL.
TEMPLATE_VARIABLE = re.compile(r"\{([^{}]*)\}")


class OpenAPIError(Exception):
    """The schema cannot be used; the message says why, for a person."""


@dataclass(frozen=True)
class Parameter:
    """One path, query or header parameter: `key` in the tool input, `name` on the wire."""

    key: str
    name: str
    location: str
    required: bool


@dataclass(frozen=True)
class Operation:
    """One operation of a schema, ready to be called: where, how, and what the model fills in.

    `name` is sanitised and unique within its schema; `allow_hosts` is the owner's
    ``http.allow_hosts`` when the schema was loaded, so calls follow the same policy.
    """

    name: str
    method: str
    path: str
    server: str
    description: str
    input_schema: dict[str, Any]
    parameters: tuple[Parameter, ...] = ()
    body_key: str | None = None
    body_type: str = ""
    body_required: bool = False
    allow_hosts: tuple[str, ...] = field(default=(), compare=False)
