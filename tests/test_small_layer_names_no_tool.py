"""The small-model layer names no tool of the hub: what is particular to one is declared where
the tool is defined (``drivers.base.SmallModelHints``), as drivers declare their matchers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hub.agent.small.calls import ANSWER
from hub.agent.tools import mount_tools
from hub.agent.tools.context import ToolContext
from hub.config import load_settings
from hub.runtime.hub import Hub

LAYER = Path(__file__).resolve().parent.parent / "hub" / "agent" / "small"


def strings_in(path: Path) -> list[str]:
    """Every string the module's code holds (docstrings too: a name there is a pointer to a
    tool the layer should not know)."""
    tree = ast.parse(path.read_text())
    return [
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def identifiers_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }


def hub_tool_names(tmp_path: Path) -> set[str]:
    settings = load_settings(home=tmp_path, environ={}, overrides={})
    hub = Hub.open(settings)
    try:
        owner = ToolContext(hub, hub.owner, hub.tinys.get("tiny"))  # type: ignore[arg-type]
        return set(mount_tools(owner, with_off=True).names) - {ANSWER}
    finally:
        hub.close()


def test_no_module_of_the_small_model_layer_names_a_hub_tool(tmp_path: Path) -> None:
    names = hub_tool_names(tmp_path)
    assert {"learn", "flipper_status", "schedule", "calculate"} <= names, "the mount list is read"
    found = []
    for module in sorted(LAYER.glob("*.py")):
        code_names = identifiers_in(module) & names
        said = [
            name
            for text in strings_in(module)
            for name in names
            if ("_" in name and re.search(rf"\b{re.escape(name)}\b", text))
            or re.search(rf"[`'\"]{re.escape(name)}[`'\"]", text)
        ]
        found += [f"{module.name}: {name}" for name in sorted(code_names | set(said))]
    assert not found, f"the small-model layer names hub tools: {found}"
