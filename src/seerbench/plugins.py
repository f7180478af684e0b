"""Registries of the things a user can add (protocols, judges, agents, model backends, datasets)
and the loading of user code that registers them.

User code is found three ways:

- ``plugins: [my_protocols, ./lib/judges.py]`` in an experiment config (a module name, or a
  ``.py`` path read from the config file's folder), imported before the rest of the config is read;
- installed packages that declare an entry point in the ``seerbench.plugins`` group, e.g. in
  their ``pyproject.toml``::

      [project.entry-points."seerbench.plugins"]
      my_protocols = "my_package.protocols"

  (imported the first time a name is not found in a registry);
- ``module:Class`` references in a config (``{class: my_protocols:ShrinkJudge, ...}``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Generic, TypeVar

from seerbench.errors import ConfigError, UnknownNameError, close_sibling, did_you_mean, entry_names

ENTRY_POINT_GROUP = "seerbench.plugins"

#: What an unknown-name error adds when no registered name is close: the name may be a plugin's.
PLUGIN_HINT = "a plugin's? import it with the config's plugins: or seerbench --plugin"

T = TypeVar("T")

_entry_points_loaded = False
_loaded_paths: dict[str, str] = {}  # resolved .py path -> module name


def load_entry_points() -> None:
    """Import every installed ``seerbench.plugins`` entry point (once per process)."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as e:  # a broken plugin names itself instead of a bare traceback
            raise ConfigError(
                f"plugin {ep.name} ({ep.value}, entry point {ENTRY_POINT_GROUP}) failed to import: {e}"
            ) from e


def load_plugin(ref: str, base_dir: str | Path | None = None) -> str:
    """Import a plugin: a module name (``my_protocols``; the config file's folder is searched
    first) or a path to a ``.py`` file (relative to ``base_dir``). Returns the module name."""
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    if ref.endswith(".py") or "/" in ref or "\\" in ref:
        path = Path(ref).expanduser()
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise ConfigError(
                f"plugin file {path} does not exist{close_sibling(path, suffixes=('.py',))} (a relative "
                f"path is read from {base}: the config file's folder, or the working folder for --plugin)"
            )
        key = str(path.resolve())
        if key in _loaded_paths:
            return _loaded_paths[key]
        same_file = getattr(sys.modules.get(path.stem), "__file__", None)  # imported by its module name
        if same_file and str(Path(same_file).resolve()) == key:
            return path.stem
        name = f"seerbench_plugin_{path.stem}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"plugin file {path} cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            del sys.modules[name]
            raise ConfigError(f"plugin {path} failed to import: {type(e).__name__}: {e}") from e
        _loaded_paths[key] = name
        return name
    # the module name of a file already loaded by its path (plugins: [./m.py], then class: m:X):
    # the same module, not a second copy whose registrations would clash with the first's
    by_path = _loaded_paths.get(str((base / (ref.replace(".", "/") + ".py")).resolve()))
    if by_path is not None:
        return by_path
    added = False
    if base_dir is not None and str(base) not in sys.path:
        sys.path.insert(0, str(base))
        added = True
    try:
        importlib.import_module(ref)
    except ModuleNotFoundError as e:
        if e.name == ref or (e.name and ref.startswith(e.name + ".")):
            raise ConfigError(
                f"plugin module {ref!r} not found{_close_module(ref, base)} (looked in {base} "
                "and on the Python path); give a module name or a path to a .py file"
            ) from None
        raise ConfigError(f"plugin {ref} failed to import: {e}") from e
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(f"plugin {ref} failed to import: {type(e).__name__}: {e}") from e
    finally:
        if added:
            sys.path.remove(str(base))
    return ref


def _close_file(name: str, folder: Path) -> str:
    """`` (did you mean F?)`` for the ``.py`` file in ``folder`` closest to ``name`` (its name)."""
    return did_you_mean(name, entry_names(folder, suffixes=(".py",)))


def _close_module(ref: str, folder: Path) -> str:
    """`` (did you mean F?)`` for a top-level module name close to a ``.py`` file in ``folder``;
    nothing for a dotted name (``os.pathx``), which names a package's module, not a file here."""
    return "" if "." in ref else _close_file(ref + ".py", folder)


def load_plugins(refs: Any, base_dir: str | Path | None = None) -> None:
    """Import a config's ``plugins:`` list (module names or ``.py`` paths, relative to
    ``base_dir``) before the rest of the config is read; anything but a list of strings is left
    for the config's validation to refuse."""
    if isinstance(refs, list):
        for ref in refs:
            if isinstance(ref, str):
                load_plugin(ref, base_dir)


def import_object(ref: str, base_dir: str | Path | None = None) -> Any:
    """The object ``module:attribute`` names (the module is loaded as a plugin first)."""
    module, sep, attr = ref.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"{ref!r} is not a 'module:Name' reference (e.g. my_protocols:ShrinkJudge)")
    name = load_plugin(module, base_dir)
    obj: Any = sys.modules[name]
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"module {module} has no {attr!r}")
        obj = getattr(obj, part)
    return obj


def code_hash(obj: Any) -> str | None:
    """sha256 prefix of the source of ``obj`` and of the modules of the user's own code it imports
    when it is user code (not part of seerbench), so an edited plugin or helper module is seen as
    a changed config; None for seerbench's own (:func:`seerbench.provenance.code_hash`)."""
    from seerbench.provenance import code_hash as _code_hash

    return _code_hash(obj)


def definition_key(obj: Any) -> Any:
    """What makes two registrations one definition: a function's or class's module and qualified
    name, and a function's first line (two lambdas differ), as a plugin imported twice defines it
    twice; else the object itself."""
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(qualname, str):
        code = getattr(obj, "__code__", None)
        return (getattr(obj, "__module__", None), qualname, getattr(code, "co_firstlineno", None))
    return ("object", id(obj))


class Registry(dict[str, T], Generic[T]):
    """Name -> registered object, with a decorator to register and errors that name the closest
    registered name and list them all. A miss imports the installed entry-point plugins once
    before giving up. Every pluggable kind lives in one: protocols, judges, agents, model
    backends, scripted responders, datasets, factcheck datasets, tools, study task types.

    ``definition(obj)`` says which registrations are the same definition (registering it again,
    e.g. from a re-imported module, is not a clash); ``error`` is the type of the unknown-name
    error (a subclass of :class:`UnknownNameError`)."""

    def __init__(
        self,
        kind: str,
        items: dict[str, T] | None = None,
        *,
        definition: Callable[[T], Any] = definition_key,
        error: type[UnknownNameError] = UnknownNameError,
    ) -> None:
        super().__init__(items or {})
        self.kind = kind
        self._definition = definition
        self._error = error

    def register(self, name: str | None = None, *, replace: bool = False) -> Callable[[T], T]:
        """Decorator: ``@registry.register("Name")`` (default: the object's ``name`` attribute,
        else its ``__name__``). A second definition under a taken name is refused
        (:class:`ConfigError`) unless ``replace=True``."""

        def deco(obj: T) -> T:
            self.add(
                name or getattr(obj, "name", None) or getattr(obj, "__name__", None), obj, replace=replace
            )
            return obj

        return deco

    def add(self, name: Any, obj: T, *, replace: bool = False) -> None:
        """Register ``obj`` under ``name`` (what :meth:`register` does, not as a decorator)."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"give the {self.kind} a name: register({self.kind.replace(' ', '_')}_name)")
        old = self.get(name)
        if (
            old is not None
            and old is not obj
            and not replace
            and self._definition(old) != self._definition(obj)
        ):
            raise ConfigError(
                f"a {self.kind} named {name!r} is already registered ({_describe(old)}); "
                "pass replace=True to override it"
            )
        self[name] = obj

    def lookup(self, name: str) -> T:
        """The object registered as ``name``; an :class:`UnknownNameError` with the closest name
        and the list otherwise."""
        if name not in self:
            load_entry_points()
        try:
            return self[name]
        except KeyError:
            raise self.unknown(name) from None

    def unknown(self, name: str, known: str | None = None) -> UnknownNameError:
        """The error for a name not registered here: the closest registered name, then ``known``
        (default: the registered names)."""
        listed = known if known is not None else ", ".join(self)
        close = did_you_mean(name, self)
        return self._error(
            f"unknown {self.kind} {name!r}{close}; known {self.kind}s: {listed}"
            + ("" if close else f" ({PLUGIN_HINT})")
        )

    def names(self) -> list[str]:
        """Every registered name, installed entry-point plugins' included (they are imported)."""
        load_entry_points()
        return list(self)

    def __iter__(self) -> Iterator[str]:
        return super().__iter__()


def origin(obj: Any) -> str:
    """Where a registered object comes from, for listings: its source file's name for a plugin
    file (``my_protocols.py``), else its module."""
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    file = getattr(module, "__file__", None)
    if module is None or module.__name__.split(".")[0] == "seerbench" or not file:
        return getattr(obj, "__module__", None) or "?"
    return Path(file).name


def _describe(obj: Any) -> str:
    d = definition_key(getattr(obj, "loader", None) or getattr(obj, "fn", None) or obj)
    return f"{d[0]}.{d[1]}" if d[0] != "object" else repr(obj)


__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGIN_HINT",
    "Registry",
    "UnknownNameError",
    "code_hash",
    "definition_key",
    "did_you_mean",
    "import_object",
    "load_entry_points",
    "load_plugin",
    "load_plugins",
    "origin",
]
