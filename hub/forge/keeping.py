"""Keeping a person's forged tool, and running one to try it: what the agent's tools
(``create_tool``, ``install_tool``, the marketplace, each ``my_*`` tool) and the ``/api/tools``
routes (``tiny-hub tools``, the TUI's Tools screen) both do, so a tool forged by hand and one
forged by asking pass the same checks: the code is run once in the sandbox before it is kept,
and an install reads a file pinned by commit from an owner on the allowlist or trusted.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from hub.forge import github
from hub.forge.sandbox import Sandbox, ToolStopped
from hub.forge.store import ForgedDraft, ForgedTool, ForgeRefused, ForgeStore
from hub.people.identity import User

if TYPE_CHECKING:
    from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

SAVED = "it can be called from the next message. Its code is public on your profile."


async def keep_checked(hub: Hub, user: User, draft: ForgedDraft, **origin: Any) -> ForgedTool:
    """Check ``draft``'s code in the sandbox, then keep it as the person's tool."""
    try:
        await hub.sandbox.check(draft.code)
    except ToolStopped as exc:
        raise ForgeRefused(f"not saved: {exc}") from None
    return ForgeStore(hub.db).save(user, draft, **origin)


async def install_pinned(hub: Hub, user: User, url: str) -> ForgedTool:
    """A tool file on GitHub at a full commit SHA, fetched, checked and kept; never in place of
    a tool of the same name from somewhere else."""
    settings, store = hub.settings, ForgeStore(hub.db)
    place = github.locate(url, settings.tool_raw_base_url)
    github.check_owner(place, settings.tool_repo_allowlist, store.trusted(user.id))
    # The URL the checks read, not the text as given (hub.urls says why).
    source = place.url(settings.tool_raw_base_url)
    draft = await github.fetch_pinned(source, settings.tool_raw_base_url, store)
    existing = store.named(user.id, draft.name)
    if existing is not None and not github.same_file(existing, place, settings.tool_raw_base_url):
        raise taken(existing)
    return await keep_checked(hub, user, draft, source_url=source)


def taken(existing: ForgedTool) -> ForgeRefused:
    """An install never replaces a tool of the same name from somewhere else."""
    return ForgeRefused(
        f"you already have {existing.tool_name} from elsewhere; remove_tool it first to "
        "install this one"
    )


async def ran(sandbox: Sandbox, forged: ForgedTool, input: Any) -> tuple[bool, str]:
    """Whether the call succeeded, and its result as JSON text or what stopped it."""
    name = forged.tool_name
    try:
        value = await sandbox.run(forged.code, input)
    except ToolStopped as exc:
        return False, f"{name} stopped: {exc}"
    except Exception as exc:  # a tool must answer, whatever went wrong
        log.exception("forged tool %s failed unexpectedly", name)
        return False, f"{name} failed unexpectedly: {exc or type(exc).__name__}"
    return True, json.dumps(value, ensure_ascii=False)
