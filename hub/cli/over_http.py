"""What ``tiny-hub jobs``, ``telegram`` and ``tools`` share: one request at a time to the hub's
HTTP API, as the TUI and a phone make them, with the hub's own error sentence as the command's
one-line error."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from hub.cli.common import CliError, settings_of

if TYPE_CHECKING:
    from hub.client.http import HubClient

Work = Callable[["Asker"], Awaitable[int]]


class Asker:
    """A client of the hub whose errors stop the command with the hub's sentence."""

    def __init__(self, client: HubClient) -> None:
        self.client = client

    async def __call__(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str | int] | None = None,
    ) -> dict[str, Any]:
        from hub.client.http import HubError

        try:
            return await self.client.call(method, path, body=body, params=params)
        except HubError as exc:
            raise CliError(str(exc)) from None


def over_http(args: argparse.Namespace, work: Work) -> int:
    """Run ``work`` against the hub ``--url`` names, else the local one (started in this
    process when none answers, as ``tiny-hub chat`` does)."""
    return asyncio.run(_over_http(args, work))


async def _over_http(args: argparse.Namespace, work: Work) -> int:
    from hub.cli.chat import hub_for_chat

    url, token = getattr(args, "url", None), getattr(args, "token", None)
    async with hub_for_chat(settings_of(args), url, token) as client:
        return await work(Asker(client))
