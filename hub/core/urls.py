"""One reading of a URL, made before anything is decided about it.

A check on the raw text and a request on the parsed URL can disagree, and the request is what
counts: URL libraries (yarl, as browsers do) drop tabs and newlines anywhere in a URL and resolve
``.`` and ``..`` segments, percent-encoded ones too. So ``<base>/owner/r/<sha>/\\t../\\t../evil/``
reads as ``owner``'s to a prefix check and fetches ``/evil/``. Every allowlist decision
(an install's owner, a host, a configured URL) is therefore made on :func:`canonical_url`'s
answer, and that same URL is the one fetched: parse, normalise, then decide.

The canonical form is yarl's: host lower-cased, dot segments resolved, the path's percent-escapes
in one spelling. Text with whitespace or control characters inside, or a backslash (a path
separator to a browser, a character to yarl), is refused rather than repaired: it has no single
reading.
"""

from __future__ import annotations

from yarl import URL

__all__ = ["UrlRefused", "canonical_url"]


class UrlRefused(ValueError):
    """Not a URL the hub reads one way only; the message says why, for a person."""


def canonical_url(text: str | URL) -> URL:
    """``text`` as a URL in canonical form, or UrlRefused; its scheme and host are the
    caller's to judge. A ``URL`` is yarl's already, and is returned as it was built."""
    raw = str(text).strip()
    shown = raw[:200]
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        raise UrlRefused(f"{shown!r} has whitespace or a control character inside it")
    if "\\" in raw:
        raise UrlRefused(f"{shown!r} has a backslash; URLs use /")
    if isinstance(text, URL):  # parsed already (built with encoded path segments): as it is
        return text
    try:
        url = URL(raw)
        url.port  # noqa: B018 (a port that is not a number fails here, not later)
    except (ValueError, TypeError) as exc:
        raise UrlRefused(f"{shown!r} is not a valid URL ({exc})") from None
    return url
