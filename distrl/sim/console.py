"""The emulator console of a simulated phone: the telnet-style text protocol on its console port.

What ``adb emu ...`` and emulator harnesses talk to (``docs/reference/android.md``). A connection is
greeted with ``Android Console: Authentication required``, where to find the token, and ``OK``; the
client sends ``auth <token>``, the contents of the token file (default
``~/.emulator_console_auth_token``, created with a random token when missing; an empty file turns
authentication off). Every command's output ends with ``OK``, every error is one ``KO: ...`` line,
and lines end in CRLF.

Commands: ``help``, ``ping``, ``avd status``, ``avd name``, ``avd snapshot list|save|load|delete``,
``crash``, ``kill``, ``quit``/``exit``. Snapshots are ``Phone.snapshot()`` blobs in memory, and
with a ``snapshot_dir`` on disk too, one folder each as in an AVD's ``snapshots/`` (so a phone served
again finds them); ``read_only`` refuses saves and deletes, as ``emulator -read-only`` does.
``default_boot`` (the phone as it booted) is there from the start; at most ``MAX_SNAPSHOTS`` are kept
(a save past them is ``KO``, replacing one is fine). Loading one takes the latency
model's reset time and brings an ``offline`` adbd back. Only loopback clients are served.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

import anyio
from anyio.abc import Listener, SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from distrl.sim.adbd import Adbd
from distrl.sim.latency import Op

__all__ = ["Console", "DEFAULT_TOKEN_FILE", "BOOT_SNAPSHOT", "MAX_SNAPSHOTS", "read_token"]

logger = logging.getLogger(__name__)

DEFAULT_TOKEN_FILE = Path("~/.emulator_console_auth_token")
BOOT_SNAPSHOT = "default_boot"
IDLE_S = 600.0
"""A console client silent this long is disconnected, seconds."""
MAX_LINE_BYTES = 4096
SNAPSHOT_FILE = "phone.snapshot"
"""A snapshot's file in its folder, when snapshots live on disk."""
MAX_SNAPSHOTS = 32
"""Most snapshots a console keeps, ``default_boot`` included (each is a copy of the phone's state)."""

_HELP = """\
Android console commands:

    help|h|?         print a list of commands
    ping             check if the emulator is alive
    avd              control virtual device execution
    crash            crash the emulator instance
    kill             kill the emulator instance
    quit|exit        quit control session

try 'help <command>' for command-specific help"""
_AVD_HELP = """\
allows you to control (e.g. start/stop) the execution of the virtual device

available sub-commands:
    avd status       query virtual device status
    avd name         query virtual device name
    avd snapshot     state snapshot commands"""


def read_token(path: Path) -> str:
    """The console's auth token from ``path`` (created with a random token if missing; "" = no auth)."""
    path = path.expanduser()
    with contextlib.suppress(FileExistsError):
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(secrets.token_urlsafe(12) + "\n")
    return path.read_text(encoding="utf-8").strip()


class Console:
    """One phone's console. ``serve`` runs it on a listener until cancelled."""

    def __init__(
        self,
        adbd: Adbd,
        *,
        name: str,
        token_file: Path = DEFAULT_TOKEN_FILE,
        on_kill: Callable[[], None],
        snapshot_dir: Path | None = None,
        read_only: bool = False,
    ) -> None:
        self.adbd = adbd
        self.name = name
        """The AVD name (``avd name``)."""
        self.token_file = token_file.expanduser()
        self.token = read_token(self.token_file)
        self.snapshots: dict[str, bytes] = {BOOT_SNAPSHOT: adbd.phone.snapshot()}
        """Named snapshots, as ``Phone.snapshot()`` blobs."""
        self.snapshot_dir = snapshot_dir
        """Where snapshots live on disk, one folder each (an AVD's ``snapshots/``); None: memory only."""
        self.read_only = read_only
        """As an emulator started with ``-read-only``: snapshots load, but none is saved or deleted."""
        if snapshot_dir is not None:
            for blob in sorted(snapshot_dir.glob(f"*/{SNAPSHOT_FILE}")):
                self.snapshots[blob.parent.name] = blob.read_bytes()
        self._on_kill = on_kill

    async def serve(
        self,
        listener: Listener[SocketStream],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept console clients on ``listener`` until cancelled."""
        async with listener, anyio.create_task_group() as tg:
            task_status.started()
            await listener.serve(self._session, task_group=tg)

    async def _session(self, stream: SocketStream) -> None:
        async with stream:
            if not ipaddress.ip_address(stream.extra(SocketAttribute.remote_address)[0]).is_loopback:
                return
            try:
                await self._talk(stream)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                logger.debug("sim console: a client left")
            except (anyio.DelimiterNotFound, anyio.IncompleteRead, TimeoutError) as exc:
                logger.info("sim console: closing a session: %r", exc)

    async def _talk(self, stream: SocketStream) -> None:
        reader = BufferedByteReceiveStream(stream)

        async def say(*texts: str) -> None:
            await stream.send("".join(f"{line}\r\n" for text in texts for line in text.split("\n")).encode())

        authenticated = not self.token
        if authenticated:
            await say("Android Console: type 'help' for a list of commands", "OK")
        else:
            await say(
                "Android Console: Authentication required",
                "Android Console: type 'auth <auth_token>' to authenticate",
                "Android Console: you can find your <auth_token> in ",
                f"'{self.token_file}'",
                "OK",
            )
        while True:
            with anyio.fail_after(IDLE_S):
                line = await reader.receive_until(b"\n", MAX_LINE_BYTES)
            words = line.decode("utf-8", "replace").strip().split()
            if not words:
                continue
            if words[0] in ("quit", "exit"):
                return
            if words[0] == "auth":
                authenticated = authenticated or words[1:] == [self.token]
                if not authenticated:
                    await say(f"KO: authentication token does not match {self.token_file}")
                    continue
                await say("Android Console: type 'help' for a list of commands", "OK")
            elif words[0] in ("help", "h", "?") or authenticated:
                reply = await self._command(words)
                await say(*reply)
                if words == ["kill"]:
                    self._on_kill()
                    return
            else:
                await say("KO: unknown command, try 'help'")

    async def _command(self, words: list[str]) -> list[str]:
        """The reply lines to one command (ending in ``OK`` or a single ``KO:`` line)."""
        match words:
            case ["help" | "h" | "?"]:
                return [_HELP, "OK"]
            case ["help" | "h" | "?", "avd", *_]:
                return [_AVD_HELP, "OK"]
            case ["ping"]:
                return ["I am alive!", "OK"]
            case ["avd", "status"]:
                running = "running" if self.adbd.state == "up" else "stopped"
                return [f"virtual device is {running}", "OK"]
            case ["avd", "name"]:
                return [self.name, "OK"]
            case ["avd", "snapshot", *rest]:
                return await self._snapshot(rest)
            case ["crash"]:
                self.adbd.crash()
                return ["OK"]
            case ["kill"]:
                return ["OK: killing emulator, bye bye"]
        return ["KO: unknown command, try 'help'"]

    async def _snapshot(self, words: list[str]) -> list[str]:
        phone = self.adbd.phone
        match words:
            case ["list"]:
                rows = [f"{tag:<20} {len(blob) // 1024:>6}K" for tag, blob in sorted(self.snapshots.items())]
                return ["List of snapshots present on all disks:", "TAG                    SIZE", *rows, "OK"]
            case ["save" | "delete", _] if self.read_only:
                return ["KO: this emulator is read-only (-read-only): snapshots cannot be changed"]
            case ["save", name] if name not in self.snapshots and len(self.snapshots) >= MAX_SNAPSHOTS:
                return [f"KO: too many snapshots (at most {MAX_SNAPSHOTS}); delete one first"]
            case ["save", name]:
                blob = await self.adbd.call(phone.snapshot)
                if self.snapshot_dir is not None:
                    folder = self.snapshot_dir / name
                    await anyio.to_thread.run_sync(lambda: _write(folder / SNAPSHOT_FILE, blob))
                self.snapshots[name] = blob
                return ["OK"]
            case ["load", name] if name in self.snapshots:
                blob = self.snapshots[name]
                await anyio.sleep(self.adbd.latency.wall(Op.RESET) if self.adbd.latency else 0.0)
                await self.adbd.call(lambda: phone.restore(blob))
                self.adbd.recover()
                return ["OK"]
            case ["delete", name] if name in self.snapshots:
                del self.snapshots[name]
                if self.snapshot_dir is not None:
                    shutil.rmtree(self.snapshot_dir / name, ignore_errors=True)
                return ["OK"]
            case ["load" | "delete", name]:
                return [f"KO: snapshot '{name}' does not exist"]
        return [
            "KO: bad sub-command, try 'help avd snapshot' (list, save <name>, load <name>, delete <name>)"
        ]


def _write(path: Path, blob: bytes) -> None:
    """``blob`` into ``path`` whole or not at all (an emulator killed mid-save leaves no half snapshot)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_bytes(blob)
    partial.replace(path)
