"""The cloud's ``notify`` as a desktop notification, where the machine has a way to show one.

The ring event (which the TUI shows) is the notification of record; this is a courtesy on top,
so it must never get in the way: the command is looked up on PATH each time (notify-send on
Linux, osascript on macOS; none found means nothing to do), it runs as a subprocess the event
loop does not wait for, it is killed after a few seconds, and a failure is logged once — a
headless server with notify-send but no desktop session would otherwise log every notification.
Title and body are passed as arguments, never through a shell or into a script's text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sys
from collections.abc import Callable

from hub.core.tasks import cancel_all

log = logging.getLogger(__name__)

SHOW_TIMEOUT_S = 5.0
TITLE_MAX = 200
BODY_MAX = 1000
APP_NAME = "tiny-hub"
# AppleScript reads title and body from its arguments, so no text can break out of the script.
OSASCRIPT = (
    "on run argv",
    "display notification (item 2 of argv) with title (item 1 of argv)",
    "end run",
)

Which = Callable[[str], str | None]


def desktop_command(
    title: str, body: str, *, which: Which = shutil.which, platform: str = sys.platform
) -> list[str] | None:
    """The command that shows one notification on this machine, or None when it has none."""
    title, body = title[:TITLE_MAX], body[:BODY_MAX]
    if platform == "darwin":
        osascript = which("osascript")
        if osascript is None:
            return None
        return [osascript, *(arg for line in OSASCRIPT for arg in ("-e", line)), title, body]
    notify_send = which("notify-send")
    if notify_send is None:
        return None
    # "--": a title that starts with "-" is a title, not an option
    return [notify_send, f"--app-name={APP_NAME}", "--", title, body]


class DesktopNotifier:
    def __init__(
        self,
        *,
        timeout_s: float = SHOW_TIMEOUT_S,
        which: Which = shutil.which,
        platform: str = sys.platform,
        about: str = "the cloud's notifications",
        setting: str = "cloud.desktop_notifications",
    ) -> None:
        self.timeout_s = timeout_s
        self.about, self.setting = about, setting  # what the one warning names
        self._which = which
        self._platform = platform
        self._tasks: set[asyncio.Task[None]] = set()
        self._warned = False
        self.shown = 0  # commands that finished with status 0, for tests and status

    def show(self, title: str, body: str) -> None:
        """Start showing one notification and return at once; never raises."""
        command = desktop_command(title, body, which=self._which, platform=self._platform)
        if command is None:
            return
        task = asyncio.create_task(self._run(command), name="desktop-notification")
        self._tasks.add(task)  # a task nobody references may be collected mid-run
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Stop what is still running (the hub is stopping)."""
        tasks, self._tasks = set(self._tasks), set()
        await cancel_all(tasks)

    async def _run(self, command: list[str]) -> None:
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            self._failed(f"{command[0]} could not be started: {exc}")
            return
        try:
            _, stderr = await asyncio.wait_for(process.communicate(), self.timeout_s)
        except TimeoutError:
            self._failed(f"{command[0]} did not finish within {self.timeout_s:g} s")
            return
        finally:
            if process.returncode is None:  # timed out or cancelled: do not leave it behind
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                with contextlib.suppress(asyncio.CancelledError):
                    await process.wait()
        if process.returncode != 0:
            said = stderr.decode("utf-8", "replace").strip()[:300] or "no detail"
            self._failed(f"{command[0]} exited with {process.returncode}: {said}")
            return
        self.shown += 1

    def _failed(self, reason: str) -> None:
        if self._warned:
            log.debug("desktop notification failed: %s", reason)
            return
        self._warned = True
        log.warning(
            "cannot show desktop notifications (%s); %s still reach the event ring and the "
            "TUI. Set %s = false to stop trying",
            reason,
            self.about,
            self.setting,
        )
