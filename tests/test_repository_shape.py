"""What a person who clones the project can rely on: a module past ~500 lines says in its
docstring why it is one piece, and no file points at a document outside the repository."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hub", "drivers", "media", "tui", "firmware_bridges")
LONG_LINES = 500
SAYS_WHY = "It is one module"
# Where references that lead out of the repository pointed: the sibling folder of shared
# documents, the cloud's specification ("seed 001", "seeds/"), issue numbers and their sections.
OUTSIDE = re.compile(r"\.\./shared|\bseeds?/|\bseed \d{3}\b|\b[Ii]ssue #?\d+\b|§ ?\d")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".sql", ".txt", ".json", ".mjs", ""}


def long_modules_without_a_reason(root: Path) -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            if source.count("\n") <= LONG_LINES:
                continue
            docstring = ast.get_docstring(ast.parse(source)) or ""
            if SAYS_WHY not in docstring:
                found.append(str(path.relative_to(root)))
    return found


def references_outside(root: Path, files: list[str]) -> list[str]:
    found = []
    for name in files:
        path = root / name
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


def tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return listed.stdout.splitlines()


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "big.py").write_text('"""A big module."""\n' + "x = 1\n" * 600)
    (tmp_path / "hub" / "why.py").write_text(f'"""{SAYS_WHY} on purpose."""\n' + "x = 1\n" * 600)
    (tmp_path / "notes.md").write_text("as ../shared/DESIGN.md says\nfine\nsee issue 9 §3\n")
    assert long_modules_without_a_reason(tmp_path) == ["hub/big.py"]
    assert references_outside(tmp_path, ["notes.md"]) == [
        "notes.md:1: as ../shared/DESIGN.md says",
        "notes.md:3: see issue 9 §3",
    ]


def test_every_long_module_says_why_it_is_one_piece() -> None:
    assert long_modules_without_a_reason(ROOT) == []


def test_no_file_points_outside_the_repository() -> None:
    files = [name for name in tracked_files() if name != "tests/test_repository_shape.py"]
    assert references_outside(ROOT, files) == []
