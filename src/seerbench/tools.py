"""Tools an agent may call. A tool is a named function from an argument string to a result string.

Agents call a tool by writing ``NAME(argument)`` in their reply, e.g. ``CALC(17 * 23)``; the agent
loop evaluates the call and gives the result back to the model.
"""

from __future__ import annotations

import ast
import inspect
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from seerbench.errors import ConfigError
from seerbench.plugins import Registry, definition_key


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

#: Tools by the name a config gives them in ``agent_tools`` (``calculator``).
TOOLS: Registry[Tool] = Registry(
    "tool", {"calculator": CALCULATOR}, definition=lambda t: definition_key(t.fn)
)

_CALL = re.compile(r"[A-Z]+")


def register_tool(
    name: str, *, call: str | None = None, description: str | None = None, replace: bool = False
) -> Callable[[Callable[[str], str]], Callable[[str], str]]:
    """Decorator: make a function from an argument string to a result string the tool ``name``
    of ``agent_tools`` in configs. Agents call it as ``CALL(argument)`` (``call``: capital
    letters, default ``name`` in capitals); ``description`` (default: the docstring's first line)
    is what the agent's prompt says of it. Example::

        @register_tool("lookup", description="LOOKUP(<word>) gives the word's definition")
        def lookup(word: str) -> str:
            return DEFINITIONS.get(word.strip().lower(), "no such word")
    """
    call = call or name.upper()
    if not _CALL.fullmatch(call):
        raise ConfigError(
            f"tool {name!r}: call={call!r} must be capital letters A-Z (agents write CALL(...))"
        )

    def deco(fn: Callable[[str], str]) -> Callable[[str], str]:
        doc = description or (inspect.getdoc(fn) or f"{call}(<argument>)").splitlines()[0]
        TOOLS.add(name, Tool(call, doc, fn), replace=replace)
        return fn

    return deco


def get_tools(names: list[str] | tuple[str, ...]) -> tuple[Tool, ...]:
    """The registered tools of these names (:class:`UnknownNameError` for one that is not)."""
    return tuple(TOOLS.lookup(n) for n in names)
