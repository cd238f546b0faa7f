"""The one ordered mount list (seed 000, step 5).

Built-ins first, then the user's forged tools, then the tiny's own operations and skills (and
those of retrieved tinys), then MCP clients. A name already taken is never replaced — a public
tiny must not shadow ``learn`` with a skill of the same name — and tools the user turned off are
dropped, except the protected set. Later issues add their groups to these tuples.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from strands.types.tools import AgentTool

from hub import contracts as c
from hub.agent.tools import (
    client,
    devices,
    flipper,
    followups,
    manage,
    memory,
    native,
    nicla_vision,
    nicla_voice,
    senses,
    skills,
    tinys,
)
from hub.agent.tools.context import ToolContext
from hub.agent.tools.http import make_http_tool
from hub.preferences import disabled_tools

log = logging.getLogger(__name__)

ToolGroup = Callable[[ToolContext], list[AgentTool]]
MountOrder = Sequence[tuple[str, Sequence[ToolGroup]]]


@functools.lru_cache(maxsize=8)
def _http_tool(allow_hosts: tuple[str, ...]) -> AgentTool:
    return make_http_tool(allow_hosts)


def _http(ctx: ToolContext) -> list[AgentTool]:
    return [_http_tool(ctx.hub.settings.http_allow_hosts)]


BUILTIN: tuple[ToolGroup, ...] = (
    memory.tools,
    tinys.tools,
    _http,
    followups.tools,
    client.tools,
    manage.tools,
    devices.tools,
    flipper.tools,
    nicla_vision.tools,
    nicla_voice.tools,
    senses.tools,
    native.tools,
)
FORGED: tuple[ToolGroup, ...] = ()
DYNAMIC: tuple[ToolGroup, ...] = (skills.tools,)
MCP: tuple[ToolGroup, ...] = ()

MOUNT_ORDER: MountOrder = (
    ("built-in", BUILTIN),
    ("forged", FORGED),
    ("dynamic", DYNAMIC),
    ("mcp", MCP),
)


@dataclass
class Mounted:
    tools: list[AgentTool] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [t.tool_name for t in self.tools]


def mount_tools(ctx: ToolContext, order: MountOrder = MOUNT_ORDER) -> Mounted:
    off = disabled_tools(ctx.hub.db, ctx.caller)
    mounted, taken = Mounted(), set[str]()
    for tier, groups in order:
        for group in groups:
            for candidate in group(ctx):
                name = candidate.tool_name
                if name in taken:
                    mounted.dropped.append((name, f"a {tier} tool may not replace an earlier one"))
                    continue
                taken.add(name)
                if name in off and name not in c.PROTECTED_TOOLS:
                    mounted.dropped.append((name, "turned off by the user"))
                    continue
                mounted.tools.append(candidate)
    if mounted.dropped:
        log.info("tools dropped: %s", ", ".join(f"{n} ({why})" for n, why in mounted.dropped))
    return mounted
