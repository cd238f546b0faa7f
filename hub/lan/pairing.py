"""Pairing a phone (docs/lan.md): the owner shows a code and a QR, the phone trades it for a
device token.

An offer is a 6-digit code from ``secrets``, valid five minutes and good once. It lives in
hub.db rather than in memory because ``tiny-hub pair`` opens the hub in its own process while
another process answers ``POST /api/pair``; both share the database. Only an HMAC of the code
is stored, keyed by ``pairing.key`` in the data dir (0600): a plain hash of a 6-digit code is
undone by trying all 10^6 of them, so without the key a copy of hub.db says nothing about the
code. Making an offer voids any older open one, so there is one code to guess at a time.

Guessing is throttled where it is cheap to enforce: five wrong codes from one source address
within five minutes lock pairing for that address for a minute, and the lock refuses even a
right code (otherwise the lock would only slow down the guesses that failed). An open offer also
dies after 20 wrong codes from anywhere, so many addresses together still get only 20 guesses
in 10^6. The throttle is in the database too, so it holds across a restart; every check and
update runs without an ``await`` in between, so parallel requests cannot slip past it.

The phone is enrolled as a ``daemon``: the registry's kind for a device that dials in (heartbeat,
relay pull) with a token, which is what the phone app does. Its token is returned once and
stored hashed by the registry. Codes and tokens are never logged.

An offer belongs to one person: the owner's own, or one the owner made for someone else of the
household (docs/people.md). The phone that redeems a person's code is enrolled as theirs and
also gets a token of their account (``accountToken``), since that phone is how they use the hub;
the owner's phones keep only the dial-in token, as before. Removing the device ends both.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import logging
import math
import os
import re
import secrets
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import segno

from hub.contracts import PRESENCE_WINDOW_S
from hub.core.errors import Refused
from hub.devices.registry import NAME, Clock
from hub.people.identity import User

if TYPE_CHECKING:
    from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

PAYLOAD_VERSION = 1
CODE_DIGITS = 6
OFFER_TTL_S = 300
LOCK_AFTER_WRONG = 5
WRONG_WINDOW_S = OFFER_TTL_S
LOCK_S = 60
MAX_WRONG_PER_OFFER = 20
#: Unused offers older than this are deleted when the next offer is made.
KEEP_UNUSED_S = 24 * 3600
PLATFORMS = ("ios", "android", "other")
PHONE_KIND = "daemon"
KEY_FILE = "pairing.key"
KEY_BYTES = 32
#: A pairing request is three short fields; anything bigger is not one.
MAX_PAIR_BODY_BYTES = 4096
_CODE = re.compile(rf"^[0-9]{{{CODE_DIGITS}}}$")


class PairingError(Refused):
    """A pairing request refused; ``status`` is its HTTP answer (400: bad input)."""

    status = 400


class WrongCode(PairingError):
    status = 403


class CodeGone(PairingError):
    """A code that was right once: expired, used, or voided. Not counted as a guess."""

    status = 410


class NotPaired(PairingError):
    status = 404


class PairingLocked(PairingError):
    """Too many wrong codes from this address; ``retry_after`` is whole seconds to wait."""

    status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Offer:
    id: str
    code: str
    created_at: float
    expires_at: float
    lan_url: str | None
    fingerprint: str | None

    @property
    def payload(self) -> str:
        """What the QR carries: the phone needs where to dial, the code, and the certificate
        fingerprint to pin (None until the hub serves TLS)."""
        return json.dumps(
            {
                "v": PAYLOAD_VERSION,
                "lanUrl": self.lan_url,
                "code": self.code,
                "fp": self.fingerprint,
            },
            separators=(",", ":"),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "expiresAt": self.expires_at,
            "expiresIn": OFFER_TTL_S,
            "qr": {"payload": self.payload, "svg": render_svg(self), "text": render_terminal(self)},
        }


@dataclass(frozen=True)
class PairRequest:
    code: str
    name: str
    platform: str


@dataclass(frozen=True)
class Paired:
    device_id: str
    name: str
    token: str
    # A person's phone (an offer the owner made for someone else) also gets a token of that
    # person's account, for the API; the owner's phones keep only the dial-in token.
    account_token: str | None = None

    def as_json(self) -> dict[str, str]:
        answer = {"token": self.token, "deviceId": self.device_id, "name": self.name}
        if self.account_token is not None:
            answer["accountToken"] = self.account_token
        return answer


def _qr(offer: Offer) -> segno.QRCode:
    # make_qr, not make: segno would pick a Micro QR for short data, which phones do not scan.
    return segno.make_qr(offer.payload, error="m")


def render_terminal(offer: Offer) -> str:
    """The QR as text for a terminal (half-block characters, two modules a line). Light
    modules are the filled blocks, so it scans on a dark terminal background."""
    out = io.StringIO()
    _qr(offer).terminal(out=out, compact=True)
    return out.getvalue()


def render_svg(offer: Offer) -> str:
    """The QR as an inline ``<svg>`` with its own white background, for the TUI or a web page."""
    return str(_qr(offer).svg_inline(scale=4, dark="#000", light="#fff"))


def parse_pair_request(body: Any) -> PairRequest:
    """``{code, name, platform}`` → a request, or a 400 naming the field that is wrong."""
    if not isinstance(body, dict):
        raise PairingError("body must be a JSON object with code, name and platform")
    code = body.get("code")
    if isinstance(code, str):
        code = code.replace(" ", "").replace("-", "")
    if not isinstance(code, str) or not _CODE.match(code):
        raise PairingError(f"code must be the {CODE_DIGITS} digits shown on the hub, as a string")
    name = body.get("name")
    if isinstance(name, str):
        name = name.strip()
    if not isinstance(name, str) or not NAME.match(name):
        raise PairingError("name must be 1-64 letters, digits, spaces or . ' - _")
    platform = body.get("platform")
    if isinstance(platform, str):
        platform = platform.strip().lower()
    if platform not in PLATFORMS:
        raise PairingError(f"platform must be one of {', '.join(PLATFORMS)}")
    return PairRequest(code=code, name=name, platform=str(platform))


class Pairing:
    """Offers, redemption and the throttle over one database, clock and key file."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._db = hub.db
        self._clock: Clock = hub.devices.clock
        self._key_path = hub.settings.home / KEY_FILE

    # --- offers ---------------------------------------------------------------------------

    def make_offer(
        self, *, lan_url: str | None, fingerprint: str | None, person: User | None = None
    ) -> Offer:
        """An offer for the owner's phone, or for ``person``'s: the phone that redeems it is
        enrolled as theirs."""
        now = self._clock()
        code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
        offer = Offer(
            id="pair_" + uuid.uuid4().hex[:16],
            code=code,
            created_at=now,
            expires_at=now + OFFER_TTL_S,
            lan_url=lan_url,
            fingerprint=fingerprint,
        )
        owner = (person or self._hub.owner).id
        with _atomic(self._db):
            self._db.execute(
                "UPDATE pairing_offers SET voided_at = ?, void_reason = 'replaced'"
                " WHERE owner = ? AND used_at IS NULL AND voided_at IS NULL",
                [now, owner],
            )
            self._db.execute(
                "DELETE FROM pairing_offers WHERE used_at IS NULL AND created_at < ?",
                [now - KEEP_UNUSED_S],
            )
            self._db.table("pairing_offers").insert(
                {
                    "id": offer.id,
                    "owner": owner,
                    "code_hash": self._hash(code),
                    "created_at": now,
                    "expires_at": offer.expires_at,
                }
            )
        log.info("pairing offer %s made; it expires in %d s", offer.id, OFFER_TTL_S)
        return offer

    # --- redeeming --------------------------------------------------------------------------

    def check_unlocked(self, address: str) -> None:
        """Refuse (429) an address locked out by wrong codes, before its request is read."""
        now = self._clock()
        row = self._db.execute(
            "SELECT locked_until FROM pairing_throttle WHERE address = ?", [address]
        ).fetchone()
        if row is not None and row[0] is not None and row[0] > now:
            raise _locked(row[0], now, "too many wrong pairing codes from this address")

    def redeem(self, request: PairRequest, address: str) -> Paired:
        """A right, open code → a new dial-in device of the owner and its token (shown once).

        Synchronous on purpose: the lock check, the code lookup and the throttle update must
        not be interleaved with another request's.
        """
        now = self._clock()
        self._db.execute(
            "DELETE FROM pairing_throttle"
            " WHERE coalesce(locked_until, 0) <= ? AND window_start < ?",
            [now, now - WRONG_WINDOW_S],
        )
        self.check_unlocked(address)
        row = self._db.execute(
            "SELECT id, owner, expires_at, voided_at, void_reason, used_at FROM pairing_offers"
            " WHERE code_hash = ? ORDER BY created_at DESC LIMIT 1",
            [self._hash(request.code)],
        ).fetchone()
        if row is None:
            self._wrong(address, now)
        offer_id, owner, expires_at, voided_at, void_reason, used_at = row
        if used_at is not None:
            raise CodeGone(
                "this pairing code was already used (codes work once): "
                "ask the hub's owner for a new one"
            )
        if voided_at is not None:
            why = (
                "a newer offer replaced it"
                if void_reason == "replaced"
                else "too many wrong codes were tried"
            )
            raise CodeGone(
                f"this pairing code no longer works ({why}): scan the hub's newest pairing code"
            )
        if expires_at <= now:
            raise CodeGone(
                f"this pairing code has expired (codes last {OFFER_TTL_S // 60} minutes): "
                "ask the hub's owner for a new one (tiny-hub pair)"
            )
        name = self._free_name(owner, request.name)
        registry = self._hub.devices.registry
        with _atomic(self._db):
            taken = self._db.execute(
                "UPDATE pairing_offers SET used_at = ?, used_from = ?"
                " WHERE id = ? AND used_at IS NULL AND voided_at IS NULL",
                [now, address, offer_id],
            )
            if taken.rowcount != 1:
                raise CodeGone("this pairing code was already used (codes work once)")
            device, token = registry.enroll(
                owner, name=name, kind=PHONE_KIND, platform=request.platform
            )
            self._db.execute(
                "UPDATE pairing_offers SET device_id = ? WHERE id = ?", [device.id, offer_id]
            )
            self._db.execute("DELETE FROM pairing_throttle WHERE address = ?", [address])
            account = self._account_token(owner, device.id, name)
        assert token is not None  # a dial-in kind always gets one
        log.info("paired %s (%s) as device %s from %s", name, request.platform, device.id, address)
        return Paired(device_id=device.id, name=name, token=token, account_token=account)

    def _account_token(self, person_id: str, device_id: str, name: str) -> str | None:
        """A token of the person's account for a phone paired from an offer made for them
        (None for the owner's own offers)."""
        if person_id == self._hub.owner.id:
            return None
        person = self._hub.identity.user(person_id)
        return self._hub.identity.issue_token(person, f"phone {name}", device_id=device_id)

    def _wrong(self, address: str, now: float) -> NoReturn:
        """Count a wrong code against the address and the open offer, then refuse."""
        row = self._db.execute(
            "SELECT wrong, window_start FROM pairing_throttle WHERE address = ?", [address]
        ).fetchone()
        wrong, window_start = (0, now) if row is None else (int(row[0]), float(row[1]))
        if now - window_start > WRONG_WINDOW_S:
            wrong, window_start = 0, now
        wrong += 1
        locked_until = now + LOCK_S if wrong >= LOCK_AFTER_WRONG else None
        if locked_until is not None:
            wrong, window_start = 0, now
        self._db.execute(
            "INSERT INTO pairing_throttle (address, wrong, window_start, locked_until)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (address) DO UPDATE SET wrong = excluded.wrong,"
            " window_start = excluded.window_start, locked_until = excluded.locked_until",
            [address, wrong, window_start, locked_until],
        )
        self._db.execute(
            "UPDATE pairing_offers SET wrong = wrong + 1"
            " WHERE used_at IS NULL AND voided_at IS NULL AND expires_at > ?",
            [now],
        )
        voided = self._db.execute(
            "UPDATE pairing_offers SET voided_at = ?, void_reason = 'wrong codes'"
            " WHERE used_at IS NULL AND voided_at IS NULL AND wrong >= ?",
            [now, MAX_WRONG_PER_OFFER],
        )
        if voided.rowcount:
            log.warning("pairing offer voided after %d wrong codes", MAX_WRONG_PER_OFFER)
        if locked_until is not None:
            log.warning("pairing locked for %s for %d s after wrong codes", address, LOCK_S)
            raise _locked(
                locked_until,
                now,
                f"that pairing code is not right, the {LOCK_AFTER_WRONG}th wrong one"
                " from this address",
            )
        left = LOCK_AFTER_WRONG - wrong
        raise WrongCode(
            f"that pairing code is not right ({left} more wrong code{'s' if left != 1 else ''}"
            f" from this address lock pairing for {LOCK_S} seconds)"
        )

    def _free_name(self, owner: str, name: str) -> str:
        """The phone's name, or "name 2", "name 3"... when the owner already has one by that
        name (a phone paired again must not fail on its own old record)."""
        candidate = name
        for n in range(2, 1000):
            row = self._db.execute(
                "SELECT 1 FROM devices WHERE owner = ? AND lower(name) = lower(?)",
                [owner, candidate],
            ).fetchone()
            if row is None:
                return candidate
            suffix = f" {n}"
            candidate = name[: 64 - len(suffix)].rstrip() + suffix
        raise PairingError(f"name: you already have too many devices named {name}")

    # --- what was paired ----------------------------------------------------------------------

    def paired(self, owner: str) -> list[dict[str, Any]]:
        """The owner's devices that came in through a pairing code (never their tokens)."""
        now = self._clock()
        rows = self._db.execute(
            "SELECT devices.id, devices.name, devices.platform, pairing_offers.used_at,"
            " devices.last_seen FROM pairing_offers"
            " JOIN devices ON devices.id = pairing_offers.device_id"
            " WHERE devices.owner = ? ORDER BY pairing_offers.used_at",
            [owner],
        ).fetchall()
        return [
            {
                "deviceId": row[0],
                "name": row[1],
                "platform": row[2],
                "pairedAt": row[3],
                "lastSeen": row[4],
                "online": row[4] is not None and now - row[4] <= PRESENCE_WINDOW_S,
            }
            for row in rows
        ]

    def revoke(self, owner: str, device_id: str) -> None:
        """Remove a paired device: its token stops working at once (401 on dial-in routes)."""
        row = self._db.execute(
            "SELECT 1 FROM pairing_offers JOIN devices ON devices.id = pairing_offers.device_id"
            " WHERE devices.id = ? AND devices.owner = ?",
            [device_id, owner],
        ).fetchone()
        if row is None:
            raise NotPaired(f"no paired device {device_id} (GET /api/tokens lists them)")
        self._hub.devices.registry.remove(owner, device_id)
        log.info("revoked paired device %s", device_id)

    # --- the code's keyed hash ------------------------------------------------------------------

    def _hash(self, code: str) -> str:
        return hmac.new(self._key(), code.encode("ascii"), hashlib.sha256).hexdigest()

    def _key(self) -> bytes:
        """The HMAC key in the data dir, made on first use. It is written to a 0600 temporary
        file and linked into place, so a process never reads half a key and two processes
        starting at once agree on one."""
        try:
            key = self._key_path.read_bytes()
        except FileNotFoundError:
            key = b""
        if len(key) == KEY_BYTES:
            return key
        if key:
            log.warning(
                "%s is damaged; making a new one (open offers stop working)", self._key_path
            )
        self._key_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._key_path.with_name(f".{KEY_FILE}.{os.getpid()}.{uuid.uuid4().hex}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            if key:
                os.replace(temporary, self._key_path)
            else:
                with contextlib.suppress(FileExistsError):  # another process won the race
                    os.link(temporary, self._key_path)
        finally:
            temporary.unlink(missing_ok=True)
        return self._key_path.read_bytes()


def _locked(until: float, now: float, reason: str) -> PairingLocked:
    wait = max(1, math.ceil(until - now))
    at = time.strftime("%H:%M:%S", time.gmtime(until))
    return PairingLocked(
        f"{reason}: pairing is locked for this address; try again in {wait} seconds "
        f"(after {at} UTC)",
        retry_after=wait,
    )


@contextlib.contextmanager
def _atomic(db: Any) -> Iterator[None]:
    """The store's transaction (statements from other threads wait their turn)."""
    with db.atomic():
        yield


def make_offer(
    hub: Hub, *, lan_url: str | None, fingerprint: str | None, person: User | None = None
) -> Offer:
    """A new pairing offer for the hub's owner, or for ``person`` (voids that one's older open
    offer). For ``tiny-hub pair``, ``tiny-hub people add``, ``POST /api/pair/offer`` and
    ``POST /api/people``; show ``offer.code`` and :func:`render_terminal`."""
    return Pairing(hub).make_offer(lan_url=lan_url, fingerprint=fingerprint, person=person)
