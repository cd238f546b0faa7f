"""``tiny-hub chat``: one turn to stdout (text, or ``-`` for standard input), or with no text a
conversation in the terminal, as ``ollama run`` has it: the arrow keys recall earlier lines,
``/bye`` or Ctrl+D ends it, Ctrl+C stops the reply being written and keeps the session. On a
terminal, standard error says what the turn is doing until its text comes (progress_line.py).

Against the hub given by ``--url`` (or named by ``--host``/``--port`` or ``TINY_HUB_HOST``/
``TINY_HUB_PORT``), which must answer; else the local hub when it answers, else a hub started in
this process for as long as the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from hub import contracts as c
from hub.cli.answers import ask_each
from hub.cli.common import CliError, is_terminal, local_url, pin, settings_of, token
from hub.cli.word_wrap import WordWrap, terminal_width
from hub.client.conversation import TurnRecorder
from hub.config import Settings, setting_sources
from hub.core.logs import setup_logging

if TYPE_CHECKING:
    from hub.cli.progress_line import ProgressLine

PROMPT = ">>> "
LISTEN = ("host", "port")
BYE = ("/bye", "/exit", "/quit")
HELP = (
    "Type a message and press Enter. /bye or Ctrl+D ends the session, Ctrl+C stops a reply, "
    "/clear forgets the conversation so far."
)


@dataclass
class Reply:
    """What one turn wrote, and how it ended."""

    text: str = ""
    error: str = ""
    stopped: bool = False
    proposals: list[dict[str, Any]] = field(default_factory=list)
    """What the turn proposed that only the person may do: asked about after the reply."""
    record: TurnRecorder = field(default_factory=TurnRecorder)
    """What the turn adds to the conversation: its tool calls, their results, its text."""


@dataclass
class Conversation:
    """The session's messages, sent whole with each turn (the hub keeps no history)."""

    messages: list[dict[str, Any]] = field(default_factory=list)

    def ask(self, text: str) -> list[dict[str, Any]]:
        self.messages.append({"role": "user", "content": text})
        return list(self.messages)

    def answered(self, reply: Reply) -> None:
        """A reply joins the history with the tool calls and results that led to it, so the
        model sees next time how it answered (hub/client/conversation.py); a turn that did
        nothing leaves none of itself."""
        turn = reply.record.messages()
        if turn:
            self.messages += [dict(message) for message in turn]
        else:
            self.messages.pop()


def chat_command(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    settings.home.mkdir(parents=True, exist_ok=True)
    setup_logging(settings.log_level, settings.home / "hub.log")
    text = args.text
    if text == "-" or (text is None and not sys.stdin.isatty()):
        text = sys.stdin.read()
        if not text.strip():
            raise CliError("nothing to say: standard input was empty")
    if text is None:
        return interactive(settings, args)
    return asyncio.run(_one_turn(settings, args, text))


async def _one_turn(settings: Settings, args: argparse.Namespace, text: str) -> int:
    async with hub_for_chat(settings, args.url, args.token) as client:
        reply = await stream_reply(client, [{"role": "user", "content": text}], args, sys.stdout)
        reading = input if sys.stdin.isatty() else None
        await ask_each(client, reply.proposals, sys.stdout, reading)
    if reply.error:
        print(f"tiny-hub: {reply.error}", file=sys.stderr)
    return 1 if reply.error or not reply.text else 0


def interactive(settings: Settings, args: argparse.Namespace) -> int:
    """The read–reply loop; each reply runs on one event loop kept for the session, so the
    hub (possibly in this process) and its warm model stay between turns."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (arrow-key history for input())

    conversation = Conversation()
    with asyncio.Runner() as runner:
        session = runner.run(_open_session(settings, args.url, args.token))
        try:
            print(f"talking to {session.url}; {HELP}", flush=True)
            while (line := _read_line()) is not None:
                if line.strip() in BYE:
                    break
                if line.strip() == "/clear":
                    conversation = Conversation()
                    print("(the conversation so far is forgotten)")
                    continue
                if line.strip():
                    _reply_to(runner, session, conversation, line, args)
        finally:
            runner.run(session.close())
    return 0


def _read_line() -> str | None:
    """The next line typed; None at Ctrl+D. Ctrl+C at the prompt starts a new line."""
    while True:
        try:
            return input(PROMPT)
        except EOFError:
            print()
            return None
        except KeyboardInterrupt:
            print("\n(Ctrl+D or /bye to leave)")


def _reply_to(
    runner: asyncio.Runner,
    session: Session,
    conversation: Conversation,
    line: str,
    args: argparse.Namespace,
) -> None:
    reply = Reply()
    messages = conversation.ask(line)
    runner.run(_stoppable(stream_reply(session.client, messages, args, sys.stdout, reply), reply))
    if reply.stopped:
        print("\n(stopped)", flush=True)
    elif reply.error:
        print(f"(no reply: {reply.error})", flush=True)
    runner.run(ask_each(session.client, reply.proposals, sys.stdout, input))
    conversation.answered(reply)


async def _stoppable(turn: Coroutine[Any, Any, Reply], reply: Reply) -> None:
    """Run one turn; Ctrl+C (SIGINT) cancels it and marks the reply stopped. Closing the
    stream stops the model; the session goes on."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(turn)

    def stop() -> None:
        reply.stopped = True
        task.cancel()

    loop.add_signal_handler(signal.SIGINT, stop)
    try:
        await task
    except asyncio.CancelledError:
        if not reply.stopped:
            raise
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def stream_reply(
    client: Any,
    messages: list[dict[str, Any]],
    args: argparse.Namespace,
    out: TextIO,
    reply: Reply | None = None,
    err: TextIO | None = None,
) -> Reply:
    """Stream one turn's text to ``out`` (on a terminal, broken between words at its width),
    and on a terminal what the turn is doing meanwhile to ``err`` (standard error); errors are
    kept on the reply, not raised."""
    from hub.cli.progress_line import progress_line
    from hub.client.http import HubError
    from hub.client.proposals import proposal_of

    reply = reply if reply is not None else Reply()
    try:
        async with progress_line(err or sys.stderr, out) as progress:
            answer = AnswerText(out, progress)
            try:
                async for event in client.stream_chat(messages, model_headers(args)):
                    reply.record.feed(event)
                    is_text = event.get("type") == c.EV_BLOCK_DELTA and c.DELTA_TEXT in event
                    if not is_text:
                        answer.pause()  # before a tool's line, the word so far
                    progress.seen(event)
                    if is_text:
                        reply.text += event[c.DELTA_TEXT]
                        answer.write(event[c.DELTA_TEXT])
                    elif event.get("type") == c.EV_ERROR:
                        reply.error = str(event.get("error"))
                    elif event.get("type") == c.EV_AFTER_TOOL:
                        proposal = proposal_of(event.get("toolResult") or {})
                        if proposal is not None:
                            reply.proposals.append(proposal)
            finally:
                answer.end()
    except HubError as exc:
        reply.error = str(exc)
    if reply.text:
        out.write("\n")
        out.flush()
    return reply


class AnswerText:
    """The answer as it streams to ``out``: on a terminal broken between words at its width
    (word_wrap.py), and the progress line told before each write, so it makes way."""

    def __init__(self, out: TextIO, progress: ProgressLine) -> None:
        self.out, self.progress = out, progress
        self.wrap = WordWrap(terminal_width(out)) if is_terminal(out) else None

    def write(self, fragment: str) -> None:
        self._show(self.wrap.feed(fragment) if self.wrap else fragment)

    def pause(self) -> None:
        if self.wrap:
            self._show(self.wrap.flush())

    def end(self) -> None:
        if self.wrap:
            self._show(self.wrap.end())

    def _show(self, text: str) -> None:
        if text:
            self.progress.text(text)
            self.out.write(text)
            self.out.flush()


def model_headers(args: argparse.Namespace) -> dict[str, str]:
    chosen = ((c.H_MODEL_PROVIDER, args.model_provider), (c.H_MODEL_ID, args.model_id))
    return {name: value for name, value in chosen if value}


@dataclass
class Session:
    """A hub to talk to for the whole session, and how to let it go."""

    url: str
    client: Any
    stack: contextlib.AsyncExitStack

    async def close(self) -> None:
        await self.stack.aclose()


async def _open_session(settings: Settings, url: str | None, given: str | None) -> Session:
    stack = contextlib.AsyncExitStack()
    client = await stack.enter_async_context(hub_for_chat(settings, url, given))
    return Session(client.url, client, stack)


@contextlib.asynccontextmanager
async def hub_for_chat(
    settings: Settings, url: str | None, given_token: str | None = None
) -> AsyncIterator[Any]:
    """A client of the given hub (which must answer), else of the local one if it answers,
    else of one started in this process. A local hub named by ``--host``/``--port`` or by
    ``TINY_HUB_HOST``/``TINY_HUB_PORT`` is a given hub: it must answer too."""
    from hub.client.http import HubClient, HubError

    local = local_url(settings, None)
    given = url.rstrip("/") if url else (local if names_a_hub(settings) else None)
    if given:
        client = HubClient(given, token(settings, given_token), pin=pin(settings, given))
        try:
            await client.health()
        except HubError as exc:
            raise CliError(unreachable(given, exc)) from None
        yield client
        return
    try:
        await HubClient(local, pin=pin(settings, local)).health()
        yield HubClient(local, token(settings, given_token), pin=pin(settings, local))
        return
    except HubError:
        pass
    async with _in_process_hub(settings) as started:
        yield HubClient(started, token(settings, given_token))


def names_a_hub(settings: Settings) -> bool:
    """Whether the host or port was given on the command line or in the environment (not left
    to config.toml or the default): the person means a hub that is running there."""
    sources = setting_sources(settings)
    return any(sources[name] == "flag" or sources[name].startswith("env ") for name in LISTEN)


def unreachable(url: str, exc: Exception) -> str:
    """One sentence for a hub that did not answer (the client's own "cannot reach the hub at
    URL: " is not said twice)."""
    cause = str(exc).removeprefix(f"cannot reach the hub at {url}: ")
    return f"could not reach the hub at {url}: {cause}"


@contextlib.asynccontextmanager
async def _in_process_hub(settings: Settings) -> AsyncIterator[str]:
    from hub.api.server import RunningServer, start_server
    from hub.runtime.hub import Hub

    hub = Hub.open(settings)
    server: RunningServer | None = None
    try:
        server = await start_server(hub, "127.0.0.1", 0)
        yield server.url
    finally:
        if server is not None:
            await server.stop()
        hub.close()
