"""Money between the people of one hub, switched off unless ``payments.enabled``.

A balance is the sum of a person's ledger rows (micro-dollars). Nothing the agent does moves
money: ``make_payment`` and ``pay_x402`` only make a *quote*; the person confirms it from a
client with their own token (``POST /api/payments/confirm``), which writes the ledger rows in
one transaction, once — the quote row's ``confirmed_at`` is taken with a conditional update and
every ledger row is unique per (person, kind, quote), so a repeated confirmation adds nothing.
A confirmed quote for a priced tiny is the receipt a chat turn presents in
``x-tiny-x402-settled``; it pays for one message. Reputation has its own table and never enters
this ledger, or points would become money.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hub import contracts as c
from hub.core.errors import Refused
from hub.people.identity import User
from hub.store.db import Database

if TYPE_CHECKING:
    from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

DISABLED = "payments disabled"
MICRO_PER_DOLLAR = 1_000_000
#: The platform's flat fee on each sale of a priced tiny's message: $0.001.
SALE_FEE_MICRO = 1_000
#: The most one quote or price may be: $10 000.
MAX_AMOUNT_MICRO = 10_000 * MICRO_PER_DOLLAR
QUOTE_TTL_S = 15 * 60
MAX_MEMO = 200
LEDGER_PAGE = 50
PLATFORM_ID = "platform"

QuoteKind = Literal["transfer", "message"]


class PaymentError(Refused):
    status = 400


class PaymentsDisabled(PaymentError):
    status = 404

    def __init__(self) -> None:
        super().__init__(DISABLED)


class QuoteNotFound(PaymentError):
    status = 404


class QuoteGone(PaymentError):
    status = 410


class NotEnoughMoney(PaymentError):
    status = 402


class MessageNotPaid(PaymentError):
    status = 402


def dollars(micro: int) -> str:
    sign = "-" if micro < 0 else ""
    return f"{sign}${abs(micro) / MICRO_PER_DOLLAR:,.6f}".rstrip("0").rstrip(".")


def check_amount(value: Any, field: str, *, zero: bool = False) -> int:
    """A whole number of micro-dollars within the cap (0 only where ``zero``)."""
    low = 0 if zero else 1
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not low <= value <= MAX_AMOUNT_MICRO
    ):
        raise PaymentError(
            f"{field} must be a whole number of micro-dollars, {low}-{MAX_AMOUNT_MICRO} "
            "(1000000 is $1)"
        )
    return value


def check_memo(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_MEMO or not value.isprintable():
        raise PaymentError(f"memo must be at most {MAX_MEMO} printable characters")
    return value.strip()


@dataclass(frozen=True)
class Quote:
    id: str
    kind: QuoteKind
    payer: str
    payee_login: str
    tiny: str | None
    amount_micro: int
    fee_micro: int
    memo: str
    expires_at: float
    confirmed_at: float | None

    def as_json(self) -> dict[str, Any]:
        return {
            "quoteId": self.id,
            "kind": self.kind,
            "to": f"@{self.payee_login}",
            "tiny": self.tiny,
            "amountMicro": self.amount_micro,
            "amount": dollars(self.amount_micro),
            "feeMicro": self.fee_micro,
            "memo": self.memo,
            "expiresAt": self.expires_at,
            "confirmed": self.confirmed_at is not None,
        }

    def describe(self) -> str:
        what = f"one message to {self.tiny}" if self.kind == "message" else "a transfer"
        return f"{dollars(self.amount_micro)} to @{self.payee_login} for {what}"


class Payments:
    """The ledger, tiny prices and quotes over one database; every call refuses (404
    ``payments disabled``) while payments are off."""

    def __init__(self, db: Database, enabled: bool, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self.enabled = enabled
        self._clock = clock

    def require_enabled(self) -> None:
        if not self.enabled:
            raise PaymentsDisabled

    # --- reading --------------------------------------------------------------------------

    def balance(self, user_id: str) -> int:
        self.require_enabled()
        row = self._db.execute(
            "SELECT COALESCE(SUM(delta_micro), 0) FROM ledger WHERE user_id = ?", [user_id]
        ).fetchone()
        return int(row[0])

    def wallet(self, user: User) -> dict[str, Any]:
        """The balance and the newest ledger rows (read only)."""
        balance = self.balance(user.id)
        rows = self._db.execute(
            "SELECT id, delta_micro, kind, ref, counterparty, memo, created_at FROM ledger"
            " WHERE user_id = ? ORDER BY id DESC LIMIT ?",
            [user.id, LEDGER_PAGE],
        ).fetchall()
        entries = [
            {
                "id": row[0],
                "deltaMicro": row[1],
                "kind": row[2],
                "ref": row[3],
                "counterparty": row[4],
                "memo": row[5],
                "at": row[6],
            }
            for row in rows
        ]
        return {"balanceMicro": balance, "balance": dollars(balance), "entries": entries}

    def price_of(self, tiny: str) -> int:
        row = self._db.execute(
            "SELECT price_micro FROM tiny_prices WHERE tiny = ?", [tiny.lower()]
        ).fetchone()
        return int(row[0]) if row else 0

    # --- changing -------------------------------------------------------------------------

    def set_price(self, user: User, tiny: Any, price: Any) -> int:
        """Price one message to a tiny the caller owns; 0 makes it free."""
        self.require_enabled()
        name = self._owned_tiny(user, tiny)
        micro = check_amount(price, "priceMicro", zero=True)
        if 0 < micro <= SALE_FEE_MICRO:
            raise PaymentError(
                f"priceMicro must be 0 (free) or more than the {dollars(SALE_FEE_MICRO)} "
                "platform fee per sale"
            )
        if micro == 0:
            self._db.execute("DELETE FROM tiny_prices WHERE tiny = ?", [name])
        else:
            self._db.execute(
                "INSERT INTO tiny_prices (tiny, price_micro, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (tiny) DO UPDATE SET price_micro = excluded.price_micro,"
                " updated_at = excluded.updated_at",
                [name, micro, self._clock()],
            )
        return micro

    def deposit(self, user_id: str, amount: Any, memo: Any = None) -> int:
        """Money that came in from outside the hub (the owner records it); the new balance."""
        self.require_enabled()
        micro = check_amount(amount, "amountMicro")
        self._db.table("ledger").insert(
            {
                "user_id": user_id,
                "delta_micro": micro,
                "kind": "deposit",
                "ref": "dep_" + uuid.uuid4().hex[:16],
                "memo": check_memo(memo),
                "created_at": self._clock(),
            }
        )
        return self.balance(user_id)

    # --- quotes -----------------------------------------------------------------------------

    def quote_transfer(self, payer: User, payee: User | None, amount: Any, memo: Any) -> Quote:
        self.require_enabled()
        if payee is None or payee.id == PLATFORM_ID:
            raise PaymentError("to must be the @login of a person on this hub")
        if payee.id == payer.id:
            raise PaymentError("a payment to yourself moves nothing")
        removed = self._db.execute("SELECT removed_at FROM users WHERE id = ?", [payee.id])
        if removed.fetchone()[0] is not None:
            raise PaymentError(f"@{payee.login} is no longer on this hub")
        micro = check_amount(amount, "amountMicro")
        return self._quote(payer, "transfer", payee, None, micro, 0, check_memo(memo))

    def quote_message(self, payer: User, tiny: Any) -> Quote:
        """A quote for one message to a priced tiny of someone else."""
        self.require_enabled()
        name, owner_id = self._tiny(tiny)
        price = self.price_of(name)
        if price == 0:
            raise PaymentError(f"{name} is free: there is nothing to pay")
        if owner_id == payer.id:
            raise PaymentError(f"{name} is your own tiny: you do not pay for it")
        payee = self._user(owner_id)
        return self._quote(payer, "message", payee, name, price, SALE_FEE_MICRO, "")

    def _quote(
        self,
        payer: User,
        kind: QuoteKind,
        payee: User,
        tiny: str | None,
        amount: int,
        fee: int,
        memo: str,
    ) -> Quote:
        now = self._clock()
        quote_id = "q_" + uuid.uuid4().hex[:20]
        self._db.table("payment_quotes").insert(
            {
                "id": quote_id,
                "user_id": payer.id,
                "kind": kind,
                "payee": payee.id,
                "tiny": tiny,
                "amount_micro": amount,
                "fee_micro": fee,
                "memo": memo,
                "created_at": now,
                "expires_at": now + QUOTE_TTL_S,
            }
        )
        return self.quote(payer, quote_id)

    def quote(self, payer: User, quote_id: Any) -> Quote:
        """One of the payer's quotes (someone else's is not found, never shown)."""
        if not isinstance(quote_id, str) or not quote_id:
            raise PaymentError("quoteId is required (the id a quote answered)")
        row = self._db.execute(
            "SELECT q.id, q.kind, q.user_id, users.login, q.tiny, q.amount_micro, q.fee_micro,"
            " q.memo, q.expires_at, q.confirmed_at FROM payment_quotes AS q"
            " JOIN users ON users.id = q.payee WHERE q.id = ? AND q.user_id = ?",
            [quote_id, payer.id],
        ).fetchone()
        if row is None:
            raise QuoteNotFound(f"no quote {quote_id} of yours")
        return Quote(
            id=row[0],
            kind=row[1],
            payer=row[2],
            payee_login=row[3] or "",
            tiny=row[4],
            amount_micro=int(row[5]),
            fee_micro=int(row[6]),
            memo=row[7],
            expires_at=float(row[8]),
            confirmed_at=None if row[9] is None else float(row[9]),
        )

    def confirm(self, payer: User, quote_id: Any) -> tuple[Quote, bool]:
        """Move the money of the payer's quote, once: (the quote, whether this call moved it).
        Only a client calls this, with the payer's own token; no tool does."""
        self.require_enabled()
        quote = self.quote(payer, quote_id)
        if quote.confirmed_at is not None:
            return quote, False
        now = self._clock()
        if quote.expires_at <= now:
            raise QuoteGone(f"quote {quote.id} expired: ask for a new one")
        with self._db.atomic():
            taken = self._db.execute(
                "UPDATE payment_quotes SET confirmed_at = ? WHERE id = ? AND confirmed_at IS NULL",
                [now, quote.id],
            )
            if taken.rowcount != 1:  # confirmed by a parallel request a moment ago
                return self.quote(payer, quote.id), False
            if self._sum(payer.id) < quote.amount_micro:
                raise NotEnoughMoney(
                    f"not enough money: {quote.describe()} needs "
                    f"{dollars(quote.amount_micro)}, the balance is {dollars(self._sum(payer.id))}"
                )
            self._write_rows(quote, now)
        log.info("payment %s confirmed (%s)", quote.id, quote.kind)
        return self.quote(payer, quote.id), True

    def _write_rows(self, quote: Quote, now: float) -> None:
        payee = self._db.execute(
            "SELECT payee FROM payment_quotes WHERE id = ?", [quote.id]
        ).fetchone()[0]
        outgoing, incoming = (
            ("sent", "received") if quote.kind == "transfer" else ("bought", "sold")
        )
        rows = [
            (quote.payer, -quote.amount_micro, outgoing, payee),
            (payee, quote.amount_micro - quote.fee_micro, incoming, quote.payer),
        ]
        if quote.fee_micro:
            rows.append((PLATFORM_ID, quote.fee_micro, "fee", quote.payer))
        for user_id, delta, kind, counterparty in rows:
            self._db.execute(
                "INSERT INTO ledger (user_id, delta_micro, kind, ref, counterparty, memo,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [user_id, delta, kind, quote.id, counterparty, quote.memo, now],
            )

    def spend_receipt(self, payer: User, tiny: str, receipt: str) -> bool:
        """Use a confirmed, unspent message quote for ``tiny`` as the payment of one message."""
        self.require_enabled()
        spent = self._db.execute(
            "UPDATE payment_quotes SET spent_at = ? WHERE id = ? AND user_id = ? AND kind ="
            " 'message' AND tiny = ? AND confirmed_at IS NOT NULL AND spent_at IS NULL",
            [self._clock(), receipt, payer.id, tiny.lower()],
        )
        return spent.rowcount == 1

    # --- helpers ----------------------------------------------------------------------------

    def _sum(self, user_id: str) -> int:
        row = self._db.execute(
            "SELECT COALESCE(SUM(delta_micro), 0) FROM ledger WHERE user_id = ?", [user_id]
        ).fetchone()
        return int(row[0])

    def _tiny(self, tiny: Any) -> tuple[str, str]:
        if not isinstance(tiny, str) or not tiny.strip():
            raise PaymentError("tiny must be the name of a tiny on this hub")
        row = self._db.execute(
            "SELECT name, owner_id FROM tinys WHERE name = ?", [tiny.strip().lower()]
        ).fetchone()
        if row is None:
            raise PaymentError(f"no tiny named {tiny.strip()} on this hub")
        return str(row[0]), str(row[1])

    def _owned_tiny(self, user: User, tiny: Any) -> str:
        name, owner_id = self._tiny(tiny)
        if owner_id != user.id:
            raise PaymentError(f"only the owner of {name} may price it")
        return name

    def _user(self, user_id: str) -> User:
        row = self._db.execute(
            "SELECT id, name, role, login FROM users WHERE id = ?", [user_id]
        ).fetchone()
        return User(
            id=row[0],
            name=row[1],
            role="owner" if row[2] == "owner" else "member",
            login=row[3] or "",
        )


def payments_of(hub: Hub) -> Payments:
    """The hub's payments, on or off as its settings say."""
    return Payments(hub.db, hub.settings.payments_enabled)


def require_paid_message(hub: Hub, user: User | None, headers: Mapping[str, str]) -> None:
    """Before a chat turn: a message to a priced tiny of someone else needs a receipt (a
    confirmed ``message`` quote of the caller's) in ``x-tiny-x402-settled``, spent here. The
    header is not read at all while payments are off."""
    payments = payments_of(hub)
    if not payments.enabled:
        return
    tiny = hub.tinys.get(headers.get(c.H_NAME, "").strip() or c.DEFAULT_TINY)
    if tiny is None or (user is not None and user.id == tiny.owner_id):
        return  # no such tiny: the turn says so; a tiny's owner never pays for it
    price = payments.price_of(tiny.name)
    if price == 0:
        return
    receipt = headers.get(c.H_X402_SETTLED, "").strip()
    if user is not None and receipt and payments.spend_receipt(user, tiny.name, receipt):
        return
    how = "sign in, then " if user is None else ""
    raise MessageNotPaid(
        f"a message to {tiny.name} costs {dollars(price)}: {how}get a quote (POST "
        f"/api/payments/quote {{kind: message, tiny: {tiny.name}}}), confirm it, and send its "
        f"quoteId in {c.H_X402_SETTLED} (each confirmed quote pays for one message)"
    )
