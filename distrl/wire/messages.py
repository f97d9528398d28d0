"""The learner–worker protocol's messages: one frozen dataclass each, and their wire names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from distrl.errors import DistrlError
from distrl.records import ParamValue, Step, Task, Trajectory

Role: TypeAlias = Literal["learner", "worker"]
WeightsKind: TypeAlias = Literal["full", "diff"]


# -- messages ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Hello:
    """The first message each way: who speaks, in which versions, with which devices and compute."""

    role: Role
    protocol: int
    """The sender's ``PROTOCOL_VERSION``."""
    distrl_version: str
    host: str
    """Inventory name of the sending host."""
    devices: tuple[str, ...]
    """Serials or sim names of the devices a worker drives; empty for the learner."""
    compute: Mapping[str, ParamValue]
    """What the sender can run, e.g. ``{"gpu": "H100", "gpu_memory_bytes": 85899345920}``."""
    device_settings: str = ""
    """The learner's: the host's ``[hosts.devices]`` table as JSON (``config.devices_json``), so that the
    worker launches and checks its devices before ``Setup``; empty from a worker."""
    run_folder: str = ""
    """The learner's, to a worker on its own machine (a local host): the run's folder, where the worker's
    emulators write their logs; empty otherwise (they go to the user's state directory there)."""
    id: int = 0

    def __post_init__(self) -> None:
        if self.role not in ("learner", "worker"):
            raise ValueError(f"role must be 'learner' or 'worker', not {self.role!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Heartbeat:
    """Sent both ways on a timer; a link that stays quiet past its timeout is lost."""

    seq: int
    """Counts up from 0 on each side of a link."""
    sent_at_s: float
    """Sender's wall clock, seconds since the epoch."""
    id: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class Weights:
    """Adapter weights at ``version``: whole (``full``) or what changed since ``base_version`` (``diff``)."""

    version: int
    base_version: int | None
    """The version a ``diff`` applies to; None for ``full``."""
    kind: WeightsKind
    checksum: str
    """Checksum of the adapter weights at ``version`` (hex), to verify after applying."""
    blob: bytes = field(repr=False)
    """A safetensors payload; an attachment on the wire."""
    id: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("full", "diff"):
            raise ValueError(f"kind must be 'full' or 'diff', not {self.kind!r}")
        if (self.kind == "diff") != (self.base_version is not None):
            raise ValueError("a 'diff' needs a base_version and 'full' weights have none")


@dataclass(frozen=True, kw_only=True, slots=True)
class EpisodeRequest:
    """Learner to worker: run ``task`` on ``device`` with the weights it holds (each step says which)."""

    episode_id: str
    device: str
    task: Task
    temperature: float | None = None
    """The temperature the policy answers this episode's steps at (0: greedy); None for the worker's
    ``[policy] temperature``."""
    id: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class StepReport:
    """Worker to learner: one step of an episode, as soon as it has happened."""

    episode_id: str
    step: Step
    id: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class TrajectoryReport:
    """A finished episode, whole, in one frame. Workers stream their episodes as ``StepReport``s and an
    ``EpisodeEnd`` instead, so that each screen crosses the wire once; the learner keeps trajectories
    (replay checkpoints, batches between ranks) in ``distrl.records.forms.pack_trajectory``'s form."""

    trajectory: Trajectory
    id: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class EpisodeEnd:
    """Worker to learner: an episode is over. ``trajectory`` is its record without the steps, which went
    before as ``StepReport``s (``steps`` of them, indices 0 to steps - 1): the learner puts them back."""

    trajectory: Trajectory
    steps: int
    id: int = 0

    def __post_init__(self) -> None:
        if self.trajectory.steps:
            raise ValueError("an EpisodeEnd carries no steps: they were streamed as StepReports")
        if self.steps < 0:
            raise ValueError(f"steps must be ≥ 0, got {self.steps}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Ack:
    """The message with id ``ref`` was handled (``ok``) or refused (``detail`` says why)."""

    ref: int
    ok: bool
    detail: str = ""
    id: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorReport:
    """The message with id ``ref`` (0: none in particular) failed with ``error``.

    Equal when the errors have the same class, message and fields, since exceptions themselves
    compare by identity.
    """

    ref: int
    error: DistrlError
    id: int = 0

    def _key(self) -> tuple[object, ...]:
        return (self.id, self.ref, type(self.error), self.error.message, self.error.field_values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ErrorReport):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.id, self.ref, type(self.error), self.error.message))


@dataclass(frozen=True, kw_only=True, slots=True)
class Setup:
    """Learner to worker, after the hello: what to run, as a JSON document the worker checks itself.

    ``settings`` holds the inventory's ``policy``, ``sim`` and ``timeouts`` sections and the run's seed
    (``distrl.config.worker_settings_json``). The worker answers with an ``Ack`` once its devices and its
    policy replica are up, or an ``ErrorReport`` naming what is wrong."""

    settings: str
    id: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class Shutdown:
    """The sender is closing the link on purpose."""

    reason: str
    id: int = 0


Message: TypeAlias = (
    Hello
    | Heartbeat
    | Weights
    | EpisodeRequest
    | StepReport
    | TrajectoryReport
    | EpisodeEnd
    | Ack
    | ErrorReport
    | Setup
    | Shutdown
)

TYPE_NAMES: dict[type, str] = {
    Hello: "hello",
    Heartbeat: "heartbeat",
    Weights: "weights",
    EpisodeRequest: "episode_request",
    StepReport: "step_report",
    TrajectoryReport: "trajectory_report",
    EpisodeEnd: "episode_end",
    Ack: "ack",
    ErrorReport: "error_report",
    Setup: "setup",
    Shutdown: "shutdown",
}
