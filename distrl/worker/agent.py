"""The worker agent's protocol on one frame stream: ``serve``.

1. receive the learner's ``Hello`` (within ``handshake_s``), check the protocol version;
2. answer with its own ``Hello``: the devices it drives and what it runs on;
3. serve, each message in its own task so that a slow one never holds up a heartbeat:
   - ``Heartbeat``: echoed;
   - ``Setup``: the policy, screen, sim and timeout settings. The worker opens its devices, each by
     its kind as the hello's device settings say (``distrl.device.host``: adb devices and the
     emulators it launches built in, any other kind, such as the simulated phones, loaded from
     ``distrl.device.registry`` only when the host has some), and loads its policy replica
     (``inference.py``), then acks; a bad setting or an unloadable model is an ``ErrorReport``. With
     ``model = "expert"`` there is no model: the device's own expert chooses each step (devices whose
     kind has one, ``ExpertDevice``: the simulated phones);
   - ``Weights``: a full snapshot or a diff against the version held, applied by the replica between
     inference batches, then acked with the new version. A diff that does not apply changes nothing and
     is answered with its ``WeightsError``: the learner then sends a full snapshot;
   - ``EpisodeRequest``: one episode on that device. Reset to the task, then observe → ask the
     batched policy → act, until a STATUS action or the task's step limit. Every step goes back as a
     ``StepReport`` the moment it is taken, tagged with the policy version that chose it, and an
     ``EpisodeEnd`` at the end (the trajectory without its steps, which the learner already has), with
     the task's score where this worker can give it: by the evaluator the task names, loaded from
     ``distrl.tasks.registry`` the first time a task names it (the judge scores on the learner).
     A device that fails ends the episode with ``end_reason = device_error`` and the steps taken so
     far; the next episode resets it;
   - ``Shutdown``: acked, then the worker exits.

A worker that hears nothing from the learner for ``silence_s`` (the learner's
``timeouts.heartbeat_timeout_s``) exits with status 3, from the handshake on (the learner sends
heartbeats): its machine may have vanished without the connection closing. A malformed frame from the
learner, at any point, is one log line and exit status 2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from distrl import __version__
from distrl.build import build_id
from distrl.config import EXPERT, Devices, WorkerSettings, parse_devices, parse_worker_settings
from distrl.errors import (
    ConfigError,
    DeviceError,
    DistrlError,
    ProtocolMismatch,
    WireError,
    error_from_wire,
    error_to_wire,
)
from distrl.records import Action, InvalidAction, Observation, Step, Task, Trajectory
from distrl.wire import (
    PROTOCOL_VERSION,
    Ack,
    EpisodeEnd,
    EpisodeRequest,
    ErrorReport,
    FrameStream,
    Heartbeat,
    Hello,
    Message,
    Setup,
    Shutdown,
    StepReport,
    Weights,
)
from distrl.worker.inference import Replica, expert_step, import_heavy

if TYPE_CHECKING:
    from distrl.device.host import HostDevices
    from distrl.device.protocol import Device
    from distrl.tasks.registry import Evaluator

log = logging.getLogger(__name__)


async def serve(
    stream: FrameStream,
    *,
    host: str,
    handshake_s: float = 60.0,
    silence_s: float = 60.0,
    bytes_heard: Callable[[], float] = lambda: 0.0,
) -> int:
    """Run the worker protocol on ``stream`` until shutdown or end of input; returns an exit status: 0, 2
    for a malformed frame or a protocol mismatch, 3 when the learner went silent for ``silence_s``
    (``timeouts.heartbeat_timeout_s`` once ``Setup`` has said). ``bytes_heard`` says when bytes last
    came from the learner (``time.monotonic``): a big frame still arriving is no silence."""
    with anyio.fail_after(handshake_s):
        first = await stream.receive()
    if not isinstance(first, Hello) or first.role != "learner":
        await stream.send(ErrorReport(ref=first.id, error=WireError("expected the learner's hello first")))
        return 2
    if first.protocol != PROTOCOL_VERSION:
        mismatch = ProtocolMismatch(
            f"learner speaks protocol {first.protocol}, this worker {PROTOCOL_VERSION}",
            ours=PROTOCOL_VERSION,
            theirs=first.protocol,
        )
        await stream.send(ErrorReport(ref=first.id, error=mismatch))
        return 2
    try:
        devices = _host_devices(first, host)
        not_working = await devices.check()
    except (ConfigError, DeviceError) as exc:
        log.error("worker %s: %s", host, exc)
        await stream.send(ErrorReport(ref=first.id, error=_on_host(exc, host)))
        return 2
    await stream.send(
        Hello(
            id=first.id,
            role="worker",
            protocol=PROTOCOL_VERSION,
            distrl_version=__version__,
            host=host,
            devices=first.devices,
            compute={
                "cpus": os.cpu_count() or 1,
                "python": platform.python_version(),
                "platform": platform.platform(terse=True),
                "pid": os.getpid(),
                "build": build_id(),
                "devices_not_ready": "; ".join(f"{name}: {why}" for name, why in not_working.items()),
                "devices_working": len(first.devices) - len(not_working),
            },
        )
    )
    log.info("worker %s: serving %d device(s)", host, len(first.devices))
    agent = _Agent(stream, host, first.devices, silence_s, devices, bytes_heard)
    try:
        async with anyio.create_task_group() as tg:
            status = await agent.serve(tg)
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await agent.aclose()
    return status


class _Agent:
    """The worker's state: its devices, its policy replica and the episodes running."""

    def __init__(
        self,
        stream: FrameStream,
        host: str,
        devices: Sequence[str],
        silence_s: float,
        host_devices: HostDevices,
        bytes_heard: Callable[[], float],
    ) -> None:
        self.stream = stream
        self.bytes_heard = bytes_heard
        self.host_devices = host_devices
        """The host's devices of every kind, as its settings name them, to be opened at ``Setup``."""
        self.silence_s = silence_s
        """How long the learner may be silent before ``Setup`` gives its ``heartbeat_timeout_s``."""
        self.host = host
        self.names = tuple(devices)
        self.settings: WorkerSettings | None = None
        self.devices: dict[str, Device] = {}
        self.running: dict[str, tuple[anyio.CancelScope, anyio.Event]] = {}
        """The episode playing on each device: its cancel scope, and an event set when it has stopped."""
        self.replica: Replica | None = None
        """The policy replica; None for the expert."""
        self.evaluators: dict[str, Evaluator | None] = {}
        """The evaluators the tasks have named so far, loaded once each; None where this worker does
        not score (the judge's, or a name it does not know)."""
        self.ready = anyio.Event()
        self.heard = time.monotonic()

    async def serve(self, tg: TaskGroup) -> int:
        with anyio.CancelScope() as scope:
            tg.start_soon(self._watchdog, scope)
            return await self._serve(tg)
        log.error("worker %s: nothing from the learner for too long; exiting", self.host)
        return 3

    async def _watchdog(self, scope: anyio.CancelScope) -> None:
        """From the handshake on, leave when the learner has been silent past ``silence_s`` (once set up,
        ``heartbeat_timeout_s``): its machine may be gone without the connection ever closing (nothing
        would tell sshd), or it may hold the link open and say nothing."""
        while True:
            await anyio.sleep(min(1.0, self.silence_s / 4))
            limit = self.silence_s if self.settings is None else self.settings.timeouts.heartbeat_timeout_s
            if time.monotonic() - max(self.heard, self.bytes_heard()) > limit:
                scope.cancel()
                return

    async def _serve(self, tg: TaskGroup) -> int:
        try:
            return await self._route(tg)
        except WireError as exc:  # e.g. a learner that died in the middle of a frame
            log.error("worker %s: bad frame from the learner: %s", self.host, exc)
            return 2

    async def _route(self, tg: TaskGroup) -> int:
        async for message in self.stream:
            self.heard = time.monotonic()
            match message:
                case Shutdown():
                    log.info("worker %s: shutting down (%s)", self.host, message.reason)
                    await self.stream.send(Ack(ref=message.id, ok=True))
                    return 0
                case Heartbeat():
                    await self.stream.send(
                        Heartbeat(id=message.id, seq=message.seq, sent_at_s=message.sent_at_s)
                    )
                case Setup():
                    tg.start_soon(self._guarded, message, self._setup(message, tg))
                case Weights():
                    tg.start_soon(self._guarded, message, self._weights(message))
                case EpisodeRequest():
                    tg.start_soon(self._guarded, message, self._episode(message))
                case _:
                    problem = f"a worker does not serve {type(message).__name__} messages"
                    await self.stream.send(ErrorReport(ref=message.id, error=DistrlError(problem)))
        log.info("worker %s: the learner closed the link; exiting", self.host)
        return 0

    async def _guarded(self, message: Message, work: Any) -> None:
        """Run ``work``; any error becomes an ``ErrorReport`` on ``message``, and the worker goes on."""
        try:
            await work
        except Exception as exc:  # one request fails, never the worker
            error = exc if isinstance(exc, DistrlError) else DistrlError(f"{type(exc).__name__}: {exc}")
            log.warning("worker %s: %s failed: %s", self.host, type(message).__name__, error)
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self.stream.send(ErrorReport(ref=message.id, error=error))

    async def _setup(self, message: Setup, tg: TaskGroup) -> None:
        if self.settings is not None:
            raise DistrlError("this worker is already set up")
        settings = parse_worker_settings(message.settings)
        started = time.perf_counter()
        expert = settings.policy.model == EXPERT
        if expert and (adb := self.host_devices.attached + self.host_devices.launched):
            raise DistrlError(
                f"the expert policy plays simulated phones only, and {', '.join(adb)} are adb devices"
            )
        # the emulators it launches boot while the policy loads (their first resets wait for them)
        devices = await self.host_devices.open(settings, tg)
        self.devices.update(devices)
        if expert:
            from distrl.device.protocol import ExpertDevice

            if others := [name for name, device in devices.items() if not isinstance(device, ExpertDevice)]:
                raise DistrlError(
                    f"the expert policy plays devices with an expert only, and {', '.join(others)} have none"
                )
        # importing torch and transformers takes seconds: in a thread, so heartbeats go on
        await anyio.to_thread.run_sync(import_heavy, expert)
        if not expert:
            self.replica = await Replica.start(settings, self.host, tg)
        self.heard = time.monotonic()
        self.settings = settings
        self.ready.set()
        runs_on = "cpu" if self.replica is None else str(self.replica.policy.device)
        log.info(
            "worker %s: %d device(s) and the policy (%s on %s) ready in %.1f s",
            self.host,
            len(self.devices),
            settings.policy.model,
            runs_on,
            time.perf_counter() - started,
        )
        await self.stream.send(Ack(ref=message.id, ok=True, detail=runs_on))
        self.heard = time.monotonic()  # the silence that counts starts now, not while loading

    def _require_setup(self, message: Message) -> None:
        if not self.ready.is_set():
            raise DistrlError(
                f"this worker cannot serve {type(message).__name__} before its Setup has been acked"
            )

    async def _weights(self, message: Weights) -> None:
        self._require_setup(message)
        if self.replica is None:
            raise DistrlError("this worker plays the expert policy, which has no weights")
        version = await self.replica.apply(message)
        await self.stream.send(Ack(ref=message.id, ok=True, detail=f"v{version}"))

    async def _episode(self, request: EpisodeRequest) -> None:
        self._require_setup(request)
        device = self.devices.get(request.device)
        if device is None:
            raise DistrlError(
                f"this worker has no device {request.device!r} (it has {', '.join(self.names)})"
            )
        earlier = self.running.get(request.device)
        if earlier is not None:
            # the learner gave up on that episode (its timeout): stop it, then play this one
            earlier[0].cancel()
            await earlier[1].wait()
        done = anyio.Event()
        with anyio.CancelScope() as scope:
            self.running[request.device] = (scope, done)
            try:
                trajectory = await self._play(device, request)
            finally:
                del self.running[request.device]
                done.set()
        if scope.cancelled_caught:
            log.info("worker %s: episode %s on %s abandoned", self.host, request.episode_id, request.device)
            return
        # its steps went as StepReports: each screen crosses the wire once
        ending = dataclasses.replace(trajectory, steps=())
        await self.stream.send(EpisodeEnd(trajectory=ending, steps=len(trajectory.steps)))

    async def _play(self, device: Device, request: EpisodeRequest) -> Trajectory:
        """One episode of ``request.task`` on ``device``, each step reported as it is taken."""
        from distrl.device.episode import play_episode

        assert self.settings is not None  # _episode checked the setup
        task = request.task

        async def report(step: Step) -> None:
            await self.stream.send(StepReport(episode_id=request.episode_id, step=step))

        async def choose(
            observation: Observation, history: Sequence[Action | InvalidAction], index: int
        ) -> Step:
            return await self._choose(device, task, observation, history, index, request.temperature)

        trajectory = await play_episode(
            device,
            task,
            choose,
            episode_id=request.episode_id,
            host=self.host,
            step_timeout_s=self.settings.timeouts.policy_step_s,
            on_step=report,
            score=self._score,
            keep_final=task.evaluator == "judge",  # the judge sees the screen the episode ended on
        )
        if self.replica is None:
            return trajectory
        return dataclasses.replace(
            trajectory, temperature=self.replica.policy.temperature_for(request.temperature)
        )

    async def _choose(
        self,
        device: Device,
        task: Task,
        observation: Observation,
        history: Sequence[Action | InvalidAction],
        index: int,
        temperature: float | None,
    ) -> Step:
        """The policy's step on ``observation``: the batched model's sample (at ``temperature``, None for
        the settings'), or the expert's action."""
        if self.replica is None:
            return expert_step(device, task, observation, index)
        return await self.replica.choose(task, observation, history, index, temperature)

    async def _score(self, task: Task, device: Device) -> bool | None:
        """The episode's score where this worker can give it, by the evaluator the task names as
        registered (``distrl.tasks.registry``; loaded the first time, in a thread): the ``adb``
        evaluator's checks, or the sim's state (None where the device reports none). The ``judge``'s
        episodes are scored on the learner; others go unscored here."""
        name = task.evaluator
        if name not in self.evaluators:
            self.evaluators[name] = await anyio.to_thread.run_sync(_evaluator, name)
        scorer = self.evaluators[name]
        return None if scorer is None else await scorer(task, device)

    async def aclose(self) -> None:
        for device in self.devices.values():
            with contextlib.suppress(Exception):
                await device.aclose()


def _host_devices(hello: Hello, host: str) -> HostDevices:
    """The host's devices as the learner's hello names and sets them (``ConfigError`` when its settings
    are bad, or name no such device)."""
    from distrl.device.host import HostDevices

    settings = parse_devices(hello.device_settings) if hello.device_settings else Devices()
    run_folder = Path(hello.run_folder) if hello.run_folder else None
    return HostDevices(hello.devices, settings, host=host, run_folder=run_folder)


def _on_host(exc: DistrlError, host: str) -> DistrlError:
    """``exc``, of its own type, with the host named first, as the learner shows it."""
    if str(exc).startswith(f"host {host!r}"):
        return exc
    return error_from_wire({**error_to_wire(exc), "message": f"host {host!r}: {exc}"})


def _evaluator(name: str) -> Evaluator | None:
    """The evaluator called ``name`` (imported now), or None where a worker does not score: the judge's,
    and names that are not registered here."""
    from distrl.tasks.registry import evaluator, evaluator_names

    if name == "judge" or name not in evaluator_names():
        return None
    return evaluator(name)
