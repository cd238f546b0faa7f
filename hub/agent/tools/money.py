"""wallet, set_price, pay_x402, make_payment: money, always mounted, off unless
``payments.enabled`` (then each answers ``payments disabled``, as their routes answer 404).

No tool here moves money. ``pay_x402`` and ``make_payment`` make a quote and say so; the person
confirms it in a client with their own token (``POST /api/payments/confirm``), which no tool
calls — a turn, whatever the model asks for, can only propose a payment.
"""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.payments.ledger import DISABLED, PaymentError, Payments, Quote, dollars, payments_of
from hub.people.identity import User

CONFIRM_IN_APP = (
    "Nothing has moved: the person confirms this quote in their app (you cannot approve it)."
)


def _open(tool_context: StrandsToolContext) -> tuple[User, Payments] | dict[str, Any]:
    """The caller and the ledger, or the answer when there is no caller (Login
    required) or payments are off (payments disabled): what every money tool checks first."""
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    payments = payments_of(ctx.hub)
    return (ctx.caller, payments) if payments.enabled else failed(DISABLED)


def _quoted(quote: Quote) -> dict[str, Any]:
    return ok(
        f"Quote {quote.id}: {quote.describe()}. {CONFIRM_IN_APP}",
        quote=quote.as_json(),
        needsConfirmation=True,
    )


@tool(name="wallet", context=True)
def wallet(tool_context: StrandsToolContext) -> dict[str, Any]:
    """The person's balance and latest ledger entries (read only)."""
    opened = _open(tool_context)
    if isinstance(opened, dict):
        return opened
    caller, payments = opened
    held = payments.wallet(caller)
    return ok(f"Balance: {held['balance']} ({len(held['entries'])} recent entries).", **held)


@tool(name="set_price", context=True)
def set_price(tiny: str, price_micro: int, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Price one message to a tiny the person owns; 0 makes it free. A flat $0.001 platform
    fee comes out of each sale.

    Args:
        tiny: the tiny's name.
        price_micro: the price in micro-dollars (1000000 is $1); 0 is free.
    """
    opened = _open(tool_context)
    if isinstance(opened, dict):
        return opened
    caller, payments = opened
    try:
        price = payments.set_price(caller, tiny, price_micro)
    except PaymentError as exc:
        return failed(str(exc))
    said = "free" if price == 0 else f"{dollars(price)} per message"
    return ok(f"{tiny} is now {said}.", tiny=tiny, priceMicro=price)


@tool(name="pay_x402", context=True)
def pay_x402(target: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Pay for one message to a priced tiny: returns a quote the person confirms in their app.

    Args:
        target: the priced tiny's name on this hub.
    """
    opened = _open(tool_context)
    if isinstance(opened, dict):
        return opened
    caller, payments = opened
    if target.strip().lower().startswith(("http://", "https://")):
        return failed(
            "this hub pays only the priced tinys on it; an x402 endpoint elsewhere is paid "
            "from the app that reaches it"
        )
    try:
        return _quoted(payments.quote_message(caller, target))
    except PaymentError as exc:
        return failed(str(exc))


@tool(name="make_payment", context=True)
def make_payment(
    to: str, amount_micro: int, tool_context: StrandsToolContext, memo: str = ""
) -> dict[str, Any]:
    """Send money to another person of this hub by @login: returns a quote the person confirms
    in their app; you cannot approve it.

    Args:
        to: the recipient's @login.
        amount_micro: the amount in micro-dollars (1000000 is $1).
        memo: a short note for the recipient.
    """
    opened = _open(tool_context)
    if isinstance(opened, dict):
        return opened
    caller, payments = opened
    payee = turn_context(tool_context).hub.identity.by_login(to) if isinstance(to, str) else None
    try:
        return _quoted(payments.quote_transfer(caller, payee, amount_micro, memo))
    except PaymentError as exc:
        return failed(str(exc))


def tools(ctx: ToolContext) -> list[AgentTool]:
    """Always mounted: with payments off each says so, so the model can tell the person."""
    return [wallet, set_price, pay_x402, make_payment]


hinted("money", wallet, set_price, pay_x402, make_payment)
