"""Tools an agent may call. A tool is a named function from an argument string to a result string.

Agents call a tool by writing ``NAME(argument)`` in their reply, e.g. ``CALC(17 * 23)``; the agent
loop evaluates the call and gives the result back to the model.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass

from seerbench.errors import ConfigError


@dataclass(frozen=True)
class Tool:
    name: str  # how the model calls it: NAME(...)
    description: str
    fn: Callable[[str], str]


_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNOPS: dict[type, Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        return _UNOPS[type(node.op)](_eval(node.operand))
    raise ValueError("only numbers and + - * / // % ** ( ) are allowed")


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression safely (no names, no calls); errors come back as text."""
    try:
        value = _eval(ast.parse(expression.strip(), mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError) as e:
        return f"error: {e}"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


CALCULATOR = Tool("CALC", "CALC(<arithmetic expression>) computes the expression exactly", calculate)

TOOLS: dict[str, Tool] = {"calculator": CALCULATOR}


def get_tools(names: list[str] | tuple[str, ...]) -> tuple[Tool, ...]:
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        raise ConfigError(f"unknown tool(s) {unknown}; known tools: {sorted(TOOLS)}")
    return tuple(TOOLS[n] for n in names)
