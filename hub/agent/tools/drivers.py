"""Every tool the drivers contribute to a turn: the hub names no driver here.

Each installed driver family brings the tools it declares (``Driver.agent_tools``: mounted
whether or not such a device is attached, so the model can be told "not connected"), in the
catalog's order (the hardware people attach, the ones shipped with the hub first, then the
machine's own camera and microphone); then each device online now adds its own
(``Driver.tools``). The tools find the turn through ``drivers.base.turn_host``, which the turn's
ToolContext satisfies.
"""

from __future__ import annotations

from strands.types.tools import AgentTool

from hub.agent.tools.context import ToolContext


def driver_tools(ctx: ToolContext) -> list[AgentTool]:
    """Every tool the drivers contribute for this turn, in mount order."""
    manager = ctx.hub.drivers
    return [*manager.catalog.family_tools(), *manager.tools()]
