"""One SSH host's deploy: look, push the wheel, make the virtualenv, install, mark.

Everything it writes is under the remote ``~/.distrl``:

- ``wheels/<sha256[:16]>/<wheel>``: the pushed wheel (SFTP; older ones are removed once installed);
- ``venv/``: the private virtualenv, made by ``uv venv`` where the host has uv, else
  ``<base python> -m venv``; the system Python is only ever the base it is made from;
- ``cache/``: pip's or uv's download cache;
- ``installed.json``: the marker, with the wheel's SHA-256, version and build and the settings.

A host whose marker names the same wheel and settings (and whose virtualenv's python is there) is up to
date after one round trip. Other settings get a fresh virtualenv; a new wheel alone reinstalls distrl in
the one there. After installing, the virtualenv's distrl must report this machine's ``build_id``: the
handshake would refuse anything else. Each remote step runs within ``timeouts.deploy_step_s``; a
failure is a ``DeployError`` naming the step, with the last lines of the remote stderr.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import anyio
import asyncssh

from distrl.config import HostEntry, Timeouts
from distrl.deploy.settings import DeploySettings
from distrl.deploy.wheel import Wheel
from distrl.errors import DeployError, TransportError
from distrl.transport import DEPLOYED_PYTHON, connect_ssh, remote_path

__all__ = ["Outcome", "Progress", "deploy_host"]

Progress = Callable[[str, str, str], None]
"""Called with a host's name, its stage (``connect``, ``wheel``, ``venv``, ``install``, ``done``) and a
line about it."""
TAIL_LINES = 10
"""Lines of remote stderr a failure keeps."""
_MIN_PYTHON = (3, 11)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How one host's deploy ended."""

    host: str
    status: Literal["ok", "skipped", "failed"]
    detail: str
    """One line: what was installed, why it was skipped, or why it failed."""
    elapsed_s: float
    error: DeployError | None = None


async def deploy_host(
    host: HostEntry,
    settings: DeploySettings,
    wheel: Wheel,
    timeouts: Timeouts,
    *,
    force: bool = False,
    progress: Progress = lambda host, stage, text: None,
) -> Outcome:
    """Install ``wheel`` on ``host`` (skipped when up to date, unless ``force``); ``DeployError`` when a
    step fails."""
    started = time.monotonic()
    name = host.name
    if host.python and host.python != DEPLOYED_PYTHON:
        progress(name, "connect", f"note: its python is {host.python}, which run uses, not ~/.distrl/venv")
    progress(name, "connect", f"{host.user + '@' if host.user else ''}{host.address} port {host.port}")
    with _stage(host, "connect"):
        async with connect_ssh(host, timeouts) as connection:
            steps = _Steps(connection, host, timeouts.deploy_step_s)
            home, marker = await steps.look()
            wanted = {"sha256": wheel.sha256, "settings": settings.fingerprint()}
            if not force and marker and all(marker.get(key) == value for key, value in wanted.items()):
                detail = f"up to date (distrl {marker.get('version')}, wheel {wheel.sha256[:12]})"
                return Outcome(
                    host=name, status="skipped", detail=detail, elapsed_s=time.monotonic() - started
                )
            base = await steps.base_python(settings)  # before writing anything
            progress(name, "wheel", f"pushing {wheel.path.name} ({wheel.size_bytes / 1e6:.1f} MB)")
            pushed = await steps.push(wheel, home)
            fresh = marker is None or marker.get("settings") != wanted["settings"]
            tool = f"uv at {base.uv}" if base.uv else "venv and pip"
            progress(
                name, "venv", f"{'new' if fresh else 'kept'} ~/.distrl/venv, Python {base.version} ({tool})"
            )
            await steps.venv(settings, base, fresh=fresh)
            torch = settings.torch_requirement
            progress(
                name, "install", f"{torch + ', then ' if torch else ''}{wheel.path.name} and its dependencies"
            )
            build = await steps.install(settings, base, pushed, wheel)
            marker = {
                **wanted,
                "version": wheel.version,
                "build": build,
                "wheel": wheel.path.name,
                "python": base.version,
                "installer": "uv" if base.uv else "pip",
                "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            await steps.mark(marker, wheel)
    elapsed = time.monotonic() - started
    progress(name, "done", f"distrl {wheel.version} (build {build}) in {elapsed:.1f} s")
    return Outcome(
        host=name,
        status="ok",
        detail=f"installed distrl {wheel.version} in {elapsed:.0f} s",
        elapsed_s=elapsed,
    )


@contextlib.contextmanager
def _stage(host: HostEntry, stage: str) -> Iterator[None]:
    """A ``TransportError`` (connect, login, host key) as the deploy's own error."""
    try:
        yield
    except TransportError as exc:
        raise DeployError(str(exc), host=host.name, stage=stage) from exc


@dataclass(frozen=True, kw_only=True)
class _Base:
    """The Python a virtualenv is made from, as found on the host."""

    path: str
    version: str
    uv: str
    """uv's path on the host; empty for venv and pip."""


_LOOK = """\
d="$HOME/.distrl"; echo "distrl-home $HOME"
if [ -x "$d/venv/bin/python" ] && [ -f "$d/installed.json" ]; then
  echo distrl-marker; cat "$d/installed.json"; fi
"""
_FIND_BASE = """\
base={base}; uv={uv}
command -v "$base" >/dev/null 2>&1 || {{ echo "distrl: no $base on this host; install Python 3.11 or newer, \
or name one in DISTRL_BASE_PYTHON" >&2; exit 20; }}
"$base" -c 'import sys; print("distrl-python", sys.version.split()[0], *sys.version_info[:2])' || {{
  echo "distrl: $base does not run (exit $?)" >&2; exit 21; }}
echo "distrl-base $(command -v "$base")"
if [ -z "$uv" ]; then
  uv=$(command -v uv 2>/dev/null) || for c in "$HOME/.local/bin/uv" "$HOME/.cargo/bin/uv"; do
    if [ -x "$c" ]; then uv=$c; break; fi; done
elif [ "$uv" = off ]; then uv=
elif [ ! -x "$uv" ]; then echo "distrl: DISTRL_UV names $uv, which is not an executable here" >&2; exit 22
fi
echo "distrl-uv ${{uv:-}}"
"""
_ENV = """\
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off
export PIP_CACHE_DIR="$HOME/.distrl/cache/pip"
export UV_CACHE_DIR="$HOME/.distrl/cache/uv" UV_PYTHON_DOWNLOADS=never UV_NO_PROGRESS=1
v="$HOME/.distrl/venv"; py="$v/bin/python"
"""
_VENV = """\
if [ {fresh} = 0 ] && [ -x "$py" ] && "$py" -c '' 2>/dev/null; then exit 0; fi
rm -rf "$v"
{make} || {{ echo "distrl: could not make the virtualenv $v (on Debian and Ubuntu: apt-get install \
python3-venv, or install uv)" >&2; exit 23; }}
"""
_INSTALL = """\
set -e
"$py" -I -c 'import hashlib, sys; f = open(sys.argv[1], "rb")
sys.exit(hashlib.sha256(f.read()).hexdigest() != sys.argv[2])' {wheel} {sha256} || {{
  echo "distrl: the pushed wheel is damaged (its SHA-256 differs)" >&2; exit 30; }}
{torch}
{uninstall}
{install}
"$py" -I -c 'import distrl, distrl.build; print("distrl-build", distrl.__version__, distrl.build.build_id())'
"""
_MARK = """\
d="$HOME/.distrl"; cat > "$d/installed.json.new" && mv -f "$d/installed.json.new" "$d/installed.json"
for w in "$d/wheels"/*; do [ "$w" = "$d/wheels/{keep}" ] || rm -rf "$w"; done
"""


class _Steps:
    """The remote commands of one deploy, each within ``step_s``, over one connection."""

    def __init__(self, connection: asyncssh.SSHClientConnection, host: HostEntry, step_s: float) -> None:
        self._connection = connection
        self._host = host
        self._step_s = step_s

    async def look(self) -> tuple[str, dict[str, object] | None]:
        """The remote home, and the marker there (None: none, or no virtualenv)."""
        out = await self._run("connect", _LOOK)
        home, _, marker = out.partition("distrl-marker\n")
        home_lines = [line for line in home.splitlines() if line.startswith("distrl-home /")]
        if not home_lines:
            raise self._error(
                "connect", "the remote shell printed no home folder (a POSIX login shell is needed)"
            )
        try:
            found = json.loads(marker) if marker.strip() else None
        except ValueError:
            found = None  # a damaged marker: install again
        return home_lines[-1].removeprefix("distrl-home "), found if isinstance(found, dict) else None

    async def push(self, wheel: Wheel, home: str) -> str:
        """SFTP ``wheel`` into ``~/.distrl/wheels/<sha256[:16]>/``; its remote path."""
        folder = f"{home}/.distrl/wheels/{wheel.sha256[:16]}"
        target = f"{folder}/{wheel.path.name}"
        try:
            with anyio.fail_after(self._step_s):
                async with self._connection.start_sftp_client() as sftp:
                    await sftp.makedirs(folder, exist_ok=True)
                    await sftp.put(str(wheel.path), target)
        except TimeoutError:
            raise self._error("wheel", f"pushing the wheel took longer than {self._step_s:g} s") from None
        except (OSError, asyncssh.Error) as exc:
            reason = getattr(exc, "reason", "") or str(exc) or type(exc).__name__
            raise self._error("wheel", f"cannot push the wheel by SFTP to {target}: {reason}") from exc
        return target

    async def base_python(self, settings: DeploySettings) -> _Base:
        """The base Python (3.11 or newer) and uv, as found on the host."""
        uv = "off" if settings.uv == "off" else remote_path(settings.uv) if settings.uv else "''"
        out = await self._run("venv", _FIND_BASE.format(base=remote_path(settings.base_python), uv=uv))
        fields = {
            line.split(" ", 1)[0]: line.partition(" ")[2]
            for line in out.splitlines()
            if line.startswith("distrl-")
        }
        version, major, minor = (fields.get("distrl-python", "") + "  ").split(" ")[:3]
        if not (major.isdigit() and minor.isdigit()):
            raise self._error(
                "venv", f"{settings.base_python} printed no Python version: {out.strip()[-200:]!r}"
            )
        if (int(major), int(minor)) < _MIN_PYTHON:
            raise self._error(
                "venv",
                f"{settings.base_python} is Python {version}; distrl needs 3.11 or newer: name one in "
                "DISTRL_BASE_PYTHON (the host's env table)",
            )
        return _Base(
            path=fields.get("distrl-base", settings.base_python),
            version=version,
            uv=fields.get("distrl-uv", ""),
        )

    async def venv(self, settings: DeploySettings, base: _Base, *, fresh: bool) -> None:
        """Make ``~/.distrl/venv`` (again, when ``fresh``) unless a working one is there. The marker goes
        first: a deploy that fails from here on leaves no host that says it is up to date."""
        await self._run("venv", 'rm -f "$HOME/.distrl/installed.json"')
        site = " --system-site-packages" if settings.system_site else ""
        if base.uv:
            make = f'{shlex.quote(base.uv)} venv --quiet --python {shlex.quote(base.path)}{site} "$v"'
        else:
            make = f'{shlex.quote(base.path)} -m venv{site} "$v"'
        await self._run("venv", _ENV + _VENV.format(fresh=int(fresh), make=make))

    async def install(self, settings: DeploySettings, base: _Base, pushed: str, wheel: Wheel) -> str:
        """Torch first (when asked for), then the wheel with its dependencies; the build installed."""
        install = f'{shlex.quote(base.uv)} pip install --python "$py"' if base.uv else '"$py" -m pip install'
        source = ["--no-index", "--find-links", settings.wheelhouse] if settings.wheelhouse else []
        torch = ""
        if settings.torch_requirement:
            index = (
                ["--index-url", settings.torch_index or settings.index_url]
                if settings.torch_index or settings.index_url
                else []
            )
            torch = " ".join([install, *_quoted(source or index), shlex.quote(settings.torch_requirement)])
        if base.uv:
            uninstall = ""
            install += " --reinstall-package distrl"
        else:  # the same version from another wheel: pip would keep the installed one
            uninstall = '"$py" -m pip uninstall --yes --quiet distrl >/dev/null 2>&1 || true'
        index = ["--index-url", settings.index_url] if settings.index_url else []
        install = " ".join([install, *_quoted(source or index), shlex.quote(pushed)])
        script = _INSTALL.format(
            wheel=shlex.quote(pushed), sha256=wheel.sha256, torch=torch, uninstall=uninstall, install=install
        )
        out = await self._run("install", _ENV + script)
        found = [line.split() for line in out.splitlines() if line.startswith("distrl-build ")]
        ours = wheel.build
        if not found or found[-1][1:] != [wheel.version, ours]:
            theirs = " ".join(found[-1][1:]) if found else "nothing"
            raise self._error(
                "install",
                f"the installed distrl reports {theirs}, not {wheel.version} {ours} (is a file of the "
                "package left out of the wheel?)",
            )
        return ours

    async def mark(self, marker: dict[str, object], wheel: Wheel) -> None:
        """Write the marker; remove older wheels."""
        await self._run(
            "done", _MARK.format(keep=wheel.sha256[:16]), stdin=json.dumps(marker, indent=1) + "\n"
        )

    async def _run(self, stage: str, script: str, stdin: str | None = None) -> str:
        """``script`` in the login shell; its stdout, or ``DeployError`` with the tail of its stderr."""
        with anyio.move_on_after(self._step_s) as scope:
            try:
                result = await self._connection.run(script, check=False, input=stdin)
            except (OSError, asyncssh.Error) as exc:
                reason = getattr(exc, "reason", "") or str(exc) or type(exc).__name__
                raise self._error(stage, f"the SSH connection failed: {reason}") from exc
        if scope.cancelled_caught:
            raise self._error(stage, f"took longer than {self._step_s:g} s (timeouts.deploy_step_s)")
        stdout, stderr = _text(result.stdout), _text(result.stderr)
        if result.exit_status != 0:
            lines = [line for line in stderr.splitlines() if line.strip()]
            ours = [line.removeprefix("distrl: ") for line in lines if line.startswith("distrl: ")]
            why = ours[-1] if ours else f"a remote command exited with status {result.exit_status}"
            tail = "\n".join(lines[-TAIL_LINES:])
            raise self._error(stage, why, exit_status=result.exit_status, output=tail)
        return stdout

    def _error(self, stage: str, why: str, exit_status: int | None = None, output: str = "") -> DeployError:
        return DeployError(
            f"host {self._host.name!r}: {stage}: {why}",
            host=self._host.name,
            stage=stage,
            exit_status=exit_status,
            output=output,
        )


def _quoted(words: list[str]) -> list[str]:
    """Options for the remote shell; a path's leading ``~/`` is the remote home."""
    return [remote_path(word) for word in words]


def _text(data: object) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data if isinstance(data, str) else ""
