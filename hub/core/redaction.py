"""Credentials in text, found and replaced wherever a text leaves the hub.

Archives and shares, the log, and every tool result (which goes to the model, maybe a cloud one,
and to the client's stream) pass through :func:`redact_text`. The patterns are the shapes
credentials have: bearer tokens, ``sk-`` keys, this hub's ``th_`` tokens, GitHub, Slack and AWS
keys, and Telegram bot tokens, also as they are echoed back: URL-encoded (``123:AA…`` inside a
``/bot123%3AAA…/`` path), or lower-cased by something that normalised the text.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"

# A key whose value is a credential, wherever it appears in a JSON value (headers, inputs...).
_SECRET_KEY = re.compile(
    r"api[_-]?key|apikey|token|secret|password|passwd|authorization|cookie|private[_-]?key"
    r"|x-tiny-model-api-key|x-tiny-key",
    re.IGNORECASE,
)
# Usage counters talk about tokens without holding one ("inputTokens", "max_tokens",
# "token_count"): these parts of a key name are ignored before looking for a credential word.
_COUNTER_PART = re.compile(r"tokens|token[_-]?(?:count|usage|limit|budget)|tokeni[sz]er", re.I)

# Credentials inside free text. A bearer token must look like one (8+ characters with a digit or
# punctuation, or 20+ letters), so "the bearer of bad news" is left alone.
_SECRET_TEXT: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\b(bearer)\s+(?:(?=[A-Za-z]*[0-9_\-.~+/])[A-Za-z0-9_\-.~+/]{8,}=*|[A-Za-z]{20,}=*)",
            re.IGNORECASE,
        ),
        rf"\1 {REDACTED}",
    ),
    (re.compile(r"\bsk[-_][A-Za-z0-9_\-]{16,}", re.IGNORECASE), REDACTED),  # OpenAI, Anthropic...
    (re.compile(r"\bth_[A-Za-z0-9_\-]{20,}", re.IGNORECASE), REDACTED),  # this hub's own tokens
    (
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", re.I),
        REDACTED,
    ),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", re.IGNORECASE), REDACTED),  # Slack
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", re.IGNORECASE), REDACTED),  # AWS key ids
    # Telegram bot tokens: the bot's id, a colon (or %3A), 30+ of the secret's characters.
    (re.compile(r"(?<![0-9])\d{5,15}(?::|%3a)[A-Za-z0-9_\-]{30,}", re.IGNORECASE), REDACTED),
)


def is_secret_key(key: str) -> bool:
    return _SECRET_KEY.search(_COUNTER_PART.sub(" ", key)) is not None


def redact_text(text: str) -> str:
    for pattern, replacement in _SECRET_TEXT:
        text = pattern.sub(replacement, text)
    return text


def redact(value: Any) -> Any:
    """A copy of a JSON value with credentials replaced by ``"[redacted]"``.

    The value of any key that names a credential is replaced whole (whatever its type); every
    other string has the credentials :func:`redact_text` knows replaced in place. Keys
    themselves are kept.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            key: REDACTED if is_secret_key(str(key)) else redact(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value
