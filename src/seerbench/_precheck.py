"""A fast, conservative pre-check of plain data against a pydantic model, compiled from the model.

``compile_precheck(Model)`` reads the model's own core schema (``Model.__pydantic_core_schema__``,
what pydantic validates with) and writes a Python function ``fits(data) -> bool``. ``fits`` returns
True only where pydantic would accept the data (``Model.model_validate(data)``, lax mode); where it
cannot be sure it returns False, and the caller asks pydantic, which decides and says why. So the
pre-check changes no outcome: it spares pydantic's work for data that plainly fits, at a fraction
of its cost (:mod:`seerbench.schema` checks every results line with it).

What it takes as certain, each of the exact Python type (a subclass, a tuple for a list, a string
for a number, an int for a bool ... go to pydantic):

- a model: a ``dict`` holding every required field and, with ``extra="forbid"``, nothing else;
- ``str`` (with ``min_length``/``max_length``: no lone surrogate, which pydantic refuses there),
  ``int``, ``bool``, a ``Literal`` of strings, ``Any``;
- ``float``: a float (NaN and the infinities too) or an int of at most 2**53 in size;
- these three strict too (``StrictInt``, ``Field(strict=True)`` ...): strict pydantic takes the
  exact types above as lax pydantic does (an int for a float too), and refuses only what the
  pre-check leaves to it anyway;
- ``list[X]`` (with ``min_length``/``max_length``), ``dict[str, X]``, ``X | None``, defaults.

A part of the schema that has a validator of the model's own (``@field_validator`` of any mode,
``@model_validator``, such as ``Question._unique_shorts`` of :mod:`seerbench.types`) is validated
by pydantic itself, with a validator pydantic-core builds from that part's schema: the validator
runs as it always does, on what pydantic makes of the data. Unless it takes ``info`` (it may read
the other fields): then that part is "not sure". So is anything else the pre-check does not know
(another constraint, a config setting that changes validation, an alias, a custom ``__init__``, a
recursive model ...): data that meets it goes to pydantic.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import SchemaValidator

__all__ = ["compile_precheck"]

#: The largest int taken as certain for a float field (pydantic refuses one past a float's range).
INT_AS_FLOAT = 2**53

#: Keys any schema node may carry that do not change what it accepts.
_INERT = {"type", "ref", "metadata", "serialization"}
#: Config keys that do not change what a model accepts (and ``ser_*``: serialisation only).
_INERT_CONFIG = {"title", "extra_fields_behavior"}
#: The builtins the checks call.
_BUILTINS = (type, str, int, float, bool, dict, list, len)

Node = Mapping[str, Any]


class _Unsure(Exception):
    """A part of the schema the pre-check does not take on: data that meets it goes to pydantic."""


def _only(node: Node, *allowed: str) -> None:
    extra = set(node) - _INERT - set(allowed)
    if extra:
        raise _Unsure(f"{node.get('type')}: {sorted(extra)}")


def _no_surrogates(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _int_as_float(x: Any) -> bool:
    return type(x) is int and -INT_AS_FLOAT <= x <= INT_AS_FLOAT


class _Compiler:
    """Writes the lines of ``fits``: each check is statements that ``return False`` unless the
    value of an expression (a local name, or a subscript of one: reading it twice is harmless) is
    certain to fit its schema node."""

    def __init__(self, schema: Node) -> None:
        self.defs: dict[str, Node] = {}
        self.names: dict[str, Any] = {
            "_no_surrogates": _no_surrogates,
            "_int_as_float": _int_as_float,
            "_ABSENT": object(),
        }
        self.count = itertools.count()
        self.active: list[str] = []  # refs being compiled: a recursive schema is not taken on
        self.configs: list[Mapping[str, Any]] = [{}]  # the core config of the models being compiled
        self.root = schema

    def const(self, value: Any) -> str:
        name = f"_c{next(self.count)}"
        self.names[name] = value
        return name

    def var(self) -> str:
        return f"v{next(self.count)}"

    def bind(self, expr: str) -> tuple[list[str], str]:
        """(lines, name): ``expr`` in a local name, to read it several times."""
        if expr.isidentifier():
            return [], expr
        v = self.var()
        return [f"{v} = {expr}"], v

    def resolve(self, node: Node) -> Node:
        while node["type"] in ("definitions", "definition-ref"):
            if node["type"] == "definitions":
                _only(node, "schema", "definitions")
                for d in node["definitions"]:
                    self.defs[d["ref"]] = d
                node = node["schema"]
            else:
                _only(node, "schema_ref")
                if node["schema_ref"] in self.active:
                    raise _Unsure("a recursive schema")
                node = self.defs[node["schema_ref"]]
        return node

    @staticmethod
    def indent(lines: list[str]) -> list[str]:
        return ["    " + ln for ln in lines] or ["    pass"]

    def when(self, cond: str, body: list[str]) -> list[str]:
        return [f"if {cond}:", *self.indent(body)] if body else []

    # ---- checks ---------------------------------------------------------------------------------
    def check(self, node: Node, expr: str) -> list[str]:
        """The check of ``expr`` against ``node``: one that refuses every value where unsure."""
        try:
            node = self.resolve(node)
            method = getattr(self, "check_" + node["type"].replace("-", "_"), None)
            if method is None:
                raise _Unsure(node["type"])
            ref = node.get("ref")
            if ref is not None:
                self.active.append(ref)
            try:
                lines: list[str] = method(node, expr)
            finally:
                if ref is not None:
                    self.active.pop()
            return lines
        except (_Unsure, KeyError):  # KeyError: a node not of the shape read here
            return ["return False"]

    def check_any(self, node: Node, expr: str) -> list[str]:
        _only(node)
        return []

    def check_str(self, node: Node, expr: str) -> list[str]:
        _only(node, "min_length", "max_length")
        bounds = [f"len({{v}}) < {int(node['min_length'])}"] if "min_length" in node else []
        bounds += [f"len({{v}}) > {int(node['max_length'])}"] if "max_length" in node else []
        if not bounds:
            return [f"if type({expr}) is not str: return False"]
        lines, v = self.bind(expr)
        # pydantic counts the characters of the UTF-8 text, and refuses a lone surrogate here
        bad = " or ".join(b.format(v=v) for b in bounds)
        return [
            *lines,
            f"if type({v}) is not str or {bad}: return False",
            f"if not {v}.isascii() and not _no_surrogates({v}): return False",
        ]

    def check_int(self, node: Node, expr: str) -> list[str]:
        _only(node, "strict")  # strict or lax: both take what this takes
        return [f"if type({expr}) is not int: return False"]

    def check_float(self, node: Node, expr: str) -> list[str]:
        _only(node, "strict")  # strict or lax: both take what this takes
        return [f"if type({expr}) is not float and not _int_as_float({expr}): return False"]

    def check_bool(self, node: Node, expr: str) -> list[str]:
        _only(node, "strict")  # strict or lax: both take what this takes
        return [f"if {expr} is not True and {expr} is not False: return False"]

    def check_literal(self, node: Node, expr: str) -> list[str]:
        _only(node, "expected")
        if not all(type(e) is str for e in node["expected"]):
            raise _Unsure("a literal other than strings")
        lines, v = self.bind(expr)
        allowed = self.const(frozenset(node["expected"]))
        return [*lines, f"if type({v}) is not str or {v} not in {allowed}: return False"]

    def check_nullable(self, node: Node, expr: str) -> list[str]:
        _only(node, "schema")
        lines, v = self.bind(expr)
        return lines + self.when(f"{v} is not None", self.check(node["schema"], v))

    def sized(self, node: Node, v: str) -> list[str]:
        lines = [f"if len({v}) < {int(node['min_length'])}: return False"] if "min_length" in node else []
        if "max_length" in node:
            lines.append(f"if len({v}) > {int(node['max_length'])}: return False")
        return lines

    def each(self, node: Node | None, iterable: str) -> list[str]:
        """The check of every item of ``iterable`` (a loop: for a few items, faster than C's map)."""
        x = self.var()
        body = self.check(node or {"type": "any"}, x)
        return [f"for {x} in {iterable}:", *self.indent(body)] if body else []

    def check_list(self, node: Node, expr: str) -> list[str]:
        _only(node, "items_schema", "min_length", "max_length")
        lines, v = self.bind(expr)
        lines += [f"if type({v}) is not list: return False", *self.sized(node, v)]
        return lines + self.each(node.get("items_schema"), v)

    def check_dict(self, node: Node, expr: str) -> list[str]:
        _only(node, "keys_schema", "values_schema", "min_length", "max_length")
        keys = self.resolve(node.get("keys_schema") or {"type": "any"})
        if keys["type"] != "str" or set(keys) - _INERT:
            raise _Unsure("dict keys other than plain str")
        lines, v = self.bind(expr)
        lines += [f"if type({v}) is not dict: return False", *self.sized(node, v)]
        k, x = self.var(), self.var()
        key, value = self.check(keys, k), self.check(node.get("values_schema") or {"type": "any"}, x)
        if not value:
            return [*lines, f"for {k} in {v}:", *self.indent(key)]
        return [*lines, f"for {k}, {x} in {v}.items():", *self.indent(key + value)]

    def check_function(self, node: Node, expr: str) -> list[str]:
        """A validator of the model's own (``@field_validator``, ``@model_validator``): pydantic
        validates this part itself, with a validator pydantic-core builds from the part's schema
        (an ``after`` validator is handed the value pydantic makes of the part, models and all:
        making that is pydantic's work whoever does it). Only where nothing in the part reads
        its surroundings: a validator that takes ``info`` (the other fields' values, the field's
        name) is not sure."""
        _only(node, "function", "schema", "json_schema_input_schema")
        if not self.context_free(node, set()):
            raise _Unsure("a validator with info")
        schema = dict(node)
        if self.defs:  # the definitions a reference in the part may need
            schema = {"type": "definitions", "schema": schema, "definitions": list(self.defs.values())}
        validator = SchemaValidator(schema, dict(self.configs[-1]) or None)  # type: ignore[arg-type]
        return [
            "try:",
            f"    {self.const(validator.validate_python)}({expr})",
            "except Exception:",  # a ValidationError, or a validator's error: pydantic says which
            "    return False",
        ]

    check_function_after = check_function_before = check_function_wrap = check_function_plain = check_function

    def context_free(self, node: Any, seen: set[str]) -> bool:
        """No validator under ``node`` takes ``info``."""
        if isinstance(node, Mapping):
            if node.get("type") == "with-info":
                return False
            if node.get("type") == "definition-ref":
                ref = node.get("schema_ref")
                if ref in seen:  # looked at already, further up
                    return True
                return ref in self.defs and self.context_free(self.defs[ref], seen | {ref})
            return all(self.context_free(v, seen) for k, v in node.items() if k != "metadata")
        if isinstance(node, list):
            return all(self.context_free(v, seen) for v in node)
        return True

    def model_parts(self, node: Node) -> tuple[Mapping[str, Node], str]:
        """A model's fields and extra behaviour, where the pre-check takes the model on."""
        _only(node, "cls", "config", "custom_init", "root_model", "schema")
        if node.get("custom_init") or node.get("root_model"):
            raise _Unsure("a custom __init__ or a root model")
        config = node.get("config") or {}
        if {k for k in config if not k.startswith("ser_")} - _INERT_CONFIG:
            raise _Unsure(f"config {sorted(config)}")
        fields = node["schema"]
        if fields["type"] != "model-fields":
            raise _Unsure(fields["type"])
        _only(fields, "fields", "model_name", "computed_fields", "extra_behavior")
        extra = fields.get("extra_behavior") or config.get("extra_fields_behavior") or "ignore"
        if extra not in ("forbid", "ignore"):
            raise _Unsure(f"extra={extra}")
        for f in fields["fields"].values():
            _only(f, "schema", "serialization_alias", "serialization_exclude", "frozen")
        return fields["fields"], extra

    def check_model(self, node: Node, expr: str) -> list[str]:
        fields, extra = self.model_parts(node)
        self.configs.append(node.get("config") or {})
        try:
            return self.model_fields(fields, extra, expr)
        finally:
            self.configs.pop()

    def model_fields(self, fields: Mapping[str, Node], extra: str, expr: str) -> list[str]:
        lines, v = self.bind(expr)
        lines.append(f"if type({v}) is not dict: return False")
        schemas = {name: self.resolve(f["schema"]) for name, f in fields.items()}
        n_required = sum(s["type"] != "default" for s in schemas.values())
        # A required field that is missing raises KeyError where it is read (see compile_precheck).
        # With every required field there, ``extra="forbid"`` is a count: the keys beyond the
        # required ones are the optional fields found.
        left = self.var() if extra == "forbid" and n_required < len(schemas) else None
        if left:
            lines.append(f"{left} = len({v}) - {n_required}")
        elif extra == "forbid":
            lines.append(f"if len({v}) != {n_required}: return False")
        for name, schema in schemas.items():
            if schema["type"] != "default":
                lines += self.check(schema, f"{v}[{name!r}]")
                continue
            try:
                _only(schema, "schema", "default", "default_factory", "default_factory_takes_data")
            except _Unsure:
                return ["return False"]  # a default that is validated, or that replaces an error
            x = self.var()
            found = [f"{left} -= 1"] if left else []
            lines += [f"{x} = {v}.get({name!r}, _ABSENT)"]
            lines += self.when(f"{x} is not _ABSENT", found + self.check(schema["schema"], x))
        if left:
            lines.append(f"if {left}: return False")
        return lines


def compile_precheck(model: type[BaseModel]) -> Callable[[Any], bool]:
    """``fits(data)``: True only where ``model.model_validate(data)`` is certain to succeed, False
    where pydantic has to decide (see the module's docs). Its source is its ``__doc__``."""
    c = _Compiler(model.__pydantic_core_schema__)
    body = [*c.check(c.root, "d"), "return True"]
    # A required field that is missing raises KeyError where the check reads it. Every name the
    # check uses (the builtins too) is a variable of the function that makes it: no global look-up.
    names = {**{b.__name__: b for b in _BUILTINS}, **c.names}
    source = "\n".join(
        [
            f"def make({', '.join(names)}):",
            "    def fits(d):",
            "        try:",
            *c.indent(c.indent(c.indent(body))),
            "        except KeyError:",
            "            return False",
            "    return fits",
        ]
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<pre-check of {model.__qualname__}>", "exec"), namespace)
    fits: Callable[[Any], bool] = namespace["make"](**names)
    fits.__doc__ = source
    return fits
