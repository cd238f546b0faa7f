"""The bundled models: parts joined atomically, a file that is not the pinned one refused before
llama.cpp ever loads it, and the choice of model from ``embedded.model``."""

from __future__ import annotations

import dataclasses
import errno
import os
import shutil
from pathlib import Path

import pytest

from hub.agent import bundled_models
from hub.agent.bundled_models import (
    MODELS,
    QWEN_CODER_1_5B,
    SMOLLM2,
    ModelFileRefused,
    join_parts,
    sha256_of,
)
from hub.agent.embedded import SAMPLING
from hub.agent.models import embedded_choice, embedded_spec
from hub.agent.runner.process import Generation, RunnerSpec
from hub.agent.runner.supervisor import RunnerSupervisor
from tests.conftest import settings_for


def flip_one_byte(path: Path, offset: int) -> None:
    with path.open("r+b") as file:
        file.seek(offset)
        byte = file.read(1)
        file.seek(offset)
        file.write(bytes([byte[0] ^ 0x01]))


def refused_by_the_file_system(*_: object) -> int:
    raise OSError(errno.EXDEV, "Invalid cross-device link")


@pytest.mark.parametrize(
    "copy_range",
    ["kernel", "absent", "refused"],
    ids=["the kernel copies", "an OS without copy_file_range", "a file system that refuses it"],
)
def test_parts_join_in_order_with_progress_and_no_partial_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copy_range: str
) -> None:
    if copy_range == "absent":
        monkeypatch.delattr(os, "copy_file_range", raising=False)
    elif copy_range == "refused":
        monkeypatch.setattr(os, "copy_file_range", refused_by_the_file_system)
    monkeypatch.setattr(bundled_models, "CHUNK", 4096)
    parts = []
    for number, content in enumerate((b"GGUF" + b"a" * 5000, b"b" * 3000, b"c" * 7)):
        part = tmp_path / f"part{number:02d}.bin"
        part.write_bytes(content)
        parts.append(part)
    seen: list[tuple[int, int]] = []
    target = tmp_path / "models" / "joined.gguf"
    join_parts(parts, target, lambda done, total: seen.append((done, total)))
    assert target.read_bytes() == b"GGUF" + b"a" * 5000 + b"b" * 3000 + b"c" * 7
    assert seen == [(4096, 8011), (5004, 8011), (8004, 8011), (8011, 8011)]
    assert [p.name for p in target.parent.iterdir()] == ["joined.gguf"], "no partial file left"


def test_a_join_that_fails_leaves_no_file_that_looks_whole(tmp_path: Path) -> None:
    good = tmp_path / "part01.bin"
    good.write_bytes(b"x" * 100)
    unreadable = tmp_path / "part02.bin"
    unreadable.mkdir()  # found, sized, but fails when read: half-way through the join
    target = tmp_path / "models" / "joined.gguf"
    with pytest.raises(IsADirectoryError):
        join_parts([good, unreadable], target)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


@pytest.mark.slow
async def test_a_model_file_with_one_byte_changed_is_refused_before_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check the hub runs on the joined 1.5B, on a copy of SmolLM2's GGUF pinned by its
    SHA-256 (the same code; the 1.5B's own refusal is in test_offline_agent)."""
    original = bundled_models.single_gguf(SMOLLM2)
    assert original is not None
    pinned = dataclasses.replace(SMOLLM2, key="pinned-smollm2", sha256=sha256_of(original))
    monkeypatch.setitem(MODELS, pinned.key, pinned)
    copy = tmp_path / "pinned.gguf"
    shutil.copyfile(original, copy)
    flip_one_byte(copy, copy.stat().st_size // 2)
    runner = RunnerSupervisor(RunnerSpec(copy, 512, 1, bundled=pinned.key))
    hello = [{"role": "user", "content": "hi"}]
    try:
        with pytest.raises(ModelFileRefused, match=r"its SHA-256 is .* expected") as refused:
            async for _ in runner.generate(hello, 4, SAMPLING, Generation()):
                pass
        assert "was not loaded" in str(refused.value)
        assert runner.pid is None, "no runner was started for the refused file"
        flip_one_byte(copy, copy.stat().st_size // 2)  # the byte back: the pinned file again
        async for _ in runner.generate(hello, 4, SAMPLING, Generation()):
            pass
        assert runner.generations == 1
    finally:
        await runner.close()


def test_embedded_model_setting_picks_the_model_and_its_tools(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, embedded_model="smollm2")
    spec = embedded_spec(settings)
    assert spec.bundled == "smollm2" and spec.model_path.suffix == ".gguf"
    choice = embedded_choice("x", bundled_models.pick("smollm2"), settings)
    assert (choice.model_id, choice.tools) == ("SmolLM2-135M-Instruct", False)
    forced = settings_for(tmp_path, embedded_model="smollm2", embedded_tools="on")
    assert embedded_choice("x", SMOLLM2, forced).tools is True
    assert bundled_models.pick("auto", ram=10**6) == SMOLLM2, "auto needs the RAM"
    if bundled_models.installed(QWEN_CODER_1_5B):
        assert bundled_models.pick("auto", ram=16 * 1024**3) == QWEN_CODER_1_5B
        qwen = embedded_spec(settings_for(tmp_path, embedded_model=QWEN_CODER_1_5B.key))
        assert qwen.model_path == tmp_path / "models" / QWEN_CODER_1_5B.file_name
        assert embedded_choice("x", QWEN_CODER_1_5B, settings).tools is True


def test_a_checked_file_is_not_hashed_again_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check's stamp spares every later start the hashing of 1.1 GB; a file changed since
    (in place, same size) is hashed again and refused."""
    model_file = tmp_path / "model.gguf"
    model_file.write_bytes(b"GGUF" + b"x" * 1000)
    pinned = dataclasses.replace(SMOLLM2, key="stamped", sha256=sha256_of(model_file))
    hashed: list[Path] = []
    real_sha = bundled_models.sha256_of
    monkeypatch.setattr(bundled_models, "sha256_of", lambda p: hashed.append(p) or real_sha(p))
    bundled_models.Verifier().ready(pinned, model_file)
    bundled_models.Verifier().ready(pinned, model_file)  # another process: a fresh verifier
    assert hashed == [model_file], "hashed once; the second start read the stamp"
    flip_one_byte(model_file, 10)
    os.utime(model_file, ns=(0, model_file.stat().st_mtime_ns + 1_000_000))
    with pytest.raises(ModelFileRefused):
        bundled_models.Verifier().ready(pinned, model_file)
    assert hashed == [model_file, model_file]
