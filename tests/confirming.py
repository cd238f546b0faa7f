"""A destructive tool's proposal, read from its result, and the person's answer to it through
the client route (``POST /api/confirmations/confirm`` or ``.../decline``) with their token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp

from hub.api.server import RunningServer
from hub.confirmations.actions import confirm
from hub.people.identity import User
from hub.runtime.hub import Hub
from tests.conftest import owner_headers


def proposal(result: Mapping[str, Any]) -> dict[str, Any]:
    """The proposal a tool's result carries for clients; the tool must have succeeded in
    proposing, and said it waits for the person."""
    assert result["status"] == "success", result
    data = next(b["json"] for b in result["content"] if "json" in b)
    assert data["needsConfirmation"] is True, data
    text = " ".join(b["text"] for b in result["content"] if "text" in b)
    assert "Nothing has been done yet" in text and "only they can" in text, text
    found: dict[str, Any] = data["confirmation"]
    assert found["state"] == "waiting"
    return found


async def answer(
    server: RunningServer,
    pending: Mapping[str, Any],
    verb: str = "confirm",
    headers: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    """The person answers ``pending`` (confirm or decline), as the owner unless ``headers``."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.url}/api/confirmations/{verb}",
            json={"id": pending["id"]},
            headers=dict(headers if headers is not None else owner_headers(server)),
        ) as response,
    ):
        return response.status, await response.json()


async def confirmed_by(hub: Hub, person: User, result: Mapping[str, Any]) -> str:
    """``person`` confirms the proposal in a tool's ``result`` (what the route does, for tests
    that call a tool without a token); the outcome in words."""
    done = await confirm(hub, person, proposal(result)["id"])
    assert done.carried_out, done.pending.outcome
    return done.pending.outcome
