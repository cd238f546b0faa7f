"""The data dir's permissions: it holds endpoint secrets, token hashes and every memory, none of
it for other users of the machine."""

from __future__ import annotations

import os
import stat
from pathlib import Path

# The folders the hub fills itself; another folder someone keeps in the data dir is theirs.
HUB_FOLDERS = ("chroma", "media", "tls")


def restrict_data_dir(home: Path) -> None:
    """The data dir 0700, its files 0600 and the hub's folders (and all in them) 0700 / 0600: it
    holds endpoint secrets, token hashes and every memory, none of it for other users of the
    machine. Run at every start, so what a loose umask made, or a hand loosened, is repaired.
    Only group and other bits are removed, so an owner's executable keeps its x bit."""
    _restrict(home)
    for entry in home.iterdir():
        if entry.is_file() and not entry.is_symlink():
            _restrict(entry)
    for name in HUB_FOLDERS:
        for folder, _subfolders, files in os.walk(home / name):  # each subfolder in its turn
            _restrict(Path(folder))
            for file in files:
                _restrict(Path(folder) / file)


def _restrict(path: Path) -> None:
    try:
        found = path.lstat()
        if not stat.S_ISLNK(found.st_mode) and stat.S_IMODE(found.st_mode) & 0o077:
            path.chmod(stat.S_IMODE(found.st_mode) & 0o700)
    except FileNotFoundError:  # a temporary file that went away meanwhile
        pass
