"""Each tool's spec normalised once, not four times a turn.

strands rebuilds its tool configuration — a copy of every tool's spec, normalised and checked
— each time it is asked: for the agent's trace span (twice), for the token estimate before a
model call and for the call itself. With the hub's 66 tools mounted that is most of what a turn
spends before the model is asked. The hub's tools are the same objects from turn to turn and
their specs do not change, so the normalised spec is kept per tool object (and dropped with
it), and strands' own registry hands out what it kept.

Written here, not in strands: its registry has no cache and no seam for one, so the one method
is replaced on each agent's registry (:func:`keep_tool_configs`), computing each spec exactly as
strands does (its ``normalize_tool_spec`` and ``validate_tool_spec``).

strands also deep-copies every spec before each model call, so that middleware cannot change
what the registry holds. A kept spec is never changed — neither strands nor the hub writes to
one — so it is a :class:`KeptSpec`, whose deep copy is itself.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from typing import Any

from strands.tools.registry import ToolRegistry
from strands.tools.tools import normalize_tool_spec
from strands.types.tools import AgentTool, ToolSpec

log = logging.getLogger(__name__)


class KeptSpec(dict[str, Any]):
    """A normalised tool spec shared by every turn: read, never written, so copying it deeply
    (as strands does before each model call) gives the same object."""

    def __deepcopy__(self, memo: dict[int, Any]) -> KeptSpec:
        return self


# tool → (the spec object it was normalised from, the normalised spec)
_KEPT: weakref.WeakKeyDictionary[AgentTool, tuple[int, ToolSpec]] = weakref.WeakKeyDictionary()


def keep_tool_configs(registry: ToolRegistry) -> None:
    """Make ``registry`` hand out each tool's normalised spec from the cache."""
    registry.get_all_tools_config = lambda: tools_config(registry)  # type: ignore[method-assign]


def tools_config(registry: ToolRegistry) -> dict[str, Any]:
    """What ``ToolRegistry.get_all_tools_config`` returns: the registered tools' specs, then
    the dynamic tools' not already named; a spec that does not pass strands' check is left
    out, as strands leaves it out."""
    config: dict[str, Any] = {}
    for name, tool in registry.registry.items():
        if (spec := normalised(registry, name, tool)) is not None:
            config[name] = spec
    for name, tool in registry.dynamic_tools.items():
        if name not in config and (spec := normalised(registry, name, tool)) is not None:
            config[name] = spec
    return config


def normalised(registry: ToolRegistry, name: str, tool: AgentTool) -> ToolSpec | None:
    source = tool.tool_spec
    try:
        kept = _KEPT.get(tool)
    except TypeError:  # a tool that cannot be weakly referenced is normalised every time
        kept = None
    if kept is not None and kept[0] == id(source):
        return kept[1]
    try:
        spec = normalize_tool_spec(source.copy())
        registry.validate_tool_spec(spec)
        spec = KeptSpec(spec)  # type: ignore[assignment]
    except (ValueError, RecursionError) as exc:
        log.warning("tool_name=<%s> | spec validation failed | %s", name, exc)
        return None
    with contextlib.suppress(TypeError):
        _KEPT[tool] = (id(source), spec)
    return spec
