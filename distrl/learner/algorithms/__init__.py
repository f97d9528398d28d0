"""The algorithms, found by name: the built-ins and anyone's package register theirs as entry points,
as task sources and devices are (``distrl.tasks.registry``)::

    [project.entry-points."distrl.algorithms"]
    a-ride = "distrl.learner.algorithms.a_ride:ARide"

and ``[learner] algorithm = "mypkg.module:Class"`` loads a user's own class without registering it
(``examples/my_algorithm.py``). An algorithm's settings are the table ``[learner.NAME]`` (``-`` written
``_``), read into its ``Settings`` dataclass with the inventory's own checks (``configure``).

Built in: ``a-ride`` (the DistRL paper's), ``digirl``, ``filtered-bc``, ``ppo``, ``grpo``, ``rloo``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import re
import sys
import traceback
from pathlib import Path
from typing import Any

from distrl.config import LearnerSettings, read_section
from distrl.errors import ConfigError
from distrl.learner.algorithm import Algorithm

__all__ = [
    "ALGORITHMS",
    "build",
    "check",
    "configure",
    "names",
    "resolve",
    "searched_folders",
    "table_name",
    "with_options",
]

ALGORITHMS = "distrl.algorithms"
"""The entry-point group of algorithms."""
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
"""An algorithm's name: its table ``[learner.NAME]`` spells it (``-`` written ``_``)."""


def names() -> list[str]:
    """The registered algorithms' names, sorted."""
    return sorted(_entry_points())


def table_name(name: str) -> str:
    """The settings table of the algorithm called ``name``: ``[learner.<this>]``."""
    return name.replace("-", "_")


def resolve(name: str, *, source: str = "") -> type[Algorithm]:
    """The algorithm class registered as ``name``, or the class ``module:Class`` names (``module`` found
    on the path, in the inventory ``source``'s folder or in the working folder). ``ConfigError`` (at
    ``learner.algorithm``, in ``source``) naming the registered ones when there is neither, the error
    where the module does not import, and what is wrong where the class is not an algorithm (its parts,
    its name, its ``Settings``)."""
    points = _entry_points()
    found: object = _NOTHING
    try:
        if name in points:
            found = points[name].load()
        elif ":" in name:
            module, _, attribute = name.partition(":")
            _searching(Path(source).parent if source else None, Path.cwd())
            imported = importlib.import_module(module)
            try:
                found = functools.reduce(getattr, attribute.split("."), imported)
            except AttributeError as exc:
                raise ConfigError.at(
                    "learner.algorithm", f"{name!r} does not load ({exc})", source or None
                ) from exc
    except ConfigError:
        raise
    except Exception as exc:  # whatever the module raises as it is imported, a SyntaxError among them
        named = name.partition(":")[0] + "."
        absent = isinstance(exc, ModuleNotFoundError) and named.startswith(
            f"{exc.name}."
        )  # it, or its package
        what = str(exc) if absent else _raised(exc)
        raise ConfigError.at("learner.algorithm", f"{name!r} does not load ({what})", source or None) from exc
    if found is _NOTHING:
        known = ", ".join(sorted(points)) or "none: is distrl installed (pip install -e .)?"
        raise ConfigError.at(
            "learner.algorithm",
            f"no algorithm {name!r} (known: {known}; or 'module:Class' for your own)",
            source or None,
        )
    if problem := _not_an_algorithm(found, name, points):
        raise ConfigError.at(
            "learner.algorithm",
            f"{name!r} is not an algorithm: {problem}",
            source or None,
        )
    return found  # type: ignore[return-value]  # checked above as far as a Protocol can be


def configure(settings: LearnerSettings, *, source: str = "") -> tuple[type[Algorithm], Any]:
    """The algorithm ``settings`` names and its settings read from its table, checked as the inventory
    is: ``ConfigError`` naming the key at fault. The other registered algorithms' tables are checked as
    well; a table of no algorithm is refused."""
    cls = resolve(settings.algorithm, source=source)
    own = table_name(cls.name)
    registered = {table_name(name): name for name in _entry_points()}
    for key, table in settings.tables.items():
        if key == own:
            continue
        if key not in registered:
            known = ", ".join(sorted({own, *registered}))
            raise ConfigError.at(
                f"learner.{key}", f"no algorithm of that name has settings (tables: {known})", source or None
            )
        # another algorithm's table: checked too, so that switching to it cannot fail later
        read_section(resolve(registered[key]).Settings, table, f"learner.{key}", source=source)
    return cls, read_section(cls.Settings, settings.tables.get(own, {}), f"learner.{own}", source=source)


def with_options(settings: LearnerSettings, **changes: Any) -> LearnerSettings:
    """``settings`` with ``changes``: the core's keys replaced, the others set in the algorithm's own table
    (``with_options(LearnerSettings(), kl_coef=0.5, entropy_coef=0.05)`` sets ``[learner.a_ride]
    entropy_coef``). Only the algorithm's name is checked here (``resolve``); ``configure`` checks the
    rest."""
    core = {f.name for f in dataclasses.fields(LearnerSettings)}
    algorithm = changes.get("algorithm", settings.algorithm)
    own = {key: value for key, value in changes.items() if key not in core}
    table = table_name(resolve(algorithm).name) if own else ""
    tables = dict(settings.tables)
    if own:
        tables[table] = {**tables.get(table, {}), **own}
    return dataclasses.replace(
        settings, tables=tables, **{key: value for key, value in changes.items() if key in core}
    )


def build(cls: type[Algorithm], options: Any, *, features: int, source: str = "") -> Algorithm:
    """``cls(options, features=features)``, as the learner builds it, checked: ``ConfigError`` (at
    ``learner.algorithm``, in ``source``) naming it where it raises or its ``networks`` are neither a
    ``torch.nn.Module`` nor None. ``check`` builds one so, with a small ``features``, before a run."""
    import torch  # here: reading an inventory needs no torch

    where = f"the algorithm {cls.name!r} ({cls.__module__}:{cls.__qualname__})"
    try:
        algorithm = cls(options, features=features)
    except Exception as exc:
        signature = ": it is built as Class(settings, *, features=H)" if isinstance(exc, TypeError) else ""
        raise ConfigError.at(
            "learner.algorithm", f"{where} failed to start ({_raised(exc)}){signature}", source or None
        ) from exc
    networks = getattr(algorithm, "networks", None)
    if networks is not None and not isinstance(networks, torch.nn.Module):
        raise ConfigError.at(
            "learner.algorithm",
            f"{where}: its networks are {_kind(networks)}, not a torch.nn.Module or None",
            source or None,
        )
    return algorithm


def check(settings: LearnerSettings, *, source: str = "", group_size: int = 1, max_steps: int = 0) -> None:
    """The algorithm ``settings`` names, and its table, read as the learner will read them, and the
    algorithm built once (small: it reads no model): ``ConfigError`` naming the key, or the algorithm that
    fails to start, before a run (``distrl check`` and ``run``, and ``benchmarks/paper_table.py`` for each
    row) rather than when its learner starts. An algorithm that trains whole task groups (``grouped``)
    needs a batch of whole groups of ``group_size`` (``[tasks] group_size``), and a replay buffer that
    holds one group of episodes of ``max_steps``, the longest step limit of the run's tasks."""
    algorithm, options = configure(settings, source=source)
    built = build(algorithm, options, features=8, source=source)
    batch = settings.batch_size
    if getattr(built, "grouped", False) is True and group_size > 1 and batch % group_size:
        whole = -(-batch // group_size) * group_size
        raise ConfigError.at(
            "learner.batch_size",
            f"is {batch}, not a multiple of tasks.group_size ({group_size}): {algorithm.name!r} trains whole"
            f" task groups, so each update would take {whole} trajectories",
            source or None,
        )
    grouped = getattr(built, "grouped", False) is True and group_size > 1
    if grouped and settings.replay_capacity < group_size * max_steps:
        raise ConfigError.at(
            "learner.replay_capacity",
            f"is {settings.replay_capacity} steps, less than one task group's episodes can take"
            f" ({group_size} × {max_steps}, the longest task's step limit = {group_size * max_steps}):"
            f" {algorithm.name!r} trains whole groups, and the buffer could not hold one",
            source or None,
        )


def _not_an_algorithm(found: object, name: str, points: dict[str, importlib.metadata.EntryPoint]) -> str:
    """What keeps ``found``, loaded as ``name``, from being an algorithm; "" where nothing does."""
    if not isinstance(found, type):  # an instance, a function, None: the learner builds the class itself
        what = "None" if found is None else f"a {type(found).__name__} object"
        return f"it is {what}, not a class (name the class: module:Class)"
    missing = [
        a for a in ("name", "Settings", "prioritised", "plan", "targets", "loss") if not hasattr(found, a)
    ]
    if missing:
        return f"it has no {', '.join(missing)} (distrl.learner.algorithm.Algorithm says what one has)"
    own = getattr(found, "name")  # noqa: B009  # an object's, not yet known to be an algorithm
    if not isinstance(own, str):
        return f"its name is not a string ({_kind(own)})"
    if not _NAME.fullmatch(own):
        return f"its name {own!r} is not lower-case letters, digits, - and _ (its table is [learner.NAME])"
    clash = next((n for n in points if n != name and table_name(n) == table_name(own)), None)
    if clash is not None and _loaded(points[clash]) is not found:
        return (
            f"its name {own!r} is taken (the registered algorithm {clash!r} has it): give it one of its own"
        )
    settings = getattr(found, "Settings")  # noqa: B009
    if not (isinstance(settings, type) and dataclasses.is_dataclass(settings)):
        return "its Settings is not a dataclass (a frozen, keyword-only one whose fields have defaults)"
    required = [
        f.name
        for f in dataclasses.fields(settings)
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if required:
        return f"its Settings field {required[0]!r} has no default"
    return ""


def _loaded(point: importlib.metadata.EntryPoint) -> object:
    """What ``point`` names, or None where it does not load."""
    try:
        return point.load()
    except Exception:  # a registered algorithm that does not load clashes with nothing
        return None


def _raised(exc: BaseException) -> str:
    """``exc`` in a few words: its type, its message and where it was raised (file and line)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"SyntaxError: {exc.msg}, {Path(exc.filename).name} line {exc.lineno}"
    ours = f"{Path(__file__).resolve().parents[2]}/"  # distrl's own frames: the call into the algorithm
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith("<") and not str(Path(f.filename).resolve()).startswith(ours)
    ]
    at = f", {Path(frames[-1].filename).name} line {frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {exc}{at}"


def _kind(value: object) -> str:
    """``value``'s type in words, with the value where it is short."""
    shown = repr(value)
    return f"{type(value).__name__} {shown}" if len(shown) <= 40 else f"a {type(value).__name__}"


def _searching(*folders: Path | None) -> None:
    """Let ``module:Class`` find a module in ``folders`` too, after the path's own entries."""
    for folder in folders:
        if folder is not None and str(folder.resolve()) not in sys.path:
            sys.path.append(str(folder.resolve()))
            _SEARCHED.append(str(folder.resolve()))


def searched_folders() -> tuple[str, ...]:
    """The folders ``module:Class`` was looked for in besides the path's own (the inventory's, the
    working one), in order: a learner's other ranks, processes of their own, look there too."""
    return tuple(_SEARCHED)


_SEARCHED: list[str] = []
_NOTHING = object()
"""What ``resolve`` found before it found anything (a ``module:Class`` may name None)."""


@functools.cache
def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {point.name: point for point in importlib.metadata.entry_points(group=ALGORITHMS)}
