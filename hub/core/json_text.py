"""JSON text read with one set of limits, whether it is a request body or JSON carried in a
string inside one (a tool call's ``arguments``, a relay ``payload``).

Python's ``json`` reads more than JSON and fails in ways a caller must not see: ``NaN`` and
``Infinity`` are read as floats (which no encoder writes back, so the answer fails later with a
502), ``1e999`` is read as infinity, a 5000-digit integer raises a plain ValueError, deep nesting
raises RecursionError (a 500 with a traceback), and ``"\\ud800"`` is read as a string no encoder,
SQLite or log can write. :func:`parse_json_text` refuses each of them with :class:`JsonRefused`,
whose sentence names the field, so every route answers a 400 that says where.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from hub.contracts import MAX_CHAT_BODY_BYTES

__all__ = ["MAX_JSON_BYTES", "JsonRefused", "parse_json_text"]

# The largest body any route takes (a chat body), and so the most a string inside one can hold.
MAX_JSON_BYTES = MAX_CHAT_BODY_BYTES


class JsonRefused(ValueError):
    """Not JSON the hub reads; the message is a sentence naming the field."""


def parse_json_text(raw: bytes | str, field: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """``raw`` as a JSON value, or JsonRefused saying what is wrong with ``field``: too large,
    not UTF-8, not JSON, nested too deeply, a number too long to read or too large for a float,
    ``NaN``/``Infinity``, a lone surrogate."""
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise JsonRefused(f"{field} is over {max_bytes} bytes")
    try:
        value = json.loads(raw, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise JsonRefused(f"{field} is nested too deeply") from None
    except UnicodeDecodeError:
        raise JsonRefused(f"{field} is not valid JSON: it is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise JsonRefused(f"{field} is not valid JSON: {exc}") from None
    except ValueError as exc:  # an integer past Python's digit limit, or _finite's refusal
        raise JsonRefused(f"{field} is not usable JSON: {_number_problem(exc)}") from None
    if (where := _lone_surrogate(value, field)) is not None:
        raise JsonRefused(
            f"{field} is not valid JSON text: {where} holds a lone UTF-16 surrogate (\\ud800-"
            "\\udfff without its pair), which is no character"
        )
    return value


class _NumberRefused(ValueError):
    pass


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NumberRefused(f"the number {text[:20]}... is too large")
    return value


def _no_constant(text: str) -> float:
    raise _NumberRefused(f"{text} is not a JSON number")


def _number_problem(exc: ValueError) -> str:
    if isinstance(exc, _NumberRefused):
        return str(exc)
    return f"a number has more than {sys.get_int_max_str_digits()} digits"


def _lone_surrogate(value: Any, field: str) -> str | None:
    """Where a string in ``value`` holds a lone surrogate (``"\\ud800"`` is valid JSON syntax
    but no character: SQLite, the log and every encoder refuse it later), or None."""
    pending: list[tuple[str, Any]] = [(field, value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, str):
            if not _encodes(item):
                return where
        elif isinstance(item, dict):
            for key, inner in item.items():
                if not _encodes(key):
                    return f"a key in {where}"
                pending.append((f"{key!r}", inner))
        elif isinstance(item, list):
            pending.extend((f"{where}[{i}]", inner) for i, inner in enumerate(item))
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
