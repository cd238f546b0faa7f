"""calculate: exact arithmetic, for a model that guesses sums.

Asked "what is 17% of 240?", the 1.5B answers "40"; the hub's answer is 40.8. The expression is
read with Python's own parser and only numbers, + - * / // % ** and parentheses are evaluated
(no names, no calls), with bounded sizes, so nothing a model writes runs as code. Written here
because the libraries that evaluate expressions safely (numexpr, simpleeval, asteval) bring a
language of their own for what is a dozen lines over ``ast``.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from strands import tool
from strands.types.tools import AgentTool

from drivers.base import hinted
from hub.agent.tools.context import ToolContext, failed, ok

EXPRESSION_CHARS = 200
# Past these a power or a result is no sum a person asked for, and its digits cost memory.
POWER_AT_MOST = 1000
DIGITS_AT_MOST = 60

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
# "17% of 240" and "17 % of 240": a percentage of a number; "15%" alone: a hundredth.
_PERCENT_OF = re.compile(r"(\d+(?:\.\d+)?)\s*%\s*of\s*", re.IGNORECASE)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%(?!\s*[\d(])")


class NotArithmetic(ValueError):
    """The expression holds something other than numbers and arithmetic."""


def as_python(expression: str) -> str:
    """The ways people write sums that Python's grammar lacks: percentages, × and ÷, ^ for a
    power, "x" between numbers, thousands separators."""
    text = expression.strip().rstrip("=?").strip()
    text = _PERCENT_OF.sub(r"(\1/100)*", text)
    text = _PERCENT.sub(r"(\1/100)", text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = text.replace("×", "*").replace("÷", "/").replace("^", "**").replace("−", "-")
    return re.sub(r"(?<=\d)\s*[xX]\s*(?=\d)", "*", text)


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression; NotArithmetic for anything else."""
    if len(expression) > EXPRESSION_CHARS:
        raise NotArithmetic(f"an expression is at most {EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(as_python(expression), mode="eval")
    except SyntaxError:
        raise NotArithmetic(f"{expression!r} is not an arithmetic expression") from None
    return _value(tree.body)


def _value(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        number: int | float = node.value  # type: ignore[assignment]
        return number
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand))  # type: ignore[no-any-return]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > POWER_AT_MOST:
            raise NotArithmetic(f"a power of at most {POWER_AT_MOST}")
        try:
            found = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise NotArithmetic("division by zero") from None
        except OverflowError:
            raise NotArithmetic("the result is too large") from None
        if isinstance(found, complex):
            raise NotArithmetic("the result is not a real number")
        if isinstance(found, int) and len(str(abs(found))) > DIGITS_AT_MOST:
            raise NotArithmetic("the result is too large")
        return found  # type: ignore[no-any-return]
    raise NotArithmetic("only numbers, + - * / // % ** and parentheses")


def shown(value: int | float) -> str:
    """A result as a person reads it: whole numbers without ".0", others to 10 significant
    digits."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotArithmetic("the result is not a finite number")
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.10g}"
    return str(value)


@tool(name="calculate")
def calculate(expression: str) -> dict[str, Any]:
    """Work out an arithmetic expression exactly: sums, percentages, powers.

    Args:
        expression: the arithmetic, e.g. "17% of 240", "(12.5 + 3) * 4" or "2 ** 10".
    """
    try:
        value = shown(evaluate(expression))
    except NotArithmetic as exc:
        return failed(str(exc))
    return ok(f"{expression.strip()} = {value}", value=value)


hinted(
    "calculator",
    calculate,
    asked_like=("what is 15% of 80?", "how much is 123 times 45?", "what's 2 to the power of 10?"),
    read_first=True,
)


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [calculate]
