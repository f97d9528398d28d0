"""Emulators a worker launches itself: ``[hosts.devices] avd = "NAME", count = N``.

``distrl.device.sdk.preflight`` checks first what can be known before anything starts.

``Launcher`` runs the host's emulators for the worker's lifetime:

1. The reset snapshot first. Read-only instances cannot save one, so when the AVD has none of that name
   (``<avd>/snapshots/<name>``), one writable instance boots cold, saves it through the console
   (``avd snapshot save``) and is stopped: once per AVD, ever.
2. Instance k runs ``emulator -avd NAME -port <first_port + 2k> -read-only -no-snapshot-save -snapshot
   NAME [-memory M] [-cores C] <emulator_flags>``: ``-read-only`` lets every instance share the one
   AVD. Each runs in its own process group, its output in ``emulators/emulator-<port>.log`` of the run's
   folder where the worker shares the learner's machine, else of the user's state directory
   (``$XDG_STATE_HOME/distrl``, by default ``~/.local/state/distrl``). It is booted when adb lists it,
   ``sys.boot_completed`` is 1 and the package manager answers (``AdbDevice.booted``).
3. An instance whose process exits, or whose reset fails (it stopped answering), is stopped and launched
   again after a backoff (1, 2, 4 … 60 s). After ``max_relaunches`` launches in a row that fail (no
   boot within ``device_boot_s``, or a failure before its next good reset) it is given up: its
   device's resets raise ``DeviceOffline``, and the learner rests and retires it.
4. ``aclose`` stops them all: SIGTERM to each process group, SIGKILL to what is left after
   ``STOP_GRACE_S``. On Linux every emulator also gets SIGKILL when the worker dies without a word
   (``PR_SET_PDEATHSIG``): a killed worker leaves no emulator behind.

``LaunchedEmulator`` is the ``Device`` of one instance: an ``AdbDevice`` whose reset first waits for the
instance to be booted, and which relaunches it, rather than ``adb reboot``, when a reset fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from distrl.config import Devices, Timeouts
from distrl.device.adb import TOKEN_FILE, AdbDevice
from distrl.device.console import ConsoleError, EmulatorConsole, read_token
from distrl.device.protocol import CommandOutput
from distrl.device.sdk import avd_folder, preflight
from distrl.errors import DeviceError, DeviceOffline, EmulatorError
from distrl.records import Action, Observation, Task

__all__ = ["LaunchedEmulator", "Launcher", "state_folder"]

log = logging.getLogger(__name__)

LOG_FOLDER = "emulators"
"""Where the emulators' output goes, in the run's folder or the user's state directory (``state_folder``)."""
BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 60.0)
"""Waits before the first, second … relaunch in a row (the last repeats)."""
BOOT_POLL_S = 0.5
"""How often a booting emulator is asked whether it is up (adb has no event for it)."""
STOP_GRACE_S = 5.0
"""How long an emulator has to exit after SIGTERM before its process group is killed."""
LOG_LINES = 12
"""Lines of an emulator's output quoted when it fails."""


def state_folder(env: Mapping[str, str]) -> Path:
    """distrl's folder in the user's state directory: ``$XDG_STATE_HOME/distrl``, by default
    ``~/.local/state/distrl`` (the XDG Base Directory specification), ``env`` the environment."""
    state = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):  # unset, empty or relative: the specification says to ignore it
        state = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(state) / "distrl"


# -- one instance --------------------------------------------------------------------------------------


class _Instance:
    """One emulator process and what its supervisor knows of it."""

    def __init__(self, port: int, log_file: Path) -> None:
        self.port = port
        self.serial = f"emulator-{port}"
        self.log_file = log_file
        self.process: subprocess.Popen[bytes] | None = None
        self.up = anyio.Event()
        """Set while booted (or given up); replaced by an unset one when it goes down."""
        self.down = anyio.Event()
        """Set when it should be relaunched (a reset failed); replaced at each launch."""
        self.given_up = ""
        """Why it was given up; empty while it is kept running."""
        self.failures = 0
        """Launches in a row that failed; back to 0 after a good reset."""
        self._log_from = 0
        self.launches = 0

    def start(self, command: list[str], env: Mapping[str, str]) -> None:
        """Start the process (in the event loop's thread: the parent-death signal follows that thread);
        ``EmulatorError`` when its ports are taken (another emulator?) or it cannot be started."""
        for port in (self.port, self.port + 1):
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the emulator binds it
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    raise EmulatorError(
                        f"{self.serial}: port {port} is in use (an emulator distrl did not launch?);"
                        " choose another first_port"
                    ) from None
        try:
            self._start(command, env)
        except OSError as exc:
            raise EmulatorError(f"{self.serial}: cannot start {command[0]}: {exc}") from exc

    def _start(self, command: list[str], env: Mapping[str, str]) -> None:
        global _prctl
        if sys.platform == "linux" and _prctl is None:
            _prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as out:
            self._log_from = out.tell()  # this launch's output starts here
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env),
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        self.launches += 1
        self.down = anyio.Event()

    def go_down(self) -> None:
        """No longer booted, and to be relaunched: later resets wait for the next boot."""
        if self.up.is_set() and not self.given_up:
            self.up = anyio.Event()
        self.down.set()

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def tail(self) -> str:
        """The last lines of this launch's output, for errors."""
        with contextlib.suppress(OSError):
            with open(self.log_file, "rb") as file:
                file.seek(self._log_from)
                lines = deque(file, maxlen=LOG_LINES)
            return " | ".join(line.decode("utf-8", "replace").strip() for line in lines if line.strip())
        return ""

    async def wait(self, limiter: anyio.CapacityLimiter) -> int:
        """Until the process exits; its exit status."""
        process = self.process
        assert process is not None
        return await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True, limiter=limiter)

    async def stop(self, limiter: anyio.CapacityLimiter) -> None:
        """SIGTERM to its process group, SIGKILL to what is left after ``STOP_GRACE_S``."""
        if self.process is None:
            return
        with anyio.CancelScope(shield=True):
            _signal_group(self.process.pid, signal.SIGTERM)
            with anyio.move_on_after(STOP_GRACE_S):
                await self.wait(limiter)
            _signal_group(self.process.pid, signal.SIGKILL)  # the group's stragglers, the leader too
            await self.wait(limiter)
        self.process = None


_prctl: Any = None
"""libc's ``prctl``, looked up in the worker before the first fork."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """In the child: SIGKILL when the worker dies (Linux ``prctl(PR_SET_PDEATHSIG)``)."""
    _prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


# -- the launcher --------------------------------------------------------------------------------------


class Launcher:
    """Launches, watches, relaunches and stops one host's emulators of ``devices.avd``."""

    def __init__(
        self,
        devices: Devices,
        timeouts: Timeouts,
        *,
        host: str = "local",
        env: Mapping[str, str] | None = None,
        run_folder: Path | None = None,
        device_options: Mapping[str, Any] | None = None,
        binary: Path | None = None,
    ) -> None:
        """``run_folder``: the run's, when it is on this machine: the emulators' logs go to its
        ``emulators/``, else to that of the user's state directory (``state_folder``). ``binary``: the
        ``emulator`` program when ``preflight`` has just found it (the worker's checks at the hello), so that
        ``run`` does not check again."""
        if not devices.avd:
            raise ValueError("no AVD to launch")
        self.devices = devices
        self.timeouts = timeouts
        self.host = host
        self.env = dict(os.environ if env is None else env)
        folder = (run_folder or state_folder(self.env)) / LOG_FOLDER
        self.instances = {
            serial: _Instance(int(serial.removeprefix("emulator-")), folder / f"{serial}.log")
            for serial in devices.launched
        }
        self.emulators = {
            serial: LaunchedEmulator(
                AdbDevice(
                    serial,
                    timeouts=timeouts,
                    host=host,
                    snapshot=devices.snapshot,
                    reboot=False,
                    **(device_options or {}),
                ),
                instance,
                self,
            )
            for serial, instance in self.instances.items()
        }
        """The ``Device`` of each instance, by serial."""
        self._binary = binary
        self._token_file = os.path.expanduser(TOKEN_FILE)
        self._waits = anyio.CapacityLimiter(3 * len(self.instances) + 1)
        """Threads that wait for emulator processes (one per instance, two more while stopping it)."""

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run every emulator until cancelled; ready at once (devices wait in ``reset`` for their boot).
        Everything launched is stopped on the way out."""
        task_status.started()
        try:
            if self._binary is None:
                self._binary = await preflight(self.devices, self.env)
            await self._prepare_snapshot()
        except DeviceError as exc:
            for instance in self.instances.values():
                self._give_up(instance, str(exc))
            log.error("host %s: %s", self.host, exc)
            return
        try:
            async with anyio.create_task_group() as tg:
                for instance in self.instances.values():
                    tg.start_soon(self._keep, instance, name=f"emulator {instance.serial}")
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Stop every instance (idempotent)."""
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for instance in self.instances.values():
                    tg.start_soon(instance.stop, self._waits)

    def command(self, port: int, *, writable: bool = False) -> list[str]:
        """The emulator's command line for console ``port``; ``writable`` for the one that saves the
        snapshot (a cold boot that may write the AVD)."""
        d = self.devices
        assert self._binary is not None
        command = [str(self._binary), "-avd", d.avd, "-port", str(port)]
        if writable:  # a cold boot; the console saves the snapshot, not the exit (which may be cut short)
            command += ["-no-snapshot-load", "-no-snapshot-save"]
        else:
            command += ["-read-only", "-no-snapshot-save", "-snapshot", d.snapshot]
        if d.memory_mb:
            command += ["-memory", str(d.memory_mb)]
        if d.cores:
            command += ["-cores", str(d.cores)]
        return command + list(d.emulator_flags)

    async def _prepare_snapshot(self) -> None:
        """Save the reset snapshot from one writable cold boot, when the AVD lacks it."""
        folder = avd_folder(self.devices.avd, self.env) / "snapshots" / self.devices.snapshot
        if folder.is_dir():
            return
        instance = next(iter(self.instances.values()))
        name = self.devices.snapshot
        log.info(
            "host %s: AVD %s has no snapshot %r: booting it once to save one",
            self.host,
            self.devices.avd,
            name,
        )
        try:
            instance.start(self.command(instance.port, writable=True), self.env)
            await self._boot(instance)
            token = await read_token(self._token_file)
            with anyio.fail_after(self.timeouts.device_boot_s):
                async with EmulatorConsole.connect(instance.port, token=token) as console:
                    await console.command(f"avd snapshot save {name}")
        except (ConsoleError, OSError, TimeoutError) as exc:
            raise EmulatorError(
                f"could not save the snapshot {name!r} of AVD {self.devices.avd}: {exc}"
            ) from exc
        finally:
            await instance.stop(self._waits)
        log.info("host %s: saved snapshot %r of AVD %s", self.host, name, self.devices.avd)

    async def _keep(self, instance: _Instance) -> None:
        """Keep ``instance`` running: launch, boot, watch; relaunch after a backoff; give up past the
        budget."""
        while True:
            try:
                instance.start(self.command(instance.port), self.env)
                await self._boot(instance)
            except EmulatorError as exc:
                problem = str(exc)
            else:
                instance.up.set()
                log.info("host %s: %s booted (launch %d)", self.host, instance.serial, instance.launches)
                problem = await self._watch(instance)
                instance.go_down()
            await instance.stop(self._waits)
            instance.failures += 1
            if instance.failures > self.devices.max_relaunches:
                self._give_up(
                    instance, f"{problem}; given up after {instance.failures} failed launches in a row"
                )
                return
            wait_s = BACKOFF_S[min(instance.failures, len(BACKOFF_S)) - 1]
            log.warning("host %s: %s: %s; relaunching in %g s", self.host, instance.serial, problem, wait_s)
            await anyio.sleep(wait_s)

    async def _boot(self, instance: _Instance) -> None:
        """Until ``instance`` is booted, within ``device_boot_s``; ``EmulatorError`` when its process
        exits first or the time is up."""
        device = AdbDevice(instance.serial, timeouts=self.timeouts, host=self.host, reboot=False)
        why = "not listed by the adb server"
        with anyio.move_on_after(self.timeouts.device_boot_s):
            while True:
                status = instance.exited()
                if status is not None:
                    raise EmulatorError(
                        f"{instance.serial}: the emulator exited with status {status} while booting:"
                        f" {instance.tail()}",
                        host=self.host,
                        device=instance.serial,
                        operation="boot",
                    )
                with contextlib.suppress(DeviceError):
                    why = await device.booted(min(10.0, self.timeouts.device_boot_s))
                    if not why:
                        return
                await anyio.sleep(BOOT_POLL_S)
        raise EmulatorError(
            f"{instance.serial}: not booted within {self.timeouts.device_boot_s:g} s ({why})",
            host=self.host,
            device=instance.serial,
            operation="boot",
        )

    async def _watch(self, instance: _Instance) -> str:
        """Until the process exits or a reset asks for a relaunch; says which."""
        async with anyio.create_task_group() as tg:

            async def exits() -> None:
                await instance.wait(self._waits)
                tg.cancel_scope.cancel()

            tg.start_soon(exits)
            await instance.down.wait()
            tg.cancel_scope.cancel()
        status = instance.exited()
        if status is not None:
            return f"the emulator exited with status {status}: {instance.tail()}"
        return "it stopped answering"

    def _give_up(self, instance: _Instance, why: str) -> None:
        instance.given_up = why or "given up"
        instance.up.set()  # wake whoever waits for it: they see it was given up
        log.error("host %s: %s: %s", self.host, instance.serial, instance.given_up)


class LaunchedEmulator:
    """The ``Device`` of one launched emulator."""

    def __init__(self, adb: AdbDevice, instance: _Instance, launcher: Launcher) -> None:
        self._adb = adb
        self._instance = instance
        self._launcher = launcher

    @property
    def name(self) -> str:
        return self._adb.name

    async def reset(self, task: Task) -> Observation:
        """Wait until the emulator is booted (within ``device_boot_s``), then the ``AdbDevice`` reset; a
        reset that fails has the emulator relaunched (and raises: the next reset waits for it)."""
        instance = self._instance
        boot_s = self._launcher.timeouts.device_boot_s
        up = instance.up
        with anyio.move_on_after(boot_s):
            await up.wait()
        if instance.given_up or not up.is_set():
            why = instance.given_up or f"not booted within {boot_s:g} s"
            raise DeviceOffline(
                f"{self.name}: {why}", host=self._launcher.host, device=self.name, operation="reset"
            )
        launch = instance.launches  # a reset that outlives this launch says nothing of the next one
        try:
            observation = await self._adb.reset(task)
        except DeviceError:
            if not self._adb.failed_in_setup and instance.launches == launch:  # the emulator's fault
                instance.go_down()
            raise
        if instance.launches == launch:
            instance.failures = 0
        return observation

    async def observe(self) -> Observation:
        return await self._adb.observe()

    async def act(self, action: Action) -> None:
        await self._adb.act(action)

    async def state(self) -> dict[str, Any] | None:
        return await self._adb.state()

    async def shell(self, command: str) -> CommandOutput:
        return await self._adb.shell(command)

    async def aclose(self) -> None:
        await self._adb.aclose()
