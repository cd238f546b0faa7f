"""The one ordered mount list (docs/protocol.md, turn step 5).

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
    calculate,
    client,
    devices,
    followups,
    forge,
    manage,
    memory,
    messages,
    money,
    native,
    operations,
    page,
    phone,
    schedule,
    skills,
    spawn,
    telegram,
    tinys,
    universe,
)
from hub.agent.tools.context import ToolContext
from hub.agent.tools.drivers import driver_tools
from hub.agent.tools.http import make_http_tool
from hub.people.preferences import disabled_tools

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
    calculate.tools,
    tinys.tools,
    universe.tools,
    _http,
    spawn.tools,
    followups.tools,
    client.tools,
    manage.tools,
    devices.tools,
    driver_tools,  # every installed driver's tools: attached hardware, then the machine's own
    phone.tools,  # the paired phone's: its Meta glasses, its screen, its image generator
    native.tools,
    page.tools,  # the live map and the phone's device actions
    schedule.tools,
    messages.tools,
    telegram.tools,
    forge.tools,
    money.tools,  # always mounted; each says "payments disabled" while payments are off
)
FORGED: tuple[ToolGroup, ...] = (forge.forged_tools,)
DYNAMIC: tuple[ToolGroup, ...] = (skills.tools, operations.tools, universe.mounted_related)
# MCP clients are started per turn, so their tools join when the turn starts (agent/mcp.py),
# through Mounted.add after every tier above.
MCP: tuple[ToolGroup, ...] = ()

# What a model without tools is asked for that only these tools do: the hub's devices (its
# drivers', the machine's camera and microphone among them, the paired phone's), and work for
# later.
DEVICE_GROUPS: MountOrder = (("built-in", (devices.tools, driver_tools, phone.tools)),)
JOB_GROUPS: MountOrder = (("built-in", (schedule.tools,)),)

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
    off: frozenset[str] = frozenset()  # what the user turned off
    taken: set[str] = field(default_factory=set)  # every name key seen, mounted or turned off
    tiers: dict[str, str] = field(default_factory=dict)  # each tool's tier, mounted or turned off

    @property
    def names(self) -> list[str]:
        return [t.tool_name for t in self.tools]

    def add(self, tier: str, candidate: AgentTool) -> bool:
        """Mount `candidate` unless an earlier tool has its name or the user turned it off:
        the one rule for every tier, also for the MCP tools that join when the turn starts."""
        name = candidate.tool_name
        # strands refuses a name that differs from a registered one only by '-' and '_'
        key = name.replace("-", "_")
        if key in self.taken:
            self.dropped.append((name, f"a {tier} tool may not replace an earlier one"))
            return False
        self.taken.add(key)
        self.tiers[name] = tier
        if name in self.off and name not in c.PROTECTED_TOOLS:
            self.dropped.append((name, "turned off by the user"))
            return False
        self.tools.append(candidate)
        return True


def mount_tools(
    ctx: ToolContext, order: MountOrder = MOUNT_ORDER, *, with_off: bool = False
) -> Mounted:
    """The turn's tools; ``with_off``: the ones the user turned off too (to list them)."""
    off = frozenset() if with_off else disabled_tools(ctx.hub.db, ctx.caller)
    mounted = Mounted(off=off)
    for tier, groups in order:
        for group in groups:
            for candidate in group(ctx):
                mounted.add(tier, candidate)
    if mounted.dropped:
        log.info("tools dropped: %s", ", ".join(f"{n} ({why})" for n, why in mounted.dropped))
    return mounted


manage.use_mount_list(mount_tools)
