"""The agent's `http` tool, kept on the public internet by the network guard.

The hub runs inside someone's home network, and the model that drives this tool is steered by
whatever text reaches it: a web page, a message, a memory. Without a guard, "fetch this URL" would
let that text reach the router's admin page, the NAS, the printer or a cloud metadata service, all
of which trust anything already inside the network. So a public tiny must not turn the hub into
a pivot into the home network: only public addresses are fetched unless the hub's owner has
named a host in `http.allow_hosts`.

Every hop (the first URL and every redirect) goes through `hub.core.netguard`: its host is resolved
and checked there, and the connection goes to exactly the checked addresses through a
`PinnedResolver`, so DNS rebinding has no window between the check and the connect. The
exchange itself is `hub.tinys.guarded`'s, the one OpenAPI operations go through too; this module
keeps the tool's own part: GET and HEAD only, the body as text, failures in its own words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from strands import tool
from strands.types.tools import AgentTool

from hub.core.netguard import PinnedResolver, refusal_reason
from hub.tinys.guarded import Exchange, SendFailed, SendRefused, send

__all__ = [
    "FetchFailed",
    "FetchRefused",
    "FetchResult",
    "PinnedResolver",
    "fetch_url",
    "make_http_tool",
    "refusal_reason",
]

ALLOWED_METHODS = ("GET", "HEAD")
USER_AGENT = "tiny-hub (http tool)"


class FetchRefused(Exception):
    """The target is not fetched by policy: a scheme or method that is not allowed, or an
    address inside a private network. The message is meant for a person."""


class FetchFailed(Exception):
    """The target was allowed but could not be fetched: DNS, connection, TLS, timeout, too many
    redirects. The message is meant for a person."""


@dataclass(frozen=True)
class FetchResult:
    url: str  # the final URL, after redirects
    status: int
    content_type: str
    text: str
    truncated: bool


def _is_text(content_type: str) -> bool:
    content_type = content_type.lower()
    return (
        content_type.startswith("text/")
        or content_type in ("application/json", "application/xml")
        or content_type.endswith(("+json", "+xml"))
    )


def _text(got: Exchange, method: str, max_bytes: int) -> str:
    if method == "HEAD":
        return ""
    if _is_text(got.content_type):
        return got.text()
    size = f"more than {max_bytes} bytes" if got.truncated else f"{len(got.body)} bytes"
    return f"[binary content: {got.content_type}, {size}]"


def _in_own_words(exc: SendRefused | SendFailed, url: str) -> FetchRefused | FetchFailed:
    """The guard's failure as the http tool says it: naming the URL that was not fetched."""
    if isinstance(exc, SendRefused):
        if exc.subject is None:
            return FetchRefused(str(exc))
        return FetchRefused(f"refused: {exc.subject} is not fetched; {exc.reason}")
    if exc.subject is not None:
        return FetchFailed(f"cannot fetch {exc.subject}: {exc.reason}")
    at = "" if exc.at is None or str(exc.at) == url else f" (at {exc.at})"
    return FetchFailed(f"cannot fetch {url}{at}: {exc.reason}")


async def fetch_url(
    url: str,
    *,
    allow_hosts: Sequence[str] = (),
    max_bytes: int = 262_144,
    timeout_s: float = 15.0,
    max_redirects: int = 5,
    method: str = "GET",
) -> FetchResult:
    """Fetch `url` (GET or HEAD), following up to `max_redirects` redirects, every hop checked.

    Raises FetchRefused when the scheme, the method or an address of any hop is not allowed,
    and FetchFailed when the fetch itself goes wrong (DNS, connection, TLS, timeout, too many
    redirects). Hosts in `allow_hosts` (exact name or IP literal, case-insensitive) skip the
    address check.
    """
    if max_bytes < 0 or max_redirects < 0:
        raise ValueError("max_bytes and max_redirects must not be negative")
    method = method.strip().upper()
    if method not in ALLOWED_METHODS:
        raise FetchRefused(f"refused: the http tool only does GET and HEAD, not {method or '?'}")
    try:
        got = await send(
            method,
            url,
            allow_hosts=allow_hosts,
            max_bytes=max_bytes,
            timeout_s=timeout_s,
            max_redirects=max_redirects,
            user_agent=USER_AGENT,
        )
    except (SendRefused, SendFailed) as exc:
        raise _in_own_words(exc, url) from exc
    return FetchResult(
        url=got.url,
        status=got.status,
        content_type=got.content_type,
        text=_text(got, method, max_bytes),
        truncated=got.truncated,
    )


def _error(message: str) -> dict[str, Any]:
    return {"status": "error", "content": [{"text": message}]}


def make_http_tool(allow_hosts: Sequence[str] = ()) -> AgentTool:
    """The strands tool named `http`, bound to the owner's `http.allow_hosts`."""
    allowed = tuple(allow_hosts)

    @tool(name="http")
    async def http(url: str, method: str = "GET") -> dict[str, Any]:
        """Fetch a URL from the public internet and read its text.

        Returns the HTTP status, the content type, the final URL after redirects and the body
        as text (binary content is only described). Addresses inside private networks are
        refused unless the hub's owner has allowed the host.

        Args:
            url: The absolute http:// or https:// URL to fetch.
            method: GET to read the body (the default), or HEAD for the status only.
        """
        verb = method.strip().upper()
        if verb not in ALLOWED_METHODS:
            return _error(f"method {method!r} is not allowed: the http tool only does GET and HEAD")
        try:
            result = await fetch_url(url, allow_hosts=allowed, method=verb)
        except (FetchRefused, FetchFailed) as exc:
            return _error(str(exc))
        text = f"HTTP {result.status} {result.content_type} from {result.url}\n\n{result.text}"
        if result.truncated:
            text += "\n\n[truncated: only the beginning of the body was read]"
        return {"status": "success", "content": [{"text": text}]}

    return http
