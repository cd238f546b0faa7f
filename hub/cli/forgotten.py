"""``tiny-hub memory forgotten`` and ``tiny-hub memory undo``: what the person forgot that can
still be brought back, and bringing it back, over the hub's routes with their token (the same
``/learnings/forgotten`` the TUI's memory screen and a phone use): against a running hub, or
one started in this process."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping
from typing import Any

from hub.cli.common import CliError, settings_of


def forgotten_command(args: argparse.Namespace) -> int:
    return asyncio.run(_forgotten(args))


async def _forgotten(args: argparse.Namespace) -> int:
    from hub.cli.chat import hub_for_chat
    from hub.client.http import HubError

    async with hub_for_chat(settings_of(args), args.url, args.token) as client:
        try:
            listed = (await client.call("GET", "/learnings/forgotten"))["forgotten"]
            if args.action == "forgotten":
                for made in listed:
                    print(describe(made))
                print(
                    f"{len(listed)} forgetting(s) can be brought back (tiny-hub memory undo [ID])"
                )
                return 0
            chosen = args.id or (listed[0]["id"] if listed else None)
            if chosen is None:
                raise CliError("nothing to bring back: nothing was forgotten recently")
            answer = await client.call("POST", "/learnings/forgotten/undo", body={"id": chosen})
        except HubError as exc:
            raise CliError(str(exc)) from None
    restored = answer["restored"]
    print(f"brought back {len(restored)} fact(s):")
    for fact in restored:
        print(f"  [{fact['id']}] {fact['fact']}")
    return 0


def describe(made: Mapping[str, Any]) -> str:
    """One forgetting: its id, when, what, until when it can be undone, and its facts."""
    what = {"all": "everything", "about": f"about {made.get('about')}", "fact": "one fact"}
    facts = [f"  - {f.get('fact')}" for f in made.get("facts") or []]
    head = (
        f"{made.get('id')}  {str(made.get('forgotten_at'))[:16].replace('T', ' ')}  "
        f"{what.get(str(made.get('scope')), '')}: {len(facts)} fact(s), "
        f"deleted for good after {str(made.get('delete_after'))[:10]}"
    )
    return "\n".join([head, *facts])
