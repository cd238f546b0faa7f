"""The hub as a dial-in device of the cloud relay (docs/protocol.md, dial-in devices, from the
device's side).

It is one module on purpose: the heartbeat, the relay pulls and the outbox's delivery share one
link state (online, offline, refused) and one backoff; split, two loops could disagree about
whether the cloud is there.

Three tasks: a heartbeat (presence for the cloud's 60 s window, with the full capability list and
``lanUrl``), the relay loop (pull, handle, reply) and the event forwarder (the hub's own device
events of the kinds the cloud accepts — wake words, transcripts, notes — to
``POST /api/devices/event``). They are separate
so a long ``invoke`` — the local model thinking for a minute — never lets the hub's presence
lapse, and a burst of events never waits behind a pull.

Replies are never sent directly: each one is stored in the durable outbox first, and only then
is the outbox drained, so a reply survives a crash or an outage ("an envelope is acknowledged
only after its reply is stored in the outbox"). A reply is stored together with what goes with
it, in one transaction: the pictures the turn produced (uploads queued ahead of the reply, whose
URLs the outbox fills in when it sends the reply) and, for a job that outlasted the owner's
``use_device`` wait, its ``task-result`` (queued after the reply), so the owner hears it is done.
Everything is async and every failure is caught here, so local chat keeps working whatever the
cloud does:

- ``CloudUnavailable`` (unreachable, 5xx, garbage): exponential backoff with jitter, capped;
  the status says ``offline`` since the first failure, with the reason.
- ``CloudAuthError`` (401/403): the token is dead, retrying cannot help, so both loops stop and
  the status tells the owner what to do — logged once, the cloud is not hammered.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hub.agent.compose import Answer, Picture, answer_with_images
from hub.cloud.client import (
    CloudAuthError,
    CloudClient,
    CloudError,
    CloudRefused,
    Envelope,
    backoff_s,
)
from hub.cloud.outbox import Call, DrainResult, images_from, upload_call
from hub.cloud.rounds import LinkState, rounds
from hub.contracts import CLOUD_EVENT_KINDS, NOTE_EVENT, RELAY_PAYLOAD_MAX_BYTES
from hub.core.tasks import cancel_all
from hub.devices.events import RingEvent
from hub.devices.media import IMAGE_FORMATS
from hub.devices.relay import DEAD_LETTER_AFTER_S
from hub.runtime.hub import Hub

log = logging.getLogger(__name__)


HUB_CAPABILITIES = ("chat", "memory")
RESULT_BUDGET_BYTES = 7680  # the result text's share of the 8 KB reply; the rest is headroom
MAX_REPLY_IMAGES = 4
# Room kept in the reply for each picture's {url, format}: the URL is only known once the cloud
# took the upload, so the text is cut to leave this much (a longer URL drops that picture).
IMAGE_URL_ROOM = 256
# The owner's use_device waits about 45 s (hub.devices.service.INVOKE_WAIT_S) and then answers
# "pending"; a job slower than this is also reported as a task result, with some margin.
BACKGROUND_AFTER_S = 40.0
SUMMARY_MAX = 160
# A task result's {taskId, summary, result} as ASCII-escaped JSON, the strictest way the cloud
# may measure it; the rest of the 8 KB is for the device name the cloud adds.
TASK_BUDGET_BYTES = 7168
PULL_LIMIT = 10
# What a pull asks the cloud to hold it for: the most the relay allows (25 s), well inside the
# 60 s presence window, which a held pull also keeps.
LONG_POLL_S = 25.0
REPLY_PATH = "/api/devices/relay"
EVENT_PATH = "/api/devices/event"
TASK_PATH = "/api/devices/task-result"
IMAGE_TYPES = {fmt: content_type for content_type, fmt in IMAGE_FORMATS.items()}
REFUSED_DETAIL = (
    "The cloud refused this hub's device token (it was revoked, or the device was removed). "
    "Run `tiny-hub cloud join` to enroll again, or `tiny-hub cloud adopt` to take the existing "
    "device back with a new token; the hub keeps working locally meanwhile."
)

Answerer = Callable[[Hub, str], Awaitable[Answer]]


class OutboxLike(Protocol):
    """What the link needs of ``hub.cloud.outbox.Outbox``: store a call durably, deliver later."""

    def put(
        self, method: str, path: str, body: dict[str, Any], *, key: str | None = None
    ) -> int: ...

    def put_all(self, calls: Sequence[Call]) -> list[int]: ...

    async def drain(self, client: CloudClient) -> DrainResult: ...

    def pending_count(self) -> int: ...


class Notifier(Protocol):
    """What the link needs of ``hub.cloud.notify.DesktopNotifier``."""

    def show(self, title: str, body: str) -> None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class Reply:
    """An envelope's answer: the payload's JSON text (≤ 8 KB), the pictures it shows, and the
    task result owed when the job outlasted the owner's wait."""

    payload: str
    images: tuple[Picture, ...] = ()
    task: dict[str, Any] | None = None

    def calls(self, envelope_id: str) -> list[Call]:
        """What to store for it, in delivery order: uploads, the reply, the task result."""
        uploads = [(f"media:{n}:{envelope_id}"[:100], image) for n, image in enumerate(self.images)]
        calls = [upload_call(i.data, IMAGE_TYPES[i.format], key) for key, i in uploads]
        body = {"inReplyTo": envelope_id, "payload": self.payload}
        if uploads:
            body.update(images_from([(key, image.format) for key, image in uploads]))
        calls.append(Call("PATCH", REPLY_PATH, body, f"reply:{envelope_id}"[:100]))
        if self.task is not None:
            calls.append(Call("POST", TASK_PATH, self.task, f"task:{envelope_id}"[:100]))
        return calls


async def answer_as_owner(hub: Hub, prompt: str) -> Answer:
    """The local agent, run as the hub's owner (the cloud's owner is the person who enrolled
    this hub, so the owner's tinys, memory and tools are the right ones)."""
    return await answer_with_images(hub, hub.owner, prompt)


def fit_result(text: str, budget: int = RESULT_BUDGET_BYTES) -> str:
    """``{"result": text}`` as JSON within ``budget`` bytes: a longer text is cut with a note
    saying how much was left out, so the cloud never rejects the reply for its size."""
    return _dump({"result": _fit(text, lambda t: len(_dump({"result": t}).encode()) <= budget)})


def image_room(count: int) -> int:
    """The bytes ``count`` pictures may take in a reply (``,"images":[...]``)."""
    if not count:
        return 0
    entry = {"url": "u" * IMAGE_URL_ROOM, "format": "jpeg"}
    return len(_dump({"images": [entry] * count}))


def task_result(task_id: str, text: str, summary: str | None = None) -> dict[str, Any]:
    """``{taskId, summary, result}`` for a finished job; the result is cut like a reply's."""
    summary = summary if summary is not None else _summary(text)
    if not text:
        return {"taskId": task_id, "summary": summary}

    def fits(cut: str) -> bool:
        body = {"taskId": task_id, "summary": summary, "result": cut}
        return len(json.dumps(body)) <= TASK_BUDGET_BYTES

    return {"taskId": task_id, "summary": summary, "result": _fit(text, fits)}


def _summary(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= SUMMARY_MAX else first[: SUMMARY_MAX - 1] + "…"


def _fit(text: str, fits: Callable[[str], bool]) -> str:
    """``text``, or its longest prefix that ``fits`` with a note saying how much was left out
    (the note is small; the budgets leave room for it)."""
    if fits(text):
        return text
    low, high = 0, len(text)  # a JSON encoding's length grows with the prefix: bisect
    while low < high:
        middle = (low + high + 1) // 2
        if fits(text[:middle]):
            low = middle
        else:
            high = middle - 1
    return text[:low] + f"\n\n(truncated: {len(text) - low} characters more)"


def forwardable(event: RingEvent) -> bool:
    """A device event the cloud should see: one of the kinds its ring accepts (a driver's own
    kinds stay on this hub's ring), and not one the cloud itself sent (a ``notify`` becomes a
    ``device_note`` with ``source: cloud`` — no echo)."""
    if event.kind not in CLOUD_EVENT_KINDS:
        return False
    detail = event.detail
    return not (isinstance(detail, dict) and detail.get("source") == "cloud")


def _asked_at(envelope: Envelope, pulled_at: float, pulled_wall: float) -> float:
    """When the owner began waiting, on the monotonic clock: the pull, moved back by the time
    the envelope sat in the mailbox. That wait is read from the cloud's ``created_at`` and so
    counts only when it is plausible (not in the future, not beyond an envelope's hour): two
    machines' clocks differ, and a wrong clock must not turn every answer into a task result."""
    created = envelope.created_at
    if isinstance(created, (int, float)) and 0 <= pulled_wall - created <= DEAD_LETTER_AFTER_S:
        return pulled_at - (pulled_wall - created)
    return pulled_at


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _error(message: str) -> str:
    return _dump({"ok": False, "error": message[:1000]})


class CloudLink:
    """Keeps the hub present at the cloud and answers what the cloud's relay sends it."""

    def __init__(
        self,
        hub: Hub,
        client: CloudClient,
        outbox: OutboxLike,
        *,
        heartbeat_s: float = 20.0,
        idle_poll_s: float = 3.0,
        long_poll_s: float = LONG_POLL_S,
        backoff_min_s: float = 1.0,
        backoff_max_s: float = 300.0,
        clock: Callable[[], float] = time.time,
        answerer: Answerer = answer_as_owner,
        background_after_s: float = BACKGROUND_AFTER_S,
        notifier: Notifier | None = None,
        idle_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.hub = hub
        self.client = client
        self.outbox = outbox
        self.heartbeat_s = heartbeat_s
        self.idle_poll_s = idle_poll_s
        # Pulls ask the cloud to hold them this long; a cloud that refuses ``wait`` turns it off
        # (polling every idle_poll_s, as before) until the link starts again.
        self.long_poll_s = long_poll_s
        self.long_poll = long_poll_s > 0
        self._held_s = 0.0  # how long the last pull was held: a held pull needs no idle sleep
        self.backoff_min_s = backoff_min_s
        self.backoff_max_s = backoff_max_s
        self.clock = clock
        self.answerer = answerer
        self.background_after_s = background_after_s
        self.notifier = notifier
        self.idle_sleep = idle_sleep  # the pause between pulls (a test records it)
        self.state: LinkState = "starting"
        self.since: float | None = None
        self.detail = "connecting to the cloud"
        self.handled = 0  # envelopes answered (replies stored), for tests and status
        self.forwarded = 0  # device events stored in the outbox for the cloud, for tests
        # The ring id the forwarder follows from: the newest at the first start (history is not
        # replayed), then the last one forwarded, so a stop/start sends what came meanwhile.
        self._events_after: int | None = None
        self._tasks: list[asyncio.Task[None]] = []

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self.running:
            return
        self.long_poll = self.long_poll_s > 0
        self.state, self.since, self.detail = "starting", None, "connecting to the cloud"
        if self._events_after is None:
            newest = self.hub.devices.events.recent(self.hub.owner.id, limit=1)
            self._events_after = newest[-1].id if newest else 0
        self._tasks = [
            asyncio.create_task(self._heartbeat_loop(), name="cloud-heartbeat"),
            asyncio.create_task(self._relay_loop(), name="cloud-relay"),
            asyncio.create_task(self._events_loop(), name="cloud-events"),
        ]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_all(tasks)
        if self.notifier is not None:
            await self.notifier.close()

    @property
    def running(self) -> bool:
        return any(not t.done() for t in self._tasks)

    def status(self) -> dict[str, Any]:
        """For ``/api/health`` and the TUI: ``cloud: offline since <time>`` comes from here."""
        try:
            pending = self.outbox.pending_count()
        except Exception:  # a status read must not fail the health route
            log.warning("cannot count the cloud outbox", exc_info=True)
            pending = -1
        return {"state": self.state, "since": self.since, "detail": self.detail, "pending": pending}

    # --- the three loops -------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        async for _ in rounds(
            lambda: self.client.heartbeat(self._capabilities(), self.hub.lan.url),
            lambda exc: self._failed(exc, "heartbeat"),
            self._backoff,
            "cloud heartbeat failed",  # e.g. a driver's capability list failed
        ):
            self._online()
            await asyncio.sleep(self.heartbeat_s)

    async def _relay_loop(self) -> None:
        async for batch in rounds(
            self._round,
            lambda exc: self._failed(exc, "relay"),
            self._backoff,
            "cloud relay round failed",
        ):
            self._online()
            # A cloud that held the pull has already waited; one that answered at once (it
            # ignores ``wait``, or polls are plain) gets the idle sleep, as before.
            await self.idle_sleep(0 if batch else max(0.0, self.idle_poll_s - self._held_s))

    async def _events_loop(self) -> None:
        """Forward the owner's device events, live, each stored in the outbox before anything
        else (key ``event:<ring id>``: a second put of the same event stores nothing, so a
        restart or a stop/start cannot send one twice). Delivery is tried at once while the
        link is online; otherwise the relay loop's next round delivers it, under its backoff."""
        ring, owner = self.hub.devices.events, self.hub.owner.id
        async for event in ring.follow(owner, self._events_after or 0):
            try:
                if forwardable(event):
                    body = {"kind": event.kind, "detail": event.detail}
                    self.outbox.put("POST", EVENT_PATH, body, key=f"event:{event.id}")
                    self.forwarded += 1
                self._events_after = event.id
                if forwardable(event) and self.state == "online":
                    await self._drain()
            except CloudError as exc:
                if not self._failed(exc, "event"):
                    return
            except Exception:  # a local fault (the database): log it, keep following
                log.exception("forwarding device event %d to the cloud failed", event.id)

    async def _round(self) -> int:
        """Deliver what is owed, pull a batch, answer each envelope into the outbox, deliver.
        Returns how many envelopes came (0: the relay is idle)."""
        if self.outbox.pending_count():
            await self._drain()
        envelopes = await self._pull()
        pulled_at, pulled_wall = time.monotonic(), self.clock()
        for envelope in envelopes:
            reply = await self._reply(envelope, _asked_at(envelope, pulled_at, pulled_wall))
            # stored before anything else happens: the reply now outlives a crash or outage
            self.outbox.put_all(reply.calls(envelope.id))
            self.handled += 1
        if envelopes:
            await self._drain()
        return len(envelopes)

    async def _pull(self) -> list[Envelope]:
        """One pull, held by the cloud when it takes ``wait``. A cloud that refuses the field
        (a 400/422 for the pull that carried it) is polled without it from then on."""
        started = time.monotonic()
        try:
            if not self.long_poll:
                return await self.client.pull(PULL_LIMIT)
            try:
                return await self.client.pull(PULL_LIMIT, self.long_poll_s)
            except CloudRefused as exc:
                log.info(
                    "the cloud does not take wait (%s): polling every %g s", exc, self.idle_poll_s
                )
                self.long_poll = False
                return await self.client.pull(PULL_LIMIT)
        finally:
            self._held_s = time.monotonic() - started

    async def _deliver_owed(self) -> None:
        try:
            if self.outbox.pending_count():
                await self._drain()
        except CloudError as exc:
            self._failed(exc, "delivery")
        except Exception:  # a local fault (the database): the relay loop's next round retries
            log.exception("delivering the cloud outbox failed")

    async def _drain(self) -> None:
        """Deliver the outbox; its stopping error (it never raises one) becomes ours, so an
        outage or a dead token during delivery is handled like one during a pull."""
        result = await self.outbox.drain(self.client)
        if result.stopped is not None:
            raise result.stopped

    # --- envelopes -------------------------------------------------------------------------

    async def _handle(self, envelope: Envelope) -> str:
        """One envelope → its reply's JSON text (≤ 8 KB) alone."""
        return (await self._reply(envelope, time.monotonic())).payload

    async def _reply(self, envelope: Envelope, asked_at: float) -> Reply:
        """One envelope → its reply; never an exception, never silence. ``asked_at`` is when
        the owner began waiting, on ``time.monotonic``'s clock."""
        try:
            parsed = json.loads(envelope.payload)
        except json.JSONDecodeError:
            return Reply(_error("unknown envelope type (the payload is not JSON)"))
        kind = parsed.get("type") if isinstance(parsed, dict) else None
        if kind == "invoke" and isinstance(parsed, dict):
            return await self._invoke(envelope.id, parsed.get("prompt"), asked_at)
        if kind == "notify" and isinstance(parsed, dict):
            return Reply(self._notify(parsed))
        shown = kind if isinstance(kind, str) else json.dumps(kind)
        return Reply(_error(f"unknown envelope type {shown[:100]}"))

    async def _invoke(self, envelope_id: str, prompt: Any, asked_at: float) -> Reply:
        if not isinstance(prompt, str) or not prompt.strip():
            return Reply(_error("invoke needs a non-empty prompt"))
        try:
            answered = await self.answerer(self.hub, prompt)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the model is down, the tiny is gone...: say so, in-band
            log.warning("cloud invoke failed: %s", exc)
            said = f"the hub could not answer: {exc}"
            failed = task_result(envelope_id, "", _summary(said)) if self._slow(asked_at) else None
            return Reply(_error(said), task=failed)
        images = tuple(i for i in answered.images if i.format in IMAGE_TYPES)[:MAX_REPLY_IMAGES]
        payload = fit_result(answered.text, RESULT_BUDGET_BYTES - image_room(len(images)))
        task = task_result(envelope_id, answered.text) if self._slow(asked_at) else None
        return Reply(payload, images, task)

    def _slow(self, asked_at: float) -> bool:
        """The owner's ``use_device`` has given up waiting: the answer is a background job's."""
        return time.monotonic() - asked_at > self.background_after_s

    def _notify(self, envelope: dict[str, Any]) -> str:
        """Onto the owner's event ring as a ``device_note`` (the TUI's event stream shows it),
        and onto the desktop where the machine has one."""
        fields = ("title", "body", "tag", "url")
        detail: dict[str, Any] = {key: envelope[key] for key in fields if key in envelope}
        detail["source"] = "cloud"
        if len(_dump(detail).encode("utf-8")) > RELAY_PAYLOAD_MAX_BYTES:
            return _error(f"notification is over {RELAY_PAYLOAD_MAX_BYTES} bytes")
        self.hub.devices.events.publish(self.hub.owner.id, NOTE_EVENT, None, detail)
        if self.notifier is not None:
            title, body = _text(envelope.get("title")), _text(envelope.get("body"))
            try:
                self.notifier.show(title or "tiny-hub", body)
            except Exception:  # a courtesy on top of the ring: it must not fail the reply
                log.exception("showing a desktop notification failed")
        return _dump({"ok": True})

    # --- state -----------------------------------------------------------------------------

    def _capabilities(self) -> list[str]:
        return sorted({*HUB_CAPABILITIES, *self.hub.capabilities()})

    def _online(self) -> None:
        if self.state == "refused":
            return
        if self.state != "online":  # since: when it came (back) online, not the last call
            log.info("cloud link online (%s)", self.client.url)
            self.state, self.since = "online", self.clock()
            # What was stored while offline goes now: the relay loop may be in a held pull,
            # and its next round could be the cloud's whole wait away.
            self._tasks.append(asyncio.create_task(self._deliver_owed(), name="cloud-owed"))
        self.detail = f"connected to {self.client.url}"

    def _failed(self, exc: CloudError, where: str) -> bool:
        """Record a failure; False when the loops must end (the token was refused)."""
        if isinstance(exc, CloudAuthError):
            if self.state != "refused":
                log.error("cloud link stopped: %s. %s", exc, REFUSED_DETAIL)
                self.state, self.since, self.detail = "refused", self.clock(), REFUSED_DETAIL
                current = asyncio.current_task()
                for task in self._tasks:
                    if task is not current:
                        task.cancel()
            return False
        if self.state == "refused":
            return False
        reason = str(exc)
        if isinstance(exc, CloudRefused):  # our request is wrong: worth a louder line
            log.warning("cloud %s refused: %s", where, reason)
        if self.state != "offline":
            log.warning("cloud link offline: %s", reason)
            self.state, self.since = "offline", self.clock()
        self.detail = reason
        return True

    def _backoff(self, failures: int) -> float:
        return backoff_s(failures, self.backoff_min_s, self.backoff_max_s)
