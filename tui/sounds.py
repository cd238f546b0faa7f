"""``play_sound`` in a terminal: a short tone through the audio output, else the terminal bell.

Each sound the hub offers (``hub.contracts.SOUNDS``) is a few sine notes, made here as 16-bit
PCM. They go out through ``sounddevice`` when PortAudio has an output device, else through a
player program on PATH (the WAV written to a temporary file), else the terminal bell rings. The
result says which, so the chat can tell the person what actually happened.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import importlib
import io
import math
import os
import subprocess
import tempfile
import wave
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

RATE = 22_050
VOLUME = 0.3
FADE_S = 0.005  # a few milliseconds in and out: no click at a note's edges
# (frequency in Hz, seconds); 0 Hz is a pause.
NOTES: dict[str, tuple[tuple[float, float], ...]] = {
    "beep": ((880.0, 0.15),),
    "chime": ((1046.5, 0.12), (1318.5, 0.12), (1568.0, 0.22)),
    "success": ((659.3, 0.1), (880.0, 0.18)),
    "error": ((440.0, 0.15), (311.1, 0.3)),
    "alert": ((987.8, 0.1), (0.0, 0.06), (987.8, 0.1), (0.0, 0.06), (987.8, 0.1)),
}
PLAYERS = ("paplay", "pw-play", "aplay", "afplay")


def tone(sound: str) -> bytes:
    """The sound as mono 16-bit little-endian PCM at ``RATE``."""
    samples = array.array("h")
    for frequency, seconds in NOTES[sound]:
        count = int(RATE * seconds)
        fade = max(1, int(RATE * FADE_S))
        for n in range(count):
            envelope = min(1.0, n / fade, (count - 1 - n) / fade)
            value = math.sin(2 * math.pi * frequency * n / RATE) if frequency else 0.0
            samples.append(int(32767 * VOLUME * envelope * value))
    return samples.tobytes()


def wav(pcm: bytes) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(RATE)
        writer.writeframes(pcm)
    return out.getvalue()


def _import_sounddevice() -> ModuleType:
    return importlib.import_module("sounddevice")


class SoundPlayer:
    """Plays the hub's sounds. ``loader``, ``which`` and ``bell`` are the seams: a machine
    without PortAudio, without a player program, or a test that must not ring."""

    def __init__(
        self,
        bell: Callable[[], None],
        *,
        which: Callable[[str], str | None],
        loader: Callable[[], ModuleType] = _import_sounddevice,
    ) -> None:
        self.bell = bell
        self.which = which
        self.loader = loader
        self.playing: set[asyncio.Task[Any]] = set()

    def output_device(self) -> tuple[Any, str] | None:
        """(sounddevice, the default output's name), or None when PortAudio has none."""
        try:
            sd = self.loader()
            info = sd.query_devices(kind="output")
        except Exception:  # no PortAudio, no device: another way is tried
            return None
        return sd, str(info.get("name") or "the default output")

    async def play(self, sound: str) -> str:
        """Start ``sound``; what was used, in words for the chat."""
        pcm = tone(sound)
        found = self.output_device()
        if found is not None:
            sd, name = found
            self._keep(asyncio.to_thread(_play_blocking, sd, pcm))
            return f"played {sound} through the audio output ({name})"
        program = next((p for p in map(self.which, PLAYERS) if p), None)
        if program is not None:
            await self._start_player(program, wav(pcm))
            return f"played {sound} with {Path(program).name}"
        self.bell()
        return f"no audio output here: rang the terminal bell for {sound}"

    async def _start_player(self, program: str, data: bytes) -> None:
        with tempfile.NamedTemporaryFile(prefix="tiny-sound-", suffix=".wav", delete=False) as f:
            f.write(data)
        quiet = ["-q"] if Path(program).name == "aplay" else []
        process = await asyncio.create_subprocess_exec(
            program,
            *quiet,
            f.name,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

        async def wait_then_clean_up() -> None:
            try:
                await process.wait()
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f.name)

        self._keep(wait_then_clean_up())

    def _keep(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self.playing.add(task)
        task.add_done_callback(self.playing.discard)


def _play_blocking(sd: Any, pcm: bytes) -> None:
    with sd.RawOutputStream(samplerate=RATE, channels=1, dtype="int16") as stream:
        stream.write(pcm)
