"""The import graph of the project's packages has no cycle, within a package or across them:
built from the source's AST (every ``import``, ``from ... import`` and ``TYPE_CHECKING`` import,
inside functions too), not from what Python happened to import, so a cycle that only a lazy
import hides still fails here. And the layers keep to their side: the hub's agent and API reach
the drivers only through ``drivers.base``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hub", "drivers", "media", "tui", "firmware_bridges")


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def modules(package: str) -> dict[str, Path]:
    return {module_name(p): p for p in (ROOT / package).rglob("*.py")}


def imported(path: Path, name: str) -> set[str]:
    """Every dotted name ``path`` imports (relative imports made absolute)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def graph(*packages: str) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports (a name imported from a module counts
    as that module)."""
    known = {name: path for package in packages for name, path in modules(package).items()}

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = {resolve(t) for t in imported(path, name) if t.split(".")[0] in packages}
        edges[name] = {t for t in targets if t is not None and t != name}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_an_import_inside_a_function_is_read(tmp_path: Path) -> None:
    module = tmp_path / "late.py"
    module.write_text("def later():\n    from drivers.base import Driver\n    import media.audio\n")
    assert {"drivers.base", "drivers.base.Driver", "media.audio"} <= imported(module, "late")


# How many modules each package has at least: a graph that reads too few found nothing.
AT_LEAST = {"hub": 100, "drivers": 20, "media": 4, "tui": 20, "firmware_bridges": 10}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_package_has_an_import_cycle(package: str) -> None:
    edges = graph(package)
    assert len(edges) >= AT_LEAST[package]
    assert cycles(edges) == []


def test_the_packages_import_each_other_without_a_cycle() -> None:
    edges = graph(*PACKAGES)
    assert len(edges) > 300
    assert cycles(edges) == []


def test_the_agent_and_the_api_reach_the_drivers_only_through_their_base() -> None:
    """What a driver package brings reaches a turn and a request through ``drivers.base`` (the
    tools' and routes' host, the result shapes); the media libraries are a package of their
    own, which they may import."""
    for name, path in modules("hub").items():
        if name.startswith(("hub.agent", "hub.api")):
            drivers = {t for t in imported(path, name) if t.split(".")[0] == "drivers"}
            assert all(t.startswith("drivers.base") for t in drivers), (name, drivers)


def test_drivers_and_the_tui_keep_to_their_side() -> None:
    """drivers/ never imports the HTTP API; tui/ imports nothing of the hub but its contracts
    and its HTTP client, which itself imports nothing of the hub but the contracts."""
    for name, path in modules("drivers").items():
        assert not any(t.startswith("hub.api") for t in imported(path, name)), name
    for name, path in modules("tui").items():
        hub_imports = {t for t in imported(path, name) if t.split(".")[0] == "hub"}
        outside = {t for t in hub_imports if t not in ("hub", "hub.contracts")}
        assert all(t.startswith("hub.client") for t in outside), (name, hub_imports)
    for name, path in modules("hub").items():
        if name.startswith("hub.client"):
            hub_imports = {t for t in imported(path, name) if t.split(".")[0] == "hub"}
            outside = {t for t in hub_imports if not t.startswith("hub.client")}
            assert outside <= {"hub", "hub.contracts"}, (name, hub_imports)


def test_what_the_tests_share_with_the_benchmarks_is_outside_the_tests() -> None:
    """scripts/ (the benchmarks) and what they share with the tests (fakes/, harness/) never
    import the test suite: a helper both need lives where both may import it."""
    for folder in ("scripts", "fakes", "harness"):
        for path in (ROOT / folder).rglob("*.py"):
            name = module_name(path)
            assert not any(t.split(".")[0] == "tests" for t in imported(path, name)), name
