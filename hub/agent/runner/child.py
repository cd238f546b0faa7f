"""The model runner: a child process that owns llama.cpp (``python -m hub.agent.runner.child``).

Native code that can crash — an instruction the CPU or the OS does not allow, a segfault, the
kernel's out-of-memory killer — takes only this process down; the hub sees the pipe close and
the exit signal, ends the turn with a sentence, and starts a fresh runner for the next one.

The runner speaks :mod:`hub.agent.runner.protocol` on its stdin and on a private copy of its
stdout; file descriptor 1 is pointed at stderr, so nothing llama.cpp prints can corrupt the
protocol. A reader thread takes requests, so a cancel lands while the main thread decodes; the
decode loop checks for it between tokens and writes each token as soon as it is decoded.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import mmap
import os
import platform
import queue
import signal
import sys
import threading
import time
from typing import Any, BinaryIO

from hub.agent.runner import call_grammar
from hub.agent.runner import protocol as p

# How long a runner told to stop spends writing what its prompt cache keeps (the hub waits a
# little longer before it kills it).
FLUSH_BUDGET_S = 5.0


class Output:
    """The protocol's write end: whole lines, one ``write`` each, never interleaved."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = p.encode(message)
        with self._lock:
            while data:
                data = data[os.write(self._fd, data) :]


def take_stdout() -> Output:
    """Keep the real stdout for the protocol and send everything else printed there to stderr."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return Output(protocol_fd)


def die_with_parent() -> None:
    """Linux: the kernel kills the runner when the hub dies, even by SIGKILL (the closed stdin
    ends it everywhere else)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def strike(fault: str) -> None:
    """The test-only fault hook: die the way broken native code dies."""
    kind = fault.split("@", 1)[0]
    if kind == "illegal-instruction":
        execute_illegal_instruction()
    elif kind == "segfault":
        ctypes.string_at(0)
    elif kind == "abort":
        os.abort()


def execute_illegal_instruction() -> None:
    """Run a real undefined instruction (x86-64 ``ud2``, AArch64 ``udf #0``), as a library
    built for another CPU would; elsewhere, raise SIGILL."""
    code = {"x86_64": b"\x0f\x0b", "amd64": b"\x0f\x0b", "aarch64": b"\x00\x00\x00\x00"}
    machine_code = code.get(platform.machine().lower())
    if machine_code is None:
        os.kill(os.getpid(), signal.SIGILL)
        return
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(machine_code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    ctypes.CFUNCTYPE(None)(address)()


def load(
    model_path: str, context: int, threads: int, cache_bytes: int = 0, cache_dir: str = ""
) -> Any:
    """``threads`` 0: the cores no other process uses (one thread a physical core), chosen
    again at each generation."""
    from hub.agent.runner.idle_cores import default_threads, governor
    from hub.agent.runner.kept_llama import KeptLlama

    idle_cores = governor() if threads == 0 else None
    if threads == 0:
        threads = idle_cores.threads if idle_cores else default_threads()
    return KeptLlama(
        model_path=model_path,
        n_ctx=context,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
        cache_bytes=cache_bytes,
        cache_dir=cache_dir,
        idle_cores=idle_cores,
    )


def system_info() -> str:
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    return info.decode(errors="replace").strip() if isinstance(info, bytes) else str(info)


def read_requests(
    stream: BinaryIO, requests: queue.Queue[dict[str, Any] | None], cancelled: set[int]
) -> None:
    """Requests go to the main thread; a cancel is marked at once. EOF (the hub is gone or
    closed the pipe) ends the runner."""
    for line in stream:
        try:
            request = p.decode(line)
        except ValueError:
            continue
        if request.get("op") == p.OP_CANCEL:
            cancelled.add(int(request.get("id", -1)))
        elif request.get("op") in (p.OP_GENERATE, p.OP_WARM):
            requests.put(request)
    requests.put(None)


def template_renders_tools(llama: Any) -> bool:
    """Whether the model's own chat template has a place for tools (Qwen's and Hermes' do,
    SmolLM2's does not)."""
    template = str(llama.metadata.get("tokenizer.chat_template", ""))
    return "tools" in template


def with_tools_prompt(messages: list[dict[str, Any]], tools_prompt: str) -> list[dict[str, Any]]:
    """The hub's own rendering of the tools, after the system message (or as one)."""
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{tools_prompt}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": tools_prompt}, *messages]


def tool_arguments(llama: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The offer's fields as llama.cpp's arguments: tools through the model's own template
    (else the hub's text), and a grammar that limits what may be decoded."""
    messages = request["messages"]
    extra: dict[str, Any] = {}
    if tools := request.get(p.FIELD_TOOLS):
        if template_renders_tools(llama):
            extra["tools"] = call_grammar.shown(tools)
        else:
            messages = with_tools_prompt(messages, str(request.get(p.FIELD_TOOLS_PROMPT, "")))
    if grammar := requested_grammar(request):
        from llama_cpp.llama_grammar import LlamaGrammar

        extra["grammar"] = LlamaGrammar.from_string(grammar, verbose=False)
    return {"messages": messages, **extra}


def requested_grammar(request: dict[str, Any]) -> str:
    """The GBNF a request asks for: its own, or the one built from its tools."""
    if grammar := request.get(p.FIELD_GRAMMAR):
        return str(grammar)
    tools = request.get(p.FIELD_TOOLS) or []
    must_call = str(request.get(p.FIELD_MUST_CALL) or "")
    if not tools or not (must_call or request.get(p.FIELD_CONSTRAIN)):
        return ""
    try:
        return call_grammar.grammar_for(tools, only=must_call)
    except Exception as exc:  # a schema the converter cannot express: decode unconstrained
        print(f"no call grammar: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return ""


def generate(llama: Any, request: dict[str, Any], cancelled: set[int], out: Output) -> None:
    """Decode a reply, each token's text sent as it comes. A ``warm`` request reads its prompt
    and keeps the state (one token is decoded, none sent): the prompts that follow begin
    where it ends."""
    rid = int(request["id"])
    warming = request.get("op") == p.OP_WARM
    started = time.perf_counter()
    completion, stop = 0, p.STOP_END
    llama.begin()
    if warming:
        llama.keep_on_disk_next()
    try:
        chunks = llama.create_chat_completion(
            **tool_arguments(llama, request),
            max_tokens=1 if warming else int(request["max_tokens"]),
            stream=True,
            **request.get("sampling", {}),
        )
        for chunk in chunks:
            if rid in cancelled:
                chunks.close()
                llama.keep_state()
                stop = p.STOP_CANCELLED
                break
            choice = chunk["choices"][0]
            text = choice["delta"].get("content")
            if text and not warming:
                completion += 1
                out.send({"ev": p.EV_TEXT, "id": rid, "text": text, "n": 1})
            if choice.get("finish_reason") == "length":
                stop = p.STOP_MAX_TOKENS
    except ValueError as exc:
        overflow = "exceed context window" in str(exc)
        kind = p.ERROR_CONTEXT_OVERFLOW if overflow else p.ERROR_OTHER
        out.send({"ev": p.EV_ERROR, "id": rid, "kind": kind, "message": str(exc)})
        return
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
        out.send({"ev": p.EV_ERROR, "id": rid, "kind": p.ERROR_OTHER, "message": message})
        return
    finally:
        cancelled.discard(rid)
    out.send(
        {
            "ev": p.EV_DONE,
            "id": rid,
            "stop": stop,
            "prompt_tokens": int(llama.prompt_length),
            "prompt_evaluated": int(llama.prompt_evaluated or 0),
            "completion_tokens": completion,
            "seconds": time.perf_counter() - started,
            "cache": llama.prompt_cache.stats().as_dict(),
            "threads": int(llama.threads),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hub.agent.runner.child")
    parser.add_argument("--model", required=True)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=0, help="0: the idle cores")
    parser.add_argument("--cache-mb", type=int, default=0)
    parser.add_argument("--cache-dir", default="")
    args = parser.parse_args(argv)
    out = take_stdout()
    die_with_parent()
    fault = os.environ.get(p.FAULT_ENV, "")
    if fault.endswith("@start"):
        strike(fault)
    started = time.perf_counter()
    cache_bytes = args.cache_mb * 1024 * 1024
    llama = load(args.model, args.context, args.threads, cache_bytes, args.cache_dir)
    out.send(
        {
            "ev": p.EV_READY,
            "model": os.path.basename(args.model),
            "load_s": round(time.perf_counter() - started, 4),
            "threads": int(llama.threads),
            "adaptive": llama.idle_cores is not None,
            "cache_bytes": cache_bytes,
            "cache_entries": len(llama.prompt_cache),
            "system_info": system_info(),
        }
    )
    requests: queue.Queue[dict[str, Any] | None] = queue.Queue()
    cancelled: set[int] = set()
    reader = threading.Thread(
        target=read_requests, args=(sys.stdin.buffer, requests, cancelled), daemon=True
    )
    reader.start()
    while (request := requests.get()) is not None:
        if fault and not fault.endswith("@start"):
            strike(fault)
        generate(llama, request, cancelled, out)
    llama.prompt_cache.flush(FLUSH_BUDGET_S)
    llama.prompt_cache.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
