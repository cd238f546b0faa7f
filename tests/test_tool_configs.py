"""Each tool's spec normalised once: what the agent's registry hands out is what strands' own
method computes, kept between turns, and never copied deeply."""

from __future__ import annotations

import copy

from strands import Agent
from strands.tools.registry import ToolRegistry

from hub.agent.tool_configs import KeptSpec, keep_tool_configs
from hub.agent.tools import mount_tools
from hub.agent.tools.context import ToolContext
from tests.conftest import StartHub


async def test_the_kept_configs_are_strands_own_for_every_mounted_tool(
    start_hub: StartHub,
) -> None:
    server = await start_hub()
    hub = server.hub
    tools = mount_tools(ToolContext(hub, hub.owner, hub.tinys.get("tiny"))).tools
    assert len(tools) > 40
    plain = ToolRegistry()
    plain.process_tools(list(tools))
    expected = plain.get_all_tools_config()
    agent = Agent(tools=list(tools), callback_handler=None)
    keep_tool_configs(agent.tool_registry)
    first = agent.tool_registry.get_all_tools_config()
    assert first == expected, "the same names, order and normalised specs as strands makes"
    assert list(first) == list(expected)
    again = Agent(tools=list(tools), callback_handler=None)
    keep_tool_configs(again.tool_registry)
    second = again.tool_registry.get_all_tools_config()
    assert all(second[name] is first[name] for name in first), "kept across agents (turns)"
    spec = first["learn"]
    assert isinstance(spec, KeptSpec) and copy.deepcopy(spec) is spec
