"""The docs site's generated reference pages, as an MkDocs hook (``hooks:`` in ``mkdocs.yml``).

Two pages are written from the code itself, and kept in the repository (so that they read where the
docs are browsed as files, on GitHub say): ``python tools/docs_reference.py`` writes them, and every build
checks that they are what the code gives (a warning naming the page and that command, which
``mkdocs build --strict`` makes an error), so that they cannot drift:

- ``reference/cli.md``: every command of ``python -m distrl``, from the argparse parsers
  (``distrl.cli.parsers.build_parser``), with every argument, its default and its help, at a fixed width
  (``WIDTH``) whatever the terminal's;
- ``reference/inventory.md``: every key of ``hosts.toml``, from the config dataclasses
  (``distrl.config.Inventory`` and the tables under it, walked generically, nested tables included),
  with its type, default, bounds and meaning (the field's docstring);

and it checks every docstring of the package for references to names that do not exist
(```distrl.x.y```): each one is a warning naming the file and line, which ``mkdocs build --strict`` makes
an error. ``tests/test_docs.py`` calls the same functions.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import importlib
import inspect
import logging
import os
import re
import textwrap
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.plugins.distrl_reference")

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CLI_PAGE = "reference/cli.md"
INVENTORY_PAGE = "reference/inventory.md"
WIDTH = 100
"""The columns argparse's help is laid out in on the CLI page (it would take the terminal's)."""

# ----------------------------------------------------------------------------------------------- the CLI


@dataclasses.dataclass(frozen=True)
class Command:
    """One subcommand of ``python -m distrl``."""

    name: str
    parser: argparse.ArgumentParser
    summary: str
    """Its line in ``--help``'s list; empty for an internal command, which the list leaves out."""

    @property
    def internal(self) -> bool:
        return not self.summary


def commands() -> list[Command]:
    """Every subcommand, in the order ``--help`` lists them (internal ones included)."""
    from distrl.cli.parsers import build_parser

    sub = _subparsers(build_parser())
    summaries = {action.dest: action.help or "" for action in sub._choices_actions}
    return [Command(name, parser, summaries.get(name, "")) for name, parser in sub.choices.items()]


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise LookupError("the parser has no subcommands")


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """A command's arguments, ``--help`` left out."""
    return [
        a for a in parser._actions if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS
    ]


def argument_name(action: argparse.Action) -> str:
    """How an argument is written: ``--seed N``, ``-v, --verbose``, ``inventory``."""
    if not action.option_strings:
        return str(action.metavar or action.dest)
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or action.dest.upper()
    return f"{names} {metavar if isinstance(metavar, str) else ' '.join(metavar)}"


def cli_page() -> str:
    """``reference/cli.md``."""
    from distrl.cli.parsers import build_parser

    with _columns(WIDTH):
        return _cli_page(build_parser())


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse lays its help out in ``width`` columns meanwhile (it reads ``COLUMNS`` for each help)."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _cli_page(top: argparse.ArgumentParser) -> str:
    lines = [
        "# Command line",
        "",
        "<!-- Generated from distrl/cli/parsers.py and distrl/cli/local_parsers.py by"
        " tools/docs_reference.py; a docs build checks it. -->",
        "",
        "`python -m distrl COMMAND ...` (or `distrl COMMAND ...` where the package's script is on the "
        "`PATH`). A user's mistake ends in one sentence on stderr: exit status 2 for usage and inventory "
        "errors, 1 when something failed while running, 130 at Ctrl-C and 143 at SIGTERM.",
        "",
        "```text",
        top.format_help().rstrip(),
        "```",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for command in commands():
        summary = command.summary or "internal: " + _one_line(command.parser.description or "")
        lines.append(f"| [`{command.name}`](#{command.name}) | {_cell(summary)} |")
    lines.append("")
    for command in commands():
        lines += [f"## `{command.name}` {{#{command.name}}}", ""]
        if command.internal:
            lines += [
                '!!! note "Internal"',
                f"    `{command.name}` is started by distrl itself and is not listed by `python -m distrl "
                "--help`; running it by hand is for debugging.",
                "",
            ]
        lines += [_escape(command.parser.description or command.summary), ""]
        lines += ["```text", command.parser.format_usage().strip(), "```", ""]
        lines += ["| argument | default | meaning |", "|---|---|---|"]
        for action in arguments(command.parser):
            anchor = f"{command.name}-{action.dest.replace('_', '-')}"
            default = "" if action.required or action.nargs == 0 else _default(action.default)
            if action.required and action.option_strings:
                default = "required"
            lines.append(
                f'| <span id="{anchor}"></span>`{argument_name(action)}` | {default} | '
                f"{_cell(_escape(action.help or ''))}{_choices(action)} |"
            )
        lines.append("")
    return "\n".join(lines)


def _default(value: object) -> str:
    if value is None or value == "" or value is argparse.SUPPRESS:
        return ""
    return f"`{value}`"


def _choices(action: argparse.Action) -> str:
    if not action.choices or isinstance(action, argparse._SubParsersAction):
        return ""
    return " (one of " + ", ".join(f"`{c}`" for c in action.choices) + ")"


# ------------------------------------------------------------------------------------------ the inventory


@dataclasses.dataclass(frozen=True)
class Key:
    """One key of ``hosts.toml``."""

    table: str
    """Its table as TOML writes it: ``run``, ``learner.a_ride``, ``hosts.devices``."""
    name: str
    type: str
    default: str
    bounds: str
    meaning: str

    @property
    def path(self) -> str:
        return f"{self.table}.{self.name}"


@dataclasses.dataclass(frozen=True)
class Table:
    """One table of ``hosts.toml`` and its keys (sub-tables are tables of their own)."""

    name: str
    cls: type[Any]
    array: bool
    keys: tuple[Key, ...]


def tables() -> list[Table]:
    """Every table of the inventory, walked from ``Inventory``'s fields: a field that holds a dataclass
    is a table (``[run]``), a tuple of them an array of tables (``[[hosts]]``), and within a table a field
    that holds a dataclass a sub-table (``[hosts.devices]``, ``[learner.a_ride]``). ``[defaults]`` takes
    the keys of ``[[hosts]]`` but the ones that differ per host."""
    from distrl.config import HostEntry, Inventory

    found: list[Table] = []
    hosts: list[Table] = []
    for field, hint in _fields(Inventory):
        cls, array = _table_type(hint)
        if cls is HostEntry:  # last, as hosts.example.toml has them: what every host shares, then each
            hosts += [*_defaults(cls), *_walk(field.name, cls, array)]
        elif cls is not None:
            found += _walk(field.name, cls, array)
            if field.name == "learner":
                found += _algorithm_tables()
    return found + hosts


def _algorithm_tables() -> list[Table]:
    """``[learner.NAME]``: each registered algorithm's ``Settings`` dataclass
    (``distrl.learner.algorithms``)."""
    try:
        registry: Any = importlib.import_module("distrl.learner.algorithms")
        names = registry.names()
    except (ImportError, AttributeError):
        return []
    found: list[Table] = []
    for name in names:
        settings = getattr(registry.resolve(name), "Settings", None)
        if isinstance(settings, type) and dataclasses.is_dataclass(settings):
            found += _walk(f"learner.{registry.table_name(name)}", settings, False)
    return found


def inventory_keys() -> list[Key]:
    """Every key of the inventory."""
    return [key for table in tables() for key in table.keys]


def _walk(name: str, cls: type[Any], array: bool) -> list[Table]:
    own: list[Key] = []
    below: list[Table] = []
    docs = field_docs(cls)
    for field, hint in _fields(cls):
        sub, sub_array = _table_type(hint)
        if _sub_tables(hint):
            continue  # tables of tables (``[learner.NAME]``), each documented from its own dataclass
        if sub is not None:
            below += _walk(f"{name}.{field.name}", sub, sub_array)
        else:
            own.append(_key(name, field, hint, docs.get(field.name, "")))
    return [Table(name, cls, array, tuple(own)), *below]


def _defaults(host_cls: type[Any]) -> list[Table]:
    from distrl.config.reader import HOST_ONLY

    host = _walk("hosts", host_cls, True)
    own = tuple(
        dataclasses.replace(key, table="defaults") for key in host[0].keys if key.name not in HOST_ONLY
    )
    subs = [
        Table(
            t.name.replace("hosts", "defaults", 1),
            t.cls,
            False,
            tuple(dataclasses.replace(k, table=k.table.replace("hosts", "defaults", 1)) for k in t.keys),
        )
        for t in host[1:]
    ]
    return [Table("defaults", host_cls, False, own), *subs]


def _fields(cls: type[Any]) -> Iterator[tuple[dataclasses.Field[Any], Any]]:
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.init and field.name != "source":
            yield field, hints[field.name]


def _sub_tables(hint: Any) -> bool:
    """A mapping of names to tables, such as ``LearnerSettings.tables``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    is_mapping = origin is not None and isinstance(origin, type) and issubclass(origin, Mapping)
    return (
        is_mapping
        and len(args) == 2
        and typing.get_origin(args[1]) is not None
        and issubclass(typing.get_origin(args[1]), Mapping)
    )


def _table_type(hint: Any) -> tuple[type[Any] | None, bool]:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint, False
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if args and dataclasses.is_dataclass(args[0]) and isinstance(args[0], type):
            return args[0], True
    return None, False


def _key(table: str, field: dataclasses.Field[Any], hint: Any, doc: str) -> Key:
    if field.default is not dataclasses.MISSING:
        default = _toml(field.default)
    elif field.default_factory is not dataclasses.MISSING:
        default = _toml(field.default_factory())
    else:
        default = "required"
    return Key(table, field.name, type_name(hint), default, bounds(field.metadata), doc)


def type_name(hint: Any) -> str:
    """A type as TOML users read it."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is bool:
        return "boolean"
    if hint is int:
        return "integer"
    if hint is float:
        return "number"
    if hint is str:
        return "string"
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{_toml(a)}`" for a in args)
    if origin is tuple:
        return f"array of {type_name(args[0])}s"
    if origin in (Mapping, dict) or (origin is not None and issubclass(origin, Mapping)):
        return f"table of {type_name(args[1])}s"
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(type_name(a) for a in args)
    return getattr(hint, "__name__", str(hint))


def bounds(metadata: Mapping[str, Any]) -> str:
    """A field's bounds from its metadata (``distrl.config.fields``)."""
    parts = []
    if metadata.get("ge") is not None:
        parts.append(f"≥ {metadata['ge']:g}")
    if metadata.get("gt") is not None:
        parts.append(f"> {metadata['gt']:g}")
    if metadata.get("le") is not None:
        parts.append(f"≤ {metadata['le']:g}")
    if metadata.get("allow_inf"):
        parts.append("`inf` allowed")
    if metadata.get("meaning"):
        parts.append(f"{metadata['meaning']} (or empty)")
    return ", ".join(parts)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float):
        return "inf" if value == float("inf") else repr(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return str(value)


def field_docs(cls: type[Any]) -> dict[str, str]:
    """A dataclass's attribute docstrings (the string under each field), by field name, from its
    class and the classes it inherits from."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        body = tree.body[0].body  # type: ignore[attr-defined]
        for node, following in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def inventory_page() -> str:
    """``reference/inventory.md``."""
    lines = [
        "# Inventory keys",
        "",
        "<!-- Generated from the dataclasses of distrl/config/ by tools/docs_reference.py; a docs build"
        " checks it. -->",
        "",
        "Every key of `hosts.toml`, generated from the dataclasses that read it (`distrl.config`): its "
        "type, its default, its bounds (checked when the inventory is loaded) and its meaning. "
        "`hosts.example.toml`, which `python -m distrl init` writes, shows every key with its default, "
        "and a test holds it equal to these dataclasses. Every table is optional but `[[hosts]]`. "
        "A mistake stops `run`, `check` and the rest before anything starts, with the file and the "
        "key's TOML path: `hosts.toml: hosts[1].devicez: unknown key (did you mean 'devices'?)`.",
        "",
    ]
    for table in tables():
        header = f"[[{table.name}]]" if table.array else f"[{table.name}]"
        anchor = table.name.replace(".", "-")
        lines += [f"## `{header}` {{#{anchor}}}", ""]
        summary = inspect.cleandoc(table.cls.__doc__ or "")
        if table.name == "defaults":
            summary = (
                "Host settings every `[[hosts]]` entry inherits; an entry's own keys win, and `env` tables "
                "merge key by key. Every key of `[[hosts]]` but the ones that differ per host."
            )
        lines += [_escape(summary), ""]
        if not table.keys:
            continue
        lines += ["| key | type | default | bounds | meaning |", "|---|---|---|---|---|"]
        for key in table.keys:
            lines.append(
                f'| <span id="{key.path}"></span>`{key.name}` | {key.type} | `{key.default}` | '
                f"{key.bounds} | {_cell(_escape(key.meaning))} |"
            )
        lines.append("")
    return "\n".join(lines)


# ----------------------------------------------------------------------- references in the docstrings

_REFERENCE = re.compile(r"``(distrl(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?``")


def broken_references(package: Path | None = None) -> list[tuple[Path, int, str]]:
    """``(file, line, name)`` for every ```distrl.x.y``` in a docstring or comment of the package that
    names no module or attribute."""
    package = package or ROOT / "distrl"
    broken = []
    for path in sorted(package.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for match in _REFERENCE.finditer(line):
                if not resolves(match.group(1)):
                    broken.append((path, number, match.group(1)))
    return broken


def resolves(name: str) -> bool:
    """Whether a dotted name is a module, or an attribute of one (``distrl.sim.suites.drawn_task``)."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        module_name = ".".join(parts[:split])
        try:
            obj: object = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                continue  # no such module: try a shorter prefix
            return True  # a module that does not import is for its own tests to report
        except Exception:
            return True
        try:
            for attribute in parts[split:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return False
        return True
    return False


# --------------------------------------------------------------------------------------- the MkDocs hook

GENERATED = {CLI_PAGE: cli_page, INVENTORY_PAGE: inventory_page}


def stale_pages() -> list[str]:
    """The generated pages whose file in docs/ is not what the code gives now (missing included)."""
    stale = []
    for uri, make in GENERATED.items():
        path = DOCS / uri
        if not path.is_file() or path.read_text(encoding="utf-8") != make():
            stale.append(uri)
    return stale


def write_pages() -> list[str]:
    """Write every generated page into docs/; those that changed."""
    changed = stale_pages()
    for uri in changed:
        (DOCS / uri).write_text(GENERATED[uri](), encoding="utf-8")
    return changed


def on_files(files: Any, config: Any) -> Any:
    """Check the generated pages and the docstrings' references; add the benchmarks' figures."""
    from mkdocs.structure.files import File

    for uri in stale_pages():
        log.warning("docs/%s is not what the code gives now: run python tools/docs_reference.py", uri)
    for figure in sorted((ROOT / "benchmarks" / "figures").glob("*.png")):
        files.append(File.generated(config, f"figures/{figure.name}", abs_src_path=str(figure)))
    for path, number, name in broken_references():
        log.warning(
            "%s:%d: the docstring names %s, which does not exist", path.relative_to(ROOT), number, name
        )
    return files


# ---------------------------------------------------------------------------------------------- helpers


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table: one line, no bare pipes."""
    return _one_line(text).replace("|", "\\|")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escape(text: str) -> str:
    """reST's ``literal`` as Markdown's `literal`; ``<`` and ``>`` outside literals kept as text."""
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;").replace(">", "&gt;") for p in parts)


if __name__ == "__main__":
    written = write_pages()
    print(
        f"wrote {', '.join('docs/' + uri for uri in written)}"
        if written
        else "the generated pages are up to date"
    )
