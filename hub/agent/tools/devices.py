"""use_device: list the user's devices, ask one of them something, redeem a slow answer."""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.agent.tools.results import answer_result
from hub.devices.registry import DeviceError


@tool(name="use_device", context=True)
async def use_device(
    tool_context: StrandsToolContext,
    action: str = "list",
    name: str = "",
    prompt: str = "",
    id: str = "",
) -> dict[str, Any]:
    """Reach the user's own devices: laptops and daemons that dial in, and endpoint devices
    with their own API. List them first: each lists its capabilities. Never claim a device
    lacks something without checking its capabilities here.

    Args:
        action: list (devices, kinds, capabilities, online), ask (send prompt to the device
            named), or result (collect a slow answer by id).
        name: the device's name, for ask.
        prompt: what to ask the device to do or tell, for ask.
        id: the id of a pending answer, for result.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    devices, owner = ctx.hub.devices, ctx.caller.id
    try:
        if action == "list":
            now = devices.now()
            listed = [d.as_json(now) for d in devices.registry.list(owner)]
            lines = [
                f"- {d['name']} ({d['kind']}; online: {d['online']}; capabilities: "
                f"{', '.join(d['capabilities']) or 'none declared'})"
                for d in listed
            ]
            return ok("\n".join(lines) or "No devices are enrolled.", devices=listed)
        if action == "ask":
            if not name or not prompt.strip():
                return failed("ask needs the device's name and a prompt")
            return answer_result(await devices.ask(owner, name, prompt))
        if action == "result":
            if not id:
                return failed("result needs the id of the pending answer")
            return answer_result(await devices.result(owner, id))
    except DeviceError as exc:
        return failed(str(exc))
    return failed("action must be list, ask or result")


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [use_device]


hinted("devices", use_device)
