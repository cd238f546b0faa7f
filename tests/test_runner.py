"""The embedded model's runner process: a crash in llama.cpp ends one turn, never the hub.

The faults are real: the runner's test-only hook executes an undefined instruction (what a
llama.cpp built for another CPU does), dereferences address 0, or the test SIGKILLs the runner
mid-stream (what the kernel's out-of-memory killer does).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import signal
import subprocess
from pathlib import Path

import aiohttp
import pytest

from hub import contracts as c
from hub.agent.embedded import SAMPLING, bundled_gguf
from hub.agent.runner.process import Generation, RunnerExited, RunnerSpec, describe_exit
from hub.agent.runner.protocol import FAULT_ENV
from hub.agent.runner.supervisor import (
    FAILURES_BEFORE_OFF,
    RunnerFailed,
    RunnerSupervisor,
)
from hub.api.server import RunningServer
from hub.cli.doctor import check_embedded_model
from tests.conftest import StartHub, owner_headers, settings_for
from tests.sse import read_sse

pytestmark = pytest.mark.slow

BODY = {"messages": [{"role": "user", "content": "Tell me about the moon in a few sentences."}]}
AMX_MNEMONICS = re.compile(
    r"\s(tilezero|tileloadd|tileloaddt1|tilestored|tilerelease|ldtilecfg|sttilecfg|tdp\w+)\s"
)


def gguf() -> Path:
    path = bundled_gguf()
    assert path is not None
    return path


async def hub_on_embedded(start_hub: StartHub, closed_port: int) -> RunningServer:
    return await start_hub(
        ollama_host=f"http://127.0.0.1:{closed_port}", model_max_tokens=48, embedded_threads=1
    )


async def chat(http: aiohttp.ClientSession, server: RunningServer) -> tuple[str, list[str]]:
    """One turn: its text and its error events' messages; the stream must end with [DONE]."""
    async with http.post(f"{server.url}/api/chat", json=BODY) as response:
        transcript = await read_sse(response)
    assert transcript.done, "the stream ends with [DONE]"
    return transcript.text, [e["error"] for e in transcript.of_type(c.EV_ERROR)]


async def health(http: aiohttp.ClientSession, server: RunningServer) -> dict[str, object]:
    async with http.get(f"{server.url}/api/health", headers=owner_headers(server)) as response:
        assert response.status == 200
        body: dict[str, object] = await response.json()
        return body


async def test_an_illegal_instruction_ends_the_turn_not_the_hub(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession, monkeypatch
) -> None:
    server = await hub_on_embedded(start_hub, closed_port)
    monkeypatch.setenv(FAULT_ENV, "illegal-instruction")
    text, errors = await chat(http, server)
    assert text == ""
    assert len(errors) == 1
    assert "illegal instruction (SIGILL)" in errors[0]
    assert "rebuild llama-cpp-python" in errors[0], "the error says what to do"
    assert (await health(http, server))["ok"] is True
    monkeypatch.delenv(FAULT_ENV)
    text, errors = await chat(http, server)
    assert text.strip() and not errors, "the next turn starts a fresh runner and answers"


async def test_a_runner_killed_mid_stream_ends_the_turn_with_the_reason(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(
        ollama_host=f"http://127.0.0.1:{closed_port}", model_max_tokens=400, embedded_threads=1
    )
    runner = server.hub.models.embedded_runner()
    body = {"messages": [{"role": "user", "content": "Count from 1 to 300, one per line."}]}
    async with http.post(f"{server.url}/api/chat", json=body) as response:
        assert response.status == 200
        async for line in response.content:
            if b'"textDelta"' in line:
                assert runner.pid is not None
                os.kill(runner.pid, signal.SIGKILL)
                break
        rest = (await response.read()).decode()
    assert "SIGKILL" in rest and '"type":"error"' in rest
    assert rest.rstrip().endswith("data: [DONE]")
    assert (await health(http, server))["ok"] is True
    text, errors = await chat(http, server)
    assert text.strip() and not errors


async def test_three_deaths_in_a_row_turn_the_embedded_model_off_with_the_reason(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession, monkeypatch
) -> None:
    server = await hub_on_embedded(start_hub, closed_port)
    monkeypatch.setenv(FAULT_ENV, "segfault@start")
    for _ in range(FAILURES_BEFORE_OFF):
        _, errors = await chat(http, server)
        assert "SIGSEGV" in errors[0]
    embedded = (await health(http, server))["embedded"]
    assert isinstance(embedded, dict)
    assert embedded["state"] == "failed"
    assert "SIGSEGV" in embedded["reason"] and "3 times in a row" in embedded["reason"]
    monkeypatch.delenv(FAULT_ENV)  # a healthy runner would start now, but the model is off
    _, errors = await chat(http, server)
    assert "3 times in a row" in errors[0]
    assert server.hub.models.embedded_runner().pid is None, "no runner was started"


async def test_a_finished_generation_resets_the_count_of_deaths(monkeypatch) -> None:
    runner = RunnerSupervisor(RunnerSpec(gguf(), 512, 1))
    try:
        for _ in range(FAILURES_BEFORE_OFF - 1):
            monkeypatch.setenv(FAULT_ENV, "abort")
            with pytest.raises(RunnerExited, match="SIGABRT"):
                async for _ in runner.generate(
                    [{"role": "user", "content": "hi"}], 4, {}, Generation()
                ):
                    pass
        monkeypatch.delenv(FAULT_ENV)
        async for _ in runner.generate([{"role": "user", "content": "hi"}], 4, {}, Generation()):
            pass
        await runner.close()  # the warm runner has no fault; the next one will
        monkeypatch.setenv(FAULT_ENV, "abort")
        with pytest.raises(RunnerExited):
            async for _ in runner.generate(
                [{"role": "user", "content": "hi"}], 4, {}, Generation()
            ):
                pass
        assert runner.status()["state"] != "failed", "one death after a success is not three"
    finally:
        await runner.close()


async def test_the_failed_state_refuses_at_once(monkeypatch) -> None:
    runner = RunnerSupervisor(RunnerSpec(gguf(), 512, 1))
    monkeypatch.setenv(FAULT_ENV, "illegal-instruction@start")
    try:
        for _ in range(FAILURES_BEFORE_OFF):
            with pytest.raises(RunnerExited):
                async for _ in runner.generate(
                    [{"role": "user", "content": "x"}], 4, {}, Generation()
                ):
                    pass
        with pytest.raises(RunnerFailed, match="SIGILL"):
            async for _ in runner.generate([{"role": "user", "content": "x"}], 4, {}, Generation()):
                pass
    finally:
        await runner.close()


def test_every_death_is_described_in_words() -> None:
    assert "out of memory" in describe_exit(-signal.SIGKILL, []).what
    assert "SIGILL" in describe_exit(-signal.SIGILL, []).what
    assert "rebuild" in describe_exit(-signal.SIGILL, []).fix
    exited = describe_exit(1, ["Traceback ...", "OSError: no such file"])
    assert "status 1" in exited.what and "no such file" in exited.what
    assert "signal 31" in describe_exit(-31, []).what


def test_doctor_runs_the_model(home: Path) -> None:
    check = check_embedded_model(settings_for(home, embedded_threads=1), decode=True)
    assert check.status == "OK", check.line()
    assert re.search(r"\d+ tokens at [\d.]+ tok/s after a \d+-token prompt", check.detail)
    prompt_tokens = int(re.search(r"after a (\d+)-token prompt", check.detail).group(1))
    assert prompt_tokens >= 64, "a prompt long enough for llama.cpp's batched kernels"


def test_doctor_fails_with_the_fix_when_the_runner_cannot_decode(home: Path, monkeypatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "illegal-instruction")
    check = check_embedded_model(settings_for(home, embedded_threads=1), decode=True)
    assert check.status == "FAIL"
    assert "SIGILL" in check.detail
    assert "rebuild llama-cpp-python" in check.fix


async def test_llama_cpp_reports_no_amx_or_avx512_in_its_build() -> None:
    """The build is portable: llama.cpp's own system info names what its CPU backend was
    compiled to use."""
    runner = RunnerSupervisor(RunnerSpec(gguf(), 256, 1))
    try:
        async for _ in runner.generate(
            [{"role": "user", "content": "hi"}], 2, SAMPLING, Generation()
        ):
            pass
        info = runner.system_info
    finally:
        await runner.close()
    assert "AVX2 = 1" in info, info
    for feature in ("AMX_INT8 = 1", "AVX512 = 1"):
        assert feature not in info, info


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_the_compiled_cpu_backend_holds_no_amx_tile_instruction() -> None:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip(
            "needs an x86-64 CPU (AMX is an x86-64 extension); on other CPUs the system-info "
            "test above checks what the build uses"
        )
    import llama_cpp

    libraries = list((Path(llama_cpp.__file__).parent / "lib").glob("libggml-cpu*.so"))
    assert libraries, "llama-cpp-python ships its CPU backend"
    for library in libraries:
        listing = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", str(library)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert len(listing) > 100_000
        found = AMX_MNEMONICS.findall(listing)
        assert not found, f"{library.name}: {len(found)} AMX instructions, e.g. {found[:3]}"
        assert "%zmm" not in listing, f"{library.name} uses AVX-512 registers"


async def test_health_says_the_threads_the_runner_chose_from_the_idle_cores(
    start_hub: StartHub, closed_port: int, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}", model_max_tokens=8)
    text, errors = await chat(http, server)
    assert text.strip() and not errors
    embedded = (await health(http, server))["embedded"]
    assert isinstance(embedded, dict)
    assert embedded["threadsChosen"] == "idle cores"
    assert 1 <= int(embedded["threads"]) <= (os.cpu_count() or 1)
