"""The layer contract of ARCHITECTURE.md ("Layers, bottom up"), checked over the import graph of
``src/seerbench`` read with :mod:`ast`: every import counts, at module level, inside a function
(a lazy import) or under ``TYPE_CHECKING``.

- no cycle between the top-level units (a package such as ``protocols`` or a module such as
  ``results.py``), and none between the modules of one package (there, annotation-only imports
  under ``TYPE_CHECKING`` are allowed);
- a unit imports only units of its own layer or of the layers below it (:data:`LAYERS`).

A failure names the offending import as ``file:line``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "seerbench"
FACADE = "<seerbench>"  # the package's own __init__.py: the public facade, above everything

#: The layers, bottom up. A unit may import its own layer or a lower one, never a higher one.
LAYERS: list[tuple[str, set[str]]] = [
    (
        "core",
        {
            "types",
            "records",
            "schema",
            "metrics",
            "estimators",
            "stats",
            "errors",
            "config",
            "plugins",
            "conditions",
            "quotes",
            "render",
            "prompts",
            "tools",
            "tables",
            "_format",
            "_resume",
            "_version",
            "provenance",
            "_lock",
            "store",
            "_precheck",
            "_forked",
        },
    ),
    ("models", {"models"}),
    ("actors", {"agents", "judges", "protocols"}),
    ("producers", {"datasets", "factcheck", "critique"}),
    ("run", {"experiment", "results", "runs", "export"}),
    ("analyses", {"analysis", "complementarity"}),
    ("faces", {"study", "report", "testing"}),
    ("cli", {"cli", FACADE}),
]

#: Imports that break the contract for now, each with the reason; (importing unit, imported unit).
#: Empty: the statistics home (seerbench/stats) took the bootstrap and the intervals.
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()

#: Private modules that other packages may still import, each with the reason (none now).
KNOWN_PRIVATE: set[str] = set()


@dataclass(frozen=True)
class Import:
    source: str  # importing module, dotted
    target: str  # imported module, dotted
    file: Path
    line: int
    typing_only: bool = False  # under ``if TYPE_CHECKING:``: never executed

    def where(self) -> str:
        """``src/seerbench/x/_y.py:LINE``."""
        parts = self.file.parts
        return "/".join(["src", *parts[len(parts) - 1 - parts[::-1].index(ROOT) :]]) + f":{self.line}"


def unit(module: str) -> str:
    """The top-level unit of a module: ``seerbench.protocols._base`` -> ``protocols``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else FACADE


def layer_of(u: str, layers: Sequence[tuple[str, set[str]]] = LAYERS) -> int:
    for i, (_, units) in enumerate(layers):
        if u in units:
            return i
    raise AssertionError(f"seerbench.{u} is in no layer of tests/test_layers.py LAYERS: put it in one")


def modules(src: Path = SRC) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package)."""
    out = {}
    for p in sorted((src / ROOT).rglob("*.py")):
        parts = list(p.relative_to(src).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (p, is_pkg)
    return out


def imports(src: Path = SRC) -> list[Import]:
    """Every import of a seerbench module by a seerbench module, wherever it is in the file."""
    mods = modules(src)
    out = []
    for name, (path, is_pkg) in mods.items():
        package = name if is_pkg else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        typing_only = {
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for stmt in block.body
            for n in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            targets: list[str] = []
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    mod = node.module or ""
                # `from pkg import sub` imports the submodule; `from pkg import name` the package
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
            for t in targets:
                if t != ROOT and not t.startswith(ROOT + "."):
                    continue
                while t not in mods:  # `import seerbench.x.y` of an attribute path: the module
                    t = t.rpartition(".")[0]
                out.append(Import(name, t, path, node.lineno, id(node) in typing_only))
    return out


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    nodes = sorted({*edges, *(w for ws in edges.values() for w in ws)})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def describe(comp: list[str], edges: Iterable[Import], key: Callable[[str], str]) -> str:
    """The cycle and every import that makes it, as ``a -> b  (file:line)``."""
    inside = set(comp)
    lines = [
        f"    {a} -> {b}  ({i.where()})"
        for i in edges
        for a, b in [(key(i.source), key(i.target))]
        if a in inside and b in inside and a != b
    ]
    return f"  cycle {' <-> '.join(comp)}:\n" + "\n".join(sorted(set(lines)))


def unit_cycles(found: Sequence[Import]) -> list[str]:
    edges: dict[str, set[str]] = defaultdict(set)
    kept = [i for i in found if (unit(i.source), unit(i.target)) not in KNOWN_EXCEPTIONS]
    for i in kept:
        if unit(i.source) != unit(i.target):
            edges[unit(i.source)].add(unit(i.target))
    return [describe(c, kept, unit) for c in cycles(edges)]


def module_cycles(found: Sequence[Import]) -> list[str]:
    """Cycles between the modules of one package (a module importing its own package's
    ``__init__``, which imports it, counts).
    Inside a package, an import under ``TYPE_CHECKING`` (for annotations only) is no edge; between
    packages every import is."""
    edges: dict[str, set[str]] = defaultdict(set)
    kept = [
        i for i in found if unit(i.source) == unit(i.target) and i.source != i.target and not i.typing_only
    ]
    for i in kept:
        edges[i.source].add(i.target)
    return [describe(c, kept, lambda m: m) for c in cycles(edges)]


def upward(found: Sequence[Import], layers: Sequence[tuple[str, set[str]]] = LAYERS) -> list[str]:
    out = []
    for i in found:
        a, b = unit(i.source), unit(i.target)
        if (a, b) in KNOWN_EXCEPTIONS:
            continue
        la, lb = layer_of(a, layers), layer_of(b, layers)
        if lb > la:
            out.append(
                f"  {i.where()}: {i.source} ({layers[la][0]}) imports {i.target} ({layers[lb][0]}), "
                "a higher layer"
            )
    return sorted(out)


def test_every_unit_is_in_one_layer() -> None:
    named = [u for _, units in LAYERS for u in units]
    assert len(named) == len(set(named)), "a unit is in two layers"
    for m in modules():
        layer_of(unit(m))


def test_no_cycle_between_packages_or_top_level_modules() -> None:
    found = unit_cycles(imports())
    assert not found, "import cycles between seerbench's packages/modules:\n" + "\n".join(found)


def test_no_cycle_between_the_modules_of_a_package() -> None:
    found = module_cycles(imports())
    assert not found, "import cycles inside a package:\n" + "\n".join(found)


def test_imports_point_down_the_layers() -> None:
    found = upward(imports())
    assert not found, (
        "imports against the layers of ARCHITECTURE.md (tests/test_layers.py LAYERS):\n" + "\n".join(found)
    )


def test_known_exceptions_are_still_needed() -> None:
    """An exception that no import needs any more is removed (so the list only shrinks)."""
    found = imports()
    used = {(unit(i.source), unit(i.target)) for i in found}
    assert not KNOWN_EXCEPTIONS - used, f"no longer needed, remove: {sorted(KNOWN_EXCEPTIONS - used)}"
    private = {i.target for i in found if unit(i.source) != unit(i.target)}
    assert not KNOWN_PRIVATE - private, f"no longer needed, remove: {sorted(KNOWN_PRIVATE - private)}"


def test_no_private_module_of_another_package_is_imported() -> None:
    bad = sorted(
        f"  {i.where()}: {i.source} imports {i.target}"
        for i in imports()
        if unit(i.source) != unit(i.target)
        and unit(i.target) != FACADE
        and i.target not in KNOWN_PRIVATE
        and any(p.startswith("_") for p in i.target.split(".")[2:])
    )
    assert not bad, (
        "imports of another package's private module (export it from its __init__):\n" + "\n".join(bad)
    )


# ---- the checker itself, on a small tree -------------------------------------------------------


def _tree(tmp: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp / ROOT / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp


def test_checker_finds_a_lazy_upward_import_and_names_its_line(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "types.py": "def f():\n    x = 1\n    from seerbench.models import M\n",
            "models/__init__.py": "from seerbench.models._m import M\n",
            "models/_m.py": "from ..types import f\nM = 1\n",
        },
    )
    found = imports(src)
    assert {(i.source, i.target, i.line) for i in found} == {
        ("seerbench.types", "seerbench.models", 3),
        ("seerbench.models", "seerbench.models._m", 1),
        ("seerbench.models._m", "seerbench.types", 1),
    }
    layers = [("core", {"types"}), ("models", {"models"}), ("top", {FACADE})]
    msgs = upward(found, layers)
    assert len(msgs) == 1
    assert "seerbench/types.py:3: seerbench.types (core) imports seerbench.models (models)" in msgs[0]
    (comp,) = unit_cycles(found)
    assert "types <-> models" in comp or "models <-> types" in comp
    assert "seerbench/types.py:3" in comp and "seerbench/models/_m.py:1" in comp


def test_checker_finds_a_cycle_inside_a_package_through_its_init(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "report/__init__.py": "from seerbench.report._html import build\n",
            "report/_html.py": "def build():\n    from seerbench.report._figs import fig\n",
            "report/_figs.py": "from seerbench.report import build\n",
        },
    )
    (comp,) = module_cycles(imports(src))
    assert "seerbench.report._figs" in comp and "seerbench/report/_html.py:2" in comp
    # the package importing its own submodules is no cycle by itself
    (tmp_path / ROOT / "report/_figs.py").write_text("fig = 1\n")
    assert module_cycles(imports(src)) == []


def test_results_and_runs_load_no_model_stack() -> None:
    """Scoring and reading a run folder load no backend, model, critique or fuzzy-matching code."""
    code = (
        "import sys, seerbench.results, seerbench.runs\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'rapidfuzz' or m.split('.')[:2] in "
        "(['seerbench', 'models'], ['seerbench', 'critique'], ['seerbench', 'protocols'], "
        "['seerbench', 'agents'], ['seerbench', 'judges'], ['seerbench', 'experiment']))\n"
        "print(' '.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_env()
    ).stdout.strip()
    assert out == "", f"import seerbench.results / seerbench.runs loaded: {out}"


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(SRC)}


@pytest.mark.parametrize("name", ["CaseRun", "QuestionRun"])
def test_records_are_the_same_class_from_every_public_place(name: str) -> None:
    import seerbench
    import seerbench.protocols
    import seerbench.records

    assert getattr(seerbench.protocols, name) is getattr(seerbench.records, name) is getattr(seerbench, name)


def test_ai_rating_is_the_same_class_from_every_public_place() -> None:
    import seerbench.complementarity
    import seerbench.records

    assert seerbench.complementarity.AIRating is seerbench.records.AIRating
