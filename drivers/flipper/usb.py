"""The Flipper Zero over its USB CLI: status, listening on Sub-GHz / IR / NFC, files, find-me.

The protocol lives here; the agent's tools (``drivers/flipper/tools.py``, brought to the hub by
``FlipperDriver.agent_tools``) stay mounted while the Flipper is away and answer "Flipper is not
connected", which a per-device tool could not.
Only commands on an allowlist are ever sent (``rules.py``) — nothing that transmits (``subghz tx``,
``ir tx``, ``nfc emulate``) is reachable — and every command is audited through the hub before it
is written to the port.

File reads go over the protobuf RPC on the same port (``drivers/flipper/rpc.py``): binary-safe
and faster than ``storage read``; everything else stays on the CLI. RPC requests are on an
allowlist of their own and audited the same way (``rpc storage_read /ext/...``). When an RPC
exchange breaks (a truncated frame, a corrupt length) the port is closed and reopened, which gives
a fresh text shell. The same Flipper over Bluetooth LE is ``ble.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from drivers.base import Driver, DriverStatus, Setting, UsbMatcher
from drivers.flipper.cli import (
    CliError,
    ir_signals,
    key_values,
    nfc_protocols,
    opened_nfc_shell,
    raise_for_error,
    storage_list,
    storage_read,
    storage_stat,
    subghz_packets,
)
from drivers.flipper.rpc import RpcError, RpcSession, RpcSessionClosed
from drivers.flipper.rules import (
    COMMAND_S,
    READ_MAX_BYTES,
    RPC_ALLOWED,
    USB_DRIVER,
    Flipper,
    FlipperRefused,
    NotConnected,
    allowed,
    checked_frequency,
    checked_path,
    checked_seconds,
    number,
)
from drivers.transports.serial import NoPrompt, PortGone, SerialLine, SerialLineError

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s
    from strands.types.tools import AgentTool

log = logging.getLogger(__name__)
T = TypeVar("T")

PROMPT = b">: "


class FlipperDriver(Flipper, Driver):
    name: ClassVar[str] = USB_DRIVER
    over: ClassVar[str] = "USB"
    link: ClassVar[str] = "usb"
    # 0483:5740 is ST's generic virtual COM port: the Flipper's serial number or product name
    # must also match, or any STM32 gadget would be taken for a Flipper.
    usb: ClassVar[tuple[UsbMatcher, ...]] = (
        UsbMatcher(vid=0x0483, pid=0x5740, serial_number="flip_*"),
        UsbMatcher(vid=0x0483, pid=0x5740, product="Flipper *"),
    )
    capabilities: ClassVar[tuple[str, ...]] = ("flipper", "subghz", "ir", "nfc", "storage")
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting(
            "port",
            "",
            "pin the Flipper to this path (a port, a pseudo-terminal or a symlink); empty finds it",
        ),
        Setting("deny", (), "serial numbers of Flippers the hub must leave alone"),
    )

    @classmethod
    def agent_tools(cls) -> Sequence[AgentTool]:
        """The Flipper's tools, for a Flipper over USB or over BLE (this family brings them)."""
        from drivers.flipper.tools import TOOLS  # loads strands (~0.4 s): when first mounted

        return TOOLS

    def __init__(self, device_id: str, port: str, config: Mapping[str, Any]) -> None:
        super().__init__(device_id, port, config)
        self._line = SerialLine()
        self.info: dict[str, str] = {}
        self._nfc_command: str | None = None
        self._last_ok = 0.0
        self.rpc_within_s = COMMAND_S
        """How long one RPC frame may take before the exchange counts as broken."""

    # --- the manager's side -------------------------------------------------------------------

    async def start(self) -> None:
        await self._line.open(self.port)
        await self._sync()
        self.info = key_values(await self.run("device_info"))
        if "hardware_model" not in self.info:
            raise CliError("this device answered device_info without a hardware_model")

    async def _sync(self) -> None:
        await self._line.write(b"\r")
        await self._line.read_until(PROMPT, within_s=COMMAND_S)

    async def _reopen(self) -> None:
        """Close and reopen the port: the firmware ends the RPC session and starts a new shell."""
        async with self._line.transaction():
            await self._line.close()
            try:
                await self._line.open(self.port)
                await self._sync()
            except SerialLineError as exc:
                await self._line.close()
                raise NotConnected(f"Flipper is not connected (reopening failed: {exc})") from None

    async def stop(self) -> None:
        await self._line.close()

    def status(self) -> DriverStatus:
        if not self._line.is_open:
            return DriverStatus("offline", "Flipper is not connected")
        return DriverStatus("online", f"Flipper {self.device_name}, firmware {self.firmware}")

    async def probe(self) -> bool:
        if self._line.busy or time.monotonic() - self._last_ok < 2.0:
            return True
        try:
            await self._line.command("", prompt=PROMPT, within_s=2.0)
        except SerialLineError:
            return False
        self._last_ok = time.monotonic()
        return True

    # --- what the tools ask -------------------------------------------------------------------

    @property
    def device_name(self) -> str:
        return self.info.get("hardware_name", "?")

    @property
    def firmware(self) -> str:
        return self.info.get("firmware_version", "?")

    async def run(
        self,
        line: str,
        *,
        within_s: float = COMMAND_S,
        stop_after_s: float | None = None,
        nfc_shell: bool = False,
    ) -> bytes:
        """Send one allowed command (``nfc_shell``: one allowed in the NFC sub-shell);
        NotConnected when the port is gone."""
        if not allowed(line, nfc_shell=nfc_shell):
            raise FlipperRefused(f"the hub does not send `{line}` to a Flipper")
        self.audit(line)
        try:
            output = await self._line.command(
                line, prompt=PROMPT, within_s=within_s, stop_after_s=stop_after_s
            )
        except PortGone:
            raise NotConnected("Flipper is not connected (it went away mid-command)") from None
        except NoPrompt as exc:
            raise CliError(f"the Flipper did not finish `{line}`: {exc}") from None
        self._last_ok = time.monotonic()
        return output

    async def summary(self) -> dict[str, Any]:
        power = await self._power()
        return {
            "model": self.info.get("hardware_model"),
            "name": self.device_name,
            "firmware": self.firmware,
            "battery": {
                "level": number(power.get("charge.level") or power.get("charge_level")),
                "state": power.get("charge.state") or power.get("charge_state"),
                "voltage_mV": number(power.get("battery.voltage") or power.get("battery_voltage")),
            },
            "connection": f"USB serial on {self.port}",
            "running_app": running_app(await self.run("loader info")),
        }

    async def _power(self) -> dict[str, str]:
        """``info power`` on current firmware, ``power info`` on older ones."""
        for command in ("info power", "power info"):
            output = await self.run(command)
            try:
                raise_for_error(output)
            except CliError:
                continue
            values = key_values(output)
            if values:
                return values
        return {}

    async def listen(self, kind: str, seconds: int, frequency: int) -> dict[str, Any]:
        seconds = checked_seconds(seconds)
        budget = seconds + COMMAND_S
        if kind == "subghz":
            frequency = checked_frequency(frequency)
            output = await self.run(
                f"subghz rx {frequency} 0", within_s=budget, stop_after_s=seconds
            )
            raise_for_error(output)
            packets, count = subghz_packets(output)
            return {
                "kind": kind,
                "frequency": frequency,
                "seconds": seconds,
                "packets": packets,
                "count": count if count is not None else len(packets),
            }
        if kind == "ir":
            output = await self.run("ir rx", within_s=budget, stop_after_s=seconds)
            raise_for_error(output)
            return {"kind": kind, "seconds": seconds, "signals": ir_signals(output)}
        if kind == "nfc":
            return {"kind": kind, "seconds": seconds, "found": await self._nfc(seconds)}
        raise FlipperRefused("listen for subghz, ir or nfc")

    async def _nfc(self, seconds: int) -> list[str]:
        """Which NFC command the firmware has is found out once and remembered: ``nfc scanner``
        (one-shot, Momentum), ``nfc detect`` (dev firmware), or the newest official firmware's
        sub-shell, which ``nfc scanner`` opens as well (its arguments are ignored)."""
        if self._nfc_command == "nfc":
            return await self._nfc_shell_scan(seconds, await self.run("nfc"))
        for command in [self._nfc_command] if self._nfc_command else ["nfc scanner", "nfc detect"]:
            output = await self.run(command, within_s=seconds + COMMAND_S, stop_after_s=seconds)
            if opened_nfc_shell(output):
                self._nfc_command = "nfc"
                return await self._nfc_shell_scan(seconds, output)
            try:
                raise_for_error(output)
            except CliError:
                if self._nfc_command:
                    raise
                continue
            self._nfc_command = command
            return nfc_protocols(output)
        raise CliError("this firmware has neither `nfc scanner` nor `nfc detect`")

    async def _nfc_shell_scan(self, seconds: int, opening: bytes) -> list[str]:
        """``scanner`` then ``exit`` in the NFC sub-shell that printed ``opening``. Anything
        going wrong in there reopens the port, so the next command finds the main shell."""
        try:
            if not opened_nfc_shell(opening):
                raise CliError("`nfc` did not open the NFC sub-shell")
            output = await self.run(
                "scanner", within_s=seconds + COMMAND_S, stop_after_s=seconds, nfc_shell=True
            )
            await self.run("exit", nfc_shell=True)
        except CliError:
            await self._reopen()
            raise
        raise_for_error(output)
        return nfc_protocols(output)

    async def _list(self, path: str) -> list[dict[str, Any]]:
        entries = storage_list(await self.run(f"storage list {path}"))
        return [{"name": e.name, "dir": e.is_dir, "size": e.size} for e in entries]

    async def _stat(self, path: str) -> dict[str, Any]:
        return storage_stat(await self.run(f"storage stat {path}"))

    async def read_file(self, path: str) -> bytes:
        """A file's bytes over RPC (stat, then read, in one session), at most READ_MAX_BYTES."""
        path = checked_path(path)

        async def stat_then_read(session: RpcSession) -> tuple[int, bytes]:
            self._audit_rpc("storage_stat", path)
            stat = await session.storage_stat(path)
            if stat.is_dir:
                raise FlipperRefused(f"{path} is not a file")
            if stat.size > READ_MAX_BYTES:
                raise FlipperRefused(
                    f"{path} is {stat.size} bytes; reads are limited to {READ_MAX_BYTES}"
                )
            self._audit_rpc("storage_read", path)
            return stat.size, await session.storage_read(path)

        size, data = await self._over_rpc(stat_then_read)
        if len(data) != size:
            raise CliError(f"storage read was cut short: {len(data)} of {size} bytes")
        return data

    async def read_file_cli(self, path: str) -> bytes:
        """The same over the text CLI (``storage read``): kept for comparison and fallback."""
        path = checked_path(path)
        stat = storage_stat(await self.run(f"storage stat {path}"))
        if stat.get("type") != "file":
            raise FlipperRefused(f"{path} is not a file")
        size = int(str(stat["size"]))
        if size > READ_MAX_BYTES:
            raise FlipperRefused(f"{path} is {size} bytes; reads are limited to {READ_MAX_BYTES}")
        return storage_read(
            await self.run(f"storage read {path}", within_s=COMMAND_S + size / 10_000)
        )

    def _audit_rpc(self, request: str, path: str | None = None) -> None:
        if request not in RPC_ALLOWED:
            raise FlipperRefused(f"the hub does not send the RPC request {request} to a Flipper")
        self.audit(f"rpc {request}" + (f" {path}" if path else ""))

    async def _over_rpc(self, work: Callable[[RpcSession], Awaitable[T]]) -> T:
        """``work`` in an RPC session. When the Flipper closes the session because a request
        arrived garbled (``RpcSessionClosed``), the port is reopened (``_rpc``) and ``work`` runs
        once more in a new session: the caller sees only a retried command."""
        try:
            async with self._rpc() as session:
                return await work(session)
        except RpcSessionClosed as exc:
            log.warning(
                "the Flipper on %s closed the RPC session (%s); retrying once", self.port, exc
            )
        async with self._rpc() as session:
            return await work(session)

    @contextlib.asynccontextmanager
    async def _rpc(self) -> AsyncIterator[RpcSession]:
        """An RPC session holding the line; back to the CLI afterwards, whatever happened.

        A broken exchange (or a session that will not stop cleanly) reopens the port, so the
        next CLI command finds a fresh shell.
        """
        async with self._line.transaction():
            session = RpcSession(self._line, within_s=self.rpc_within_s, prompt=PROMPT)
            self.audit("start_rpc_session")
            try:
                try:
                    await session.start()
                    yield session
                finally:
                    if session.active and not session.broken:
                        self.audit("rpc stop_session")
                        await session.stop()
            except PortGone:
                raise NotConnected("Flipper is not connected (it went away mid-command)") from None
            except BaseException as exc:
                # broken, or still in RPC mode (the session could not be stopped): start afresh
                if session.broken or session.active or (isinstance(exc, RpcError) and exc.broken):
                    log.warning("RPC with %s failed (%s); reopening the port", self.port, exc)
                    await self._reopen()
                raise
        self._last_ok = time.monotonic()

    async def signal(self) -> None:
        """Beep, blink and vibrate (the RPC's audiovisual alert), then a second of vibration and
        red light from the CLI, so the person can find it in the room."""

        async def alert(session: RpcSession) -> None:
            self._audit_rpc("play_audiovisual_alert")
            await session.alert()

        await self._over_rpc(alert)
        await self.run("vibro 1")
        await self.run("led r 255")
        await asyncio.sleep(1.0)
        await self.run("vibro 0")
        await self.run("led r 0")


def running_app(output: bytes) -> str | None:
    """``loader info``: ``Application "Sub-GHz" is running`` → "Sub-GHz"; nothing running → None."""
    match = re.search(rb'Application "([^"]+)" is running', output)
    return match.group(1).decode("utf-8", "replace") if match else None
