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
import sys
from pathlib import Path
from typing import Any

from distrl.config import LearnerSettings, read_section
from distrl.errors import ConfigError
from distrl.learner.algorithm import Algorithm

__all__ = ["ALGORITHMS", "configure", "names", "resolve", "table_name", "with_options"]

ALGORITHMS = "distrl.algorithms"
"""The entry-point group of algorithms."""


def names() -> list[str]:
    """The registered algorithms' names, sorted."""
    return sorted(_entry_points())


def table_name(name: str) -> str:
    """The settings table of the algorithm called ``name``: ``[learner.<this>]``."""
    return name.replace("-", "_")


def resolve(name: str, *, source: str = "") -> type[Algorithm]:
    """The algorithm class registered as ``name``, or the class ``module:Class`` names (``module`` found
    on the path, in the inventory ``source``'s folder or in the working folder). ``ConfigError`` (at
    ``learner.algorithm``, in ``source``) naming the registered ones when there is neither."""
    points = _entry_points()
    try:
        if name in points:
            found = points[name].load()
        elif ":" in name:
            module, _, attribute = name.partition(":")
            _searching(Path(source).parent if source else None, Path.cwd())
            found = functools.reduce(getattr, attribute.split("."), importlib.import_module(module))
        else:
            found = None
    except (ImportError, AttributeError) as exc:
        raise ConfigError.at("learner.algorithm", f"{name!r} does not load ({exc})", source or None) from exc
    if found is None:
        known = ", ".join(sorted(points)) or "none: is distrl installed (pip install -e .)?"
        raise ConfigError.at(
            "learner.algorithm",
            f"no algorithm {name!r} (known: {known}; or 'module:Class' for your own)",
            source or None,
        )
    missing = [a for a in ("name", "Settings", "plan", "targets", "loss") if not hasattr(found, a)]
    settings_class = getattr(found, "Settings", None)
    if missing or not (isinstance(settings_class, type) and dataclasses.is_dataclass(settings_class)):
        what = f"has no {', '.join(missing)}" if missing else "has no Settings dataclass"
        raise ConfigError.at(
            "learner.algorithm",
            f"{name!r} is not an algorithm: it {what} (distrl.learner.algorithm.Algorithm says what one has)",
            source or None,
        )
    return found  # type: ignore[no-any-return]  # checked above as far as a Protocol can be


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


def _searching(*folders: Path | None) -> None:
    """Let ``module:Class`` find a module in ``folders`` too, after the path's own entries."""
    for folder in folders:
        if folder is not None and str(folder.resolve()) not in sys.path:
            sys.path.append(str(folder.resolve()))


@functools.cache
def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {point.name: point for point in importlib.metadata.entry_points(group=ALGORITHMS)}
