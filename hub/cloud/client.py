"""The cloud's dial-in routes (docs/protocol.md, dial-in devices) from the device's side: one
method per route.

Every call carries ``{deviceId, token}`` in the body, as the contract says. Failures are sorted into
the two things the caller must do differently: ``CloudUnavailable`` (unreachable, timed out, a
5xx, an answer that is not the contract's JSON) means back off and try again later;
``CloudAuthError`` (401/403: the token was revoked or is wrong) means stop and tell the owner —
hammering the cloud with a dead token helps no one.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

import aiohttp

CALL_TIMEOUT_S = 30.0


def backoff_s(failures: int, least_s: float, most_s: float) -> float:
    """How long to wait after ``failures`` failures in a row: exponential, capped, with jitter
    (half to all of the step) so many hubs coming back after one outage do not all knock at the
    same moment."""
    step = min(most_s, least_s * 2 ** min(failures - 1, 30))
    return float(step * random.uniform(0.5, 1.0))


class CloudError(Exception):
    """A cloud call failed; ``str()`` says why, for a person (never the token)."""


class CloudUnavailable(CloudError):
    """Unreachable, too slow, a 5xx, a 429, or garbage: worth retrying later."""


class CloudAuthError(CloudError):
    """The cloud refused the device's credentials (401/403): retrying will not help."""


class CloudRefused(CloudError):
    """A 4xx other than 401/403: this request is wrong and will stay wrong."""


@dataclass(frozen=True)
class Envelope:
    """One message pulled from the relay: ``payload`` is the JSON text the sender put in."""

    id: str
    payload: str
    created_at: float | None = None


class CloudClient:
    def __init__(
        self,
        url: str,
        device_id: str,
        token: str,
        *,
        timeout_s: float = CALL_TIMEOUT_S,
    ) -> None:
        self.url = url.rstrip("/")
        self.device_id = device_id
        self._token = token
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)

    async def heartbeat(self, capabilities: list[str], lan_url: str | None) -> dict[str, Any]:
        """POST /api/devices/heartbeat ``{capabilities, lanUrl?}``."""
        body: dict[str, Any] = {"capabilities": capabilities}
        if lan_url:
            body["lanUrl"] = lan_url
        return await self._call("POST", "/api/devices/heartbeat", body)

    async def pull(self, limit: int = 10, wait_s: float | None = None) -> list[Envelope]:
        """PUT /api/devices/relay ``{max, wait?}`` → the envelopes waiting for this device; with
        ``wait_s`` a cloud that long-polls holds the call until one arrives or the time is up,
        so the call may take that much longer."""
        body: dict[str, Any] = {"max": limit}
        if wait_s:
            body["wait"] = wait_s
        answer = await self._call("PUT", "/api/devices/relay", body, held_s=wait_s or 0.0)
        messages = answer.get("messages")
        if not isinstance(messages, list):
            raise CloudUnavailable("the cloud's relay answer has no message list")
        pulled = []
        for message in messages:
            if not isinstance(message, dict) or not isinstance(message.get("id"), str):
                raise CloudUnavailable("the cloud sent a relay message without an id")
            payload = message.get("payload")
            text = payload if isinstance(payload, str) else json.dumps(payload)
            pulled.append(Envelope(message["id"], text, message.get("created_at")))
        return pulled

    async def reply(self, in_reply_to: str, payload: str) -> dict[str, Any]:
        """PATCH /api/devices/relay ``{inReplyTo, payload}``."""
        body = {"inReplyTo": in_reply_to, "payload": payload}
        return await self._call("PATCH", "/api/devices/relay", body)

    async def event(self, kind: str, detail: Any) -> dict[str, Any]:
        """POST /api/devices/event ``{kind, detail}``."""
        return await self._call("POST", "/api/devices/event", {"kind": kind, "detail": detail})

    async def task_result(
        self, task_id: str, summary: str | None = None, result: Any = None
    ) -> dict[str, Any]:
        """POST /api/devices/task-result ``{taskId, summary?, result?}``."""
        body: dict[str, Any] = {"taskId": task_id}
        if summary is not None:
            body["summary"] = summary
        if result is not None:
            body["result"] = result
        return await self._call("POST", "/api/devices/task-result", body)

    async def call(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """Any other dial-in route (the outbox replays stored calls through this)."""
        return await self._call(method, path, body)

    async def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any],
        *,
        held_s: float = 0.0,
    ) -> dict[str, Any]:
        """``held_s``: how long the cloud may hold this call on purpose, on top of the usual
        time allowed."""
        payload = {"deviceId": self.device_id, "token": self._token, **body}
        allowed = aiohttp.ClientTimeout(total=(self._timeout.total or 0) + held_s)
        try:
            async with (
                aiohttp.ClientSession(timeout=allowed if held_s else self._timeout) as http,
                http.request(method, f"{self.url}{path}", json=payload) as response,
            ):
                text = await response.text()
                status = response.status
        except (aiohttp.ClientError, TimeoutError, UnicodeDecodeError) as exc:
            raise CloudUnavailable(f"cannot reach the cloud at {self.url}: {exc}") from None
        return read_answer(status, text, f"{method} {path}")


def read_answer(status: int, text: str, what: str) -> dict[str, Any]:
    """A cloud answer sorted into the error the caller must act on, or its JSON object."""
    try:
        parsed = json.loads(text) if text else {}
    except json.JSONDecodeError:
        parsed = None
    said = parsed.get("error") if isinstance(parsed, dict) else None
    if status in (401, 403):
        raise CloudAuthError(f"the cloud refused this hub's token ({status}: {said or what})")
    if status >= 500 or status == 429:  # 429 says "later", not "wrong": retry after a backoff
        raise CloudUnavailable(f"the cloud failed {what} ({status}: {said or 'no detail'})")
    if status >= 400:
        raise CloudRefused(f"the cloud refused {what} ({status}: {said or 'no detail'})")
    if not isinstance(parsed, dict):
        raise CloudUnavailable(f"the cloud answered {what} with something that is not JSON")
    return parsed
