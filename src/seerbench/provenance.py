"""Provenance: what made a result, as values a cell's identity and the model cache key share.

- :func:`code_files` / :func:`code_hash`: the source of a user class (a protocol, judge, agent or
  model backend) *and of the modules of the user's own code it imports*, followed transitively
  inside its package (or, for a lone module, its folder), never into site-packages or seerbench.
- :func:`file_digest`: the sha256 of a (large) file, computed once and remembered by
  path + size + mtime in ``<cache dir>/file_hashes.json``: a GGUF model file's content identity.
- :func:`model_provenance`: one model's backend name and version, model id, content identity and
  the user backend's code; :func:`provenance_key` is the part of it the cache key adds.
- :func:`environment`: the host's Python, the package versions that matter and the git revision
  (and dirty flag) of the user's code, recorded with each run.
- :func:`describe_changes`: a changed identity in words (``rubrics.py``, backend ``kw/v1``'s code).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import json
import os
import platform
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Files at least this large are hashed once and remembered by path + size + mtime; smaller ones
#: (source files, edited within the mtime's resolution) are read every time.
MEMO_MIN_BYTES = 1 << 20
MEMO_FILE = "file_hashes.json"

_memo_lock = threading.Lock()
_SITE_DIRS = ("site-packages", "dist-packages")


def _memo_path() -> Path:
    from seerbench.config import cache_dir

    return cache_dir() / MEMO_FILE


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_digest(path: str | Path) -> str:
    """The sha256 (hex) of a file's bytes. A file of ``MEMO_MIN_BYTES`` or more is hashed once
    and remembered by its resolved path, size and mtime (a moved, replaced or rewritten file is
    hashed again)."""
    p = Path(path).expanduser().resolve()
    st = p.stat()
    if st.st_size < MEMO_MIN_BYTES:
        return _sha256(p)
    key, stamp = str(p), [st.st_size, st.st_mtime_ns]
    memo_path = _memo_path()
    with _memo_lock:
        try:
            memo = json.loads(memo_path.read_text())
            if not isinstance(memo, dict):
                memo = {}
        except (OSError, ValueError):
            memo = {}  # none yet, or damaged: it is only a memo
        hit = memo.get(key)
        if isinstance(hit, list) and len(hit) == 3 and hit[:2] == stamp:
            return str(hit[2])
        digest = _sha256(p)
        memo[key] = [*stamp, digest]
        try:
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo_path.with_name(f"{memo_path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(memo))
            os.replace(tmp, memo_path)
        except OSError:
            pass  # a read-only cache dir: hash again next time
        return digest


# ---- code ------------------------------------------------------------------------------------


def _is_own(module_name: str) -> bool:
    return module_name == "seerbench" or module_name.startswith("seerbench.")


def _source_of(obj: Any) -> tuple[str, Path] | None:
    """(module name, source file) of a user object; None for seerbench's own, builtins, or an
    object without a source file."""
    module = inspect.getmodule(obj)
    if module is None or _is_own(module.__name__):
        return None
    try:
        src = inspect.getsourcefile(obj)
    except TypeError:
        return None
    if not src or not Path(src).is_file():
        return None
    return module.__name__, Path(src).resolve()


def _root(module_name: str, file: Path) -> tuple[Path, Path]:
    """(root, base): the closure stays inside ``root``; labels are relative to ``base``. A module
    of a package: its top-level package's folder (labels ``pkg/x.py``); a lone module: its folder,
    unless that is site-packages (then the file alone)."""
    top = module_name.split(".")[0]
    top_mod = sys.modules.get(top)
    top_file = getattr(top_mod, "__file__", None)
    if top != module_name and top_file and getattr(top_mod, "__path__", None):
        root = Path(top_file).resolve().parent
        return root, root.parent
    folder = file.parent
    if folder.name in _SITE_DIRS:
        return file, folder
    return folder, folder


def _imported_names(tree: ast.AST, module_name: str, is_package: bool) -> set[str]:
    """Absolute module names an AST imports (anywhere, function bodies included), with
    ``from x import y`` also giving ``x.y`` (y may be a submodule), and their parent packages."""
    package = module_name if is_package else module_name.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                try:
                    base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                except (ImportError, ValueError):
                    continue
            else:
                base = node.module or ""
            if base:
                names.add(base)
            names.update(f"{base}.{a.name}" if base else a.name for a in node.names if a.name != "*")
    # importing a.b.c runs a/__init__.py and a/b/__init__.py too
    return names | {n.rsplit(".", i)[0] for n in names for i in range(1, n.count(".") + 1)}


def _module_file(name: str, base: Path, root: Path) -> Path | None:
    """The file of module ``name`` if it lies inside ``root``: the loaded module's, else the one
    the name points at under ``base`` (a module imported lazily, not yet loaded)."""
    loaded = getattr(sys.modules.get(name), "__file__", None)
    candidates = [Path(loaded)] if loaded else []
    stem = base.joinpath(*name.split("."))
    candidates += [stem.with_suffix(".py"), stem / "__init__.py"]
    for c in candidates:
        try:
            c = c.resolve()
        except OSError:
            continue
        if c.is_file() and (c == root or root in c.parents):
            return c
    return None


def code_files(obj: Any) -> dict[str, str]:
    """Source file label -> sha256 prefix, for the file defining a user object and every module of
    the user's own code it imports, transitively (inside its package, or its folder for a lone
    module). Empty for seerbench's own code and objects without a source file."""
    found = _source_of(obj)
    if found is None:
        return {}
    module_name, file = found
    root, base = _root(module_name, file)
    out: dict[str, str] = {}
    todo = [(module_name, file)]
    seen = {file}
    while todo:
        name, path = todo.pop()
        data = path.read_bytes()
        label = path.relative_to(base).as_posix() if base in path.parents else path.name
        out[label] = hashlib.sha256(data).hexdigest()[:16]
        if path.suffix != ".py" or root.is_file():
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        for imported in sorted(_imported_names(tree, name, path.name == "__init__.py")):
            if _is_own(imported):
                continue
            f = _module_file(imported, base, root)
            if f is not None and f not in seen:
                seen.add(f)
                todo.append((imported, f))
    return dict(sorted(out.items()))


def code_hash(obj: Any) -> str | None:
    """One sha256 prefix over :func:`code_files` (the user object's source and the user modules
    it imports); None for seerbench's own code."""
    files = code_files(obj)
    if not files:
        return None
    blob = json.dumps(files, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# ---- models ----------------------------------------------------------------------------------


def model_provenance(backend: Any) -> dict[str, Any]:
    """What identifies a backend's answers: ``backend`` (name) and ``model`` (its model id), and
    where known ``version`` (the backend's, or its engine's), ``content`` (the weights' identity,
    e.g. a GGUF file's sha256) and ``code`` (a user backend's :func:`code_files`)."""
    prov: dict[str, Any] = {"backend": backend.name, "model": backend.model_id}
    version = getattr(backend, "version", "")
    if version:
        prov["version"] = str(version)
    content_fn = getattr(backend, "content_identity", None)
    content = content_fn() if callable(content_fn) else None
    if content:
        prov["content"] = content
    code = code_files(type(backend))
    if code:
        prov["code"] = code
    return prov


def provenance_key(prov: dict[str, Any]) -> str:
    """The part of a model's provenance the cache key adds to backend name and model id (version,
    content, code); "" when there is none, so such keys are those of earlier seerbench versions."""
    extra = {k: v for k, v in prov.items() if k not in ("backend", "model")}
    if not extra:
        return ""
    return hashlib.sha256(json.dumps(extra, sort_keys=True).encode()).hexdigest()[:32]


# ---- the run's environment ---------------------------------------------------------------------

#: The module of a seerbench backend -> the distribution whose version decides its answers or calls.
ENGINE_PACKAGES = {
    "seerbench.models._xllamacpp": "xllamacpp",
    "seerbench.models._local": "llama-cpp-python",
    "seerbench.models._openai": "aiohttp",
    "seerbench.models._litellm": "litellm",
}


def package_version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _git(folder: Path) -> dict[str, Any] | None:
    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(
                ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    rev = git("rev-parse", "HEAD") if top else None
    if not top or not rev:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"repo": top, "rev": rev, "dirty": bool(status)}


def environment(
    *, code_modules: Iterable[str] = (), backend_modules: Iterable[str] = (), folders: Iterable[Path] = ()
) -> dict[str, Any]:
    """The host's Python, the versions of seerbench, of the engines of ``backend_modules`` and of
    the installed packages holding ``code_modules`` (the user's), the git revision and dirty
    flag of each repository holding one of ``folders`` or of the user's modules' files, and
    (``seerbench_git``) of seerbench's own checkout when it is not installed in site-packages."""
    from importlib.metadata import packages_distributions

    from seerbench._version import __version__

    packages: dict[str, str | None] = {"seerbench": __version__}
    for m in sorted(set(backend_modules)):
        dist = ENGINE_PACKAGES.get(m)
        if dist:
            packages[dist] = package_version(dist)
    code_modules = sorted(set(code_modules))
    dists = packages_distributions() if code_modules else {}
    places = [Path(f).resolve() for f in folders]
    for m in code_modules:
        for dist in dists.get(m.split(".")[0], []):
            packages[dist] = package_version(dist)
        f = getattr(sys.modules.get(m), "__file__", None)
        if f:
            places.append(Path(f).resolve().parent)
    repos: dict[str, dict[str, Any]] = {}
    for folder in dict.fromkeys(places):
        if folder.is_dir() and not any(part in _SITE_DIRS for part in folder.parts):
            g = _git(folder)
            if g is not None:
                repos.setdefault(g["repo"], g)
    env: dict[str, Any] = {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "packages": packages,
        "git": list(repos.values()),
    }
    own = Path(__file__).resolve().parent  # seerbench's own code: an editable checkout's revision
    if not any(part in _SITE_DIRS for part in own.parts):
        g = _git(own)
        if g is not None:
            env["seerbench_git"] = g
    return env


def environment_lines(env: dict[str, Any] | None) -> list[str]:
    """An environment record as short lines for ``show`` and the report; [] when none was recorded."""
    if not env:
        return []
    pk = env.get("packages") or {}
    lines = [
        f"python {env.get('python')}",
        "packages " + ", ".join(f"{k} {v or 'not installed'}" for k, v in pk.items()),
    ]
    for g in env.get("git") or []:
        lines.append(
            f"git {g.get('repo')} @ {str(g.get('rev'))[:12]}" + (" (dirty)" if g.get("dirty") else "")
        )
    own = env.get("seerbench_git")
    if own:
        lines.append(f"seerbench-git @ {str(own.get('rev'))[:12]}" + (" (dirty)" if own.get("dirty") else ""))
    for spec, names in (env.get("served_models") or {}).items():
        lines.append(f"served {spec}: {', '.join(names)}")
    return lines


# ---- a changed identity in words -------------------------------------------------------------


def describe_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs in the ``code`` and ``models`` parts of two cell identities, in words: a user
    source file (``rubrics.py``), a model's file, backend version or backend code."""
    out: list[str] = []
    old_code, new_code = old.get("code") or {}, new.get("code") or {}
    for ref in sorted(set(old_code) | set(new_code)):
        a, b = old_code.get(ref), new_code.get(ref)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            files = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
            out.append(f"{', '.join(files)} (code of {ref})")
        else:
            out.append(f"the code of {ref}")
    old_m, new_m = old.get("models") or {}, new.get("models") or {}
    for spec in sorted(set(old_m) | set(new_m)):
        a, b = old_m.get(spec) or {}, new_m.get(spec) or {}
        if a == b:
            continue
        if not a or not b:
            out.append(f"model {spec} ({'no provenance recorded' if not a else 'not used now'})")
            continue
        what = []
        if a.get("content") != b.get("content"):
            what.append(
                "the model file" if str(b.get("content", "")).startswith("sha256:") else "its content"
            )
        if a.get("version") != b.get("version"):
            what.append(f"backend version {a.get('version')} -> {b.get('version')}")
        if a.get("code") != b.get("code"):
            ca, cb = a.get("code") or {}, b.get("code") or {}
            files = sorted(f for f in set(ca) | set(cb) if ca.get(f) != cb.get(f))
            what.append(f"backend {spec}'s code ({', '.join(files)})")
        for k in sorted((set(a) | set(b)) - {"content", "version", "code"}):
            if a.get(k) != b.get(k):
                what.append(f"{k} {a.get(k)} -> {b.get(k)}")
        out.append(f"model {spec}: {'; '.join(what)}")
    return out


__all__ = [
    "ENGINE_PACKAGES",
    "code_files",
    "code_hash",
    "describe_changes",
    "environment",
    "environment_lines",
    "file_digest",
    "model_provenance",
    "package_version",
    "provenance_key",
]
