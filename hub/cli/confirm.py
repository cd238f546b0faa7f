"""``tiny-hub confirm``: what a chat turn proposed that waits for the person's answer, and
answering it (hub/cli/answers.py sends the answer)."""

from __future__ import annotations

import argparse
import asyncio

from hub.cli.answers import answer
from hub.cli.common import CliError, settings_of


def confirm_command(args: argparse.Namespace) -> int:
    """With no id, list what waits for an answer; with one, confirm it (or --decline it)."""
    return asyncio.run(_confirm(args))


async def _confirm(args: argparse.Namespace) -> int:
    from hub.cli.chat import hub_for_chat
    from hub.client.http import HubError
    from hub.client.proposals import question

    async with hub_for_chat(settings_of(args), args.url, args.token) as client:
        if not args.id:
            try:
                waiting = (await client.call("GET", "/api/confirmations"))["confirmations"]
            except HubError as exc:
                raise CliError(str(exc)) from None
            for proposal in waiting:
                print(f"{proposal['id']}\n{question(proposal)}\n")
            print(f"{len(waiting)} waiting for your answer (tiny-hub confirm ID, or --decline)")
            return 0
        said = await answer(client, {"id": args.id}, not args.decline)
    print(said)
    return 1 if said.startswith(("(not answered", "Not done")) else 0
