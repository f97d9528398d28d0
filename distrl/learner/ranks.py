"""``[learner] ranks``: the learner as several processes that train every update together (data
parallelism on ``torch.distributed``).

Rank 0 is the ``Learner`` the run holds: the fleet loop, the replay buffer, the checkpoints and the
publisher stay with it. The other ranks only train. Rank 0 starts them as its child processes
(``distrl.learner.rank_processes``), or ``torchrun`` starts them
all, on one machine or several (``distrl run`` then serves as a rank where ``RANK`` is not 0).

One update, on every rank:

1. Rank 0 draws the batch from its buffer and broadcasts it: a header (what to do, the sizes, its update
   count), the trajectories packed in the records' own form (``distrl.records.forms.pack_trajectory``:
   JSON and screens, no pickle crosses between ranks) and their importance-sampling weights.
2. Each rank scores its contiguous share of the batch's steps; the scores are all-gathered, so every rank
   holds the whole ``Batch`` and makes the same plan (Retrace, advantages, priorities).
3. The critics' gradients (the same loss on every rank) are averaged. Each rank takes the actor's loss
   over its share of the trained steps (its part of the mean over all of them); the gradients are summed
   in one flat all-reduce per dtype, then clipped and stepped: the same step on every rank.

Why not ``DistributedDataParallel``: it all-reduces inside the backward pass of every forward that goes
through its wrapper, and needs every rank to run the same number of them. Here the model's forward runs
inside the policy's scoring, micro-batches accumulate, and the algorithm's filters leave the ranks uneven
shares of trained steps (some none): one explicit all-reduce after the last micro-batch is the same sum,
with no ``no_sync`` bookkeeping and no rank that could wait for a backward another never runs.

State: ``sync`` broadcasts rank 0's adapter, critics, optimisers and update count, at the start and after
rank 0 loads a checkpoint. Checkpoints are rank 0's, in the one-rank format: a run saved with N ranks
resumes with M.

Failures end the run with one ``RankError``, never a hang: a child that does not join names itself and the
last line it wrote; every exchange has ``collective_timeout_s``; a child ends when its parent does (its
stdin closes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import orjson
import torch
import torch.distributed as dist

from distrl.config import LearnerSettings
from distrl.errors import RankError
from distrl.records import DocumentError, Trajectory
from distrl.records.forms import pack_trajectory, unpack_trajectory

if TYPE_CHECKING:
    from distrl.policy import Policy

__all__ = [
    "SYNC",
    "STOP",
    "UPDATE",
    "Alone",
    "Command",
    "RankProcess",
    "Ranks",
    "rank_devices",
    "torchrun_rank",
]

T = TypeVar("T")

STOP, UPDATE, SYNC = 0, 1, 2
_LENGTH = struct.Struct(">Q")


@dataclasses.dataclass(frozen=True, slots=True)
class Command:
    """What rank 0 told the others to do next (``Ranks.receive``)."""

    op: int
    """``STOP``, ``UPDATE`` or ``SYNC``."""
    updates: int = 0
    """Rank 0's update count before this update: the warm-up and the version depend on it."""
    trajectories: tuple[Trajectory, ...] = ()
    weights: tuple[float, ...] = ()


def torchrun_rank() -> tuple[int, int] | None:
    """(rank, world size) where ``torchrun`` started this process for a world of more than one, else None."""
    world = os.environ.get("WORLD_SIZE", "")
    rank = os.environ.get("RANK", "")
    if not (world.isdigit() and rank.isdigit()) or int(world) < 2:
        return None
    return int(rank), int(world)


class RankProcess(Protocol):
    """A rank that rank 0 started (``distrl.learner.rank_processes.Child``), as ``Ranks`` watches it."""

    rank: int

    def exited(self) -> bool: ...
    def returncode(self) -> int | None: ...
    def last_words(self) -> str:
        """``": <its last line on stderr>"``, or nothing."""
        ...

    def stop(self, timeout_s: float) -> None: ...


class Ranks:
    """This process's place in the learner's process group, and every exchange the learner makes in it."""

    def __init__(
        self,
        *,
        rank: int,
        world: int,
        device: torch.device,
        timeout_s: float,
        children: Sequence[RankProcess] = (),
        threads: int | None = None,
    ) -> None:
        self.rank = rank
        self.world = world
        self.timeout_s = timeout_s
        self.device = device if dist.get_backend() == "nccl" else torch.device("cpu")
        """Where exchanged tensors live: the rank's GPU under NCCL, else the CPU."""
        self._children = list(children)
        self.reduced_bytes = 0
        """Bytes of gradients this rank has all-reduced since it started (the adapter's and the critics')."""
        self._closed = False
        self.broken = False
        """Set where an update failed on this rank partway (not a refusal every rank makes alike): the
        others may wait in an exchange this rank will not make, so ``close`` sends them nothing more."""
        self._threads = torch.get_num_threads() if threads is None else threads
        """This process's torch threads before ``start_ranks`` shared the cores out: ``close`` gives them
        back."""

    @property
    def leader(self) -> bool:
        return self.rank == 0

    # -- what rank 0 says, and the others hear ----------------------------------------------------------

    def send(
        self,
        op: int,
        *,
        updates: int = 0,
        trajectories: Sequence[Trajectory] = (),
        weights: Sequence[float] = (),
    ) -> None:
        """Rank 0: tell the others what to do next (``UPDATE`` with the batch, ``SYNC``, ``STOP``)."""
        frames = b"".join(_frame(trajectory) for trajectory in trajectories)
        header = torch.tensor([op, len(frames), len(weights), updates], dtype=torch.int64)
        self._exchange("send", lambda: self._broadcast(header))
        if frames:
            self._exchange(
                "send", lambda: self._broadcast(torch.frombuffer(bytearray(frames), dtype=torch.uint8))
            )
        if weights:
            self._exchange("send", lambda: self._broadcast(torch.tensor(weights, dtype=torch.float64)))

    def receive(self) -> Command:
        """Another rank: wait for rank 0's next command (``collective_timeout_s`` at most)."""
        header = self._exchange("receive", lambda: self._broadcast(torch.zeros(4, dtype=torch.int64)))
        op, size, count, updates = (int(v) for v in header.tolist())
        trajectories: tuple[Trajectory, ...] = ()
        weights: tuple[float, ...] = ()
        if size:
            frames = self._exchange("receive", lambda: self._broadcast(torch.zeros(size, dtype=torch.uint8)))
            trajectories = tuple(_unframe(frames.numpy().tobytes()))
        if count:
            received = self._exchange(
                "receive", lambda: self._broadcast(torch.zeros(count, dtype=torch.float64))
            )
            weights = tuple(float(v) for v in received.tolist())
        return Command(op, updates, trajectories, weights)

    # -- the exchanges of an update --------------------------------------------------------------------

    def shard(self, count: int) -> tuple[int, int]:
        """This rank's contiguous share [start, stop) of ``count`` items (the first ranks take one more)."""
        return _bounds(count, self.world)[self.rank]

    def gather(self, local: torch.Tensor, count: int) -> torch.Tensor:
        """Every rank's ``shard`` of ``count`` rows, in rank order: the whole ``count`` rows on each rank."""
        bounds = _bounds(count, self.world)
        most = max(stop - start for start, stop in bounds)
        padded = torch.zeros((most, *local.shape[1:]), dtype=local.dtype, device=self.device)
        padded[: local.shape[0]] = local.detach().to(self.device)
        parts = [torch.empty_like(padded) for _ in range(self.world)]
        self._exchange("gather", lambda: dist.all_gather(parts, padded))
        rows = [part[: stop - start] for part, (start, stop) in zip(parts, bounds, strict=True)]
        return torch.cat(rows).to(local.device)

    def total(self, values: Sequence[float]) -> list[float]:
        """``values`` summed over the ranks."""
        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        self._exchange("sum", lambda: dist.all_reduce(tensor))
        return [float(v) for v in tensor.tolist()]

    def reduce_gradients(self, parameters: Sequence[torch.Tensor], *, mean: bool) -> None:
        """Sum (or with ``mean`` average) ``parameters``' gradients over the ranks, one flat all-reduce per
        dtype; a rank that computed none for a parameter adds zeros."""
        by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
        for parameter in parameters:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
            by_dtype.setdefault(parameter.grad.dtype, []).append(parameter)
        for group in by_dtype.values():
            flat = torch.cat([p.grad.reshape(-1) for p in group]).to(self.device)  # type: ignore[union-attr]
            self._exchange("gradients", lambda flat=flat: dist.all_reduce(flat))  # type: ignore[misc]
            if mean:
                flat /= self.world
            self.reduced_bytes += flat.numel() * flat.element_size()
            offset = 0
            for p in group:
                size = p.numel()
                p.grad.copy_(flat[offset : offset + size].view_as(p))  # type: ignore[union-attr]
                offset += size

    # -- state -----------------------------------------------------------------------------------------

    def check_model(self, policy: Policy) -> None:
        """Refuse (``RankError``, ``mismatch``) a rank whose frozen model differs from rank 0's: another
        folder, seed or dtype would train a different policy from the one the fleet plays."""
        frozen = [p.detach() for p in policy.model.parameters() if not p.requires_grad]
        mine = torch.tensor(
            [float(sum(p.numel() for p in frozen)), sum(float(p.double().abs().sum()) for p in frozen)],
            dtype=torch.float64,
            device=self.device,
        )
        every = [torch.empty_like(mine) for _ in range(self.world)]
        self._exchange("check", lambda: dist.all_gather(every, mine))
        first = every[0].cpu()
        for rank, theirs in enumerate(every):
            if not torch.allclose(theirs.cpu(), first, rtol=1e-9, atol=0.0):
                raise RankError(
                    f"learner rank {rank} holds another model than rank 0 ({int(theirs[0])} frozen values,"
                    f" their sum {float(theirs[1]):.6g}, against {int(first[0])} and {float(first[1]):.6g}):"
                    " every rank must load the same model folder, dtype and seed",
                    rank=rank,
                    reason="mismatch",
                )

    def sync(
        self, tensors: dict[str, torch.Tensor], meta: dict[str, Any], updates: int
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any], int]:
        """Every rank: rank 0's named tensors, their JSON ``meta`` and its update count, which every rank
        returns (the others pass anything: theirs are not read). ``Learner.sync_ranks`` copies its
        adapter, critics and optimisers so."""
        manifest = b""
        if self.leader:
            shapes = [
                [name, list(t.shape), str(t.dtype).removeprefix("torch.")] for name, t in tensors.items()
            ]
            manifest = orjson.dumps({"meta": meta, "updates": updates, "tensors": shapes})
        document = orjson.loads(self._bytes(manifest))
        copied: dict[str, torch.Tensor] = {}
        for name, shape, dtype in document["tensors"]:
            local = tensors[name] if self.leader else torch.zeros(shape, dtype=getattr(torch, dtype))
            copied[name] = self._exchange("sync", lambda t=local: self._broadcast(t)).cpu()  # type: ignore[misc]
        return copied, document["meta"], int(document["updates"])

    def _bytes(self, data: bytes) -> bytes:
        size = self._exchange("sync", lambda: self._broadcast(torch.tensor([len(data)], dtype=torch.int64)))
        buffer = (
            torch.frombuffer(bytearray(data), dtype=torch.uint8)
            if self.leader
            else torch.zeros(int(size[0]), dtype=torch.uint8)
        )
        return self._exchange("sync", lambda: self._broadcast(buffer)).cpu().numpy().tobytes()

    # -- ending ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Rank 0: stop the others and leave the group; idempotent. Its children also end when their stdin
        closes (at once, where an update broke partway); those that do not end in 10 s are killed."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.leader and not self.broken:
                with contextlib.suppress(RankError):  # a rank already gone: the others are stopped below
                    self.send(STOP)
            for child in self._children:
                child.stop(10.0)
        finally:
            torch.set_num_threads(self._threads)
            if dist.is_initialized():
                dist.destroy_process_group()

    # -- the one place exchanges happen ----------------------------------------------------------------

    def _broadcast(self, tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.to(self.device)
        dist.broadcast(tensor, src=0)
        return tensor

    def _exchange(self, what: str, exchange: Callable[[], T]) -> T:
        """Run one collective; a rank that died or hung becomes a ``RankError`` that names it."""
        started = time.monotonic()
        try:
            return exchange()
        except RuntimeError as exc:  # torch.distributed's errors (DistBackendError among them)
            dead = self._dead_child()
            if dead is not None:
                raise RankError(
                    f"learner rank {dead.rank} died (exit code {dead.returncode()}) during the {what}"
                    f" exchange{dead.last_words()}",
                    rank=dead.rank,
                    reason="died",
                ) from exc
            waited = time.monotonic() - started
            reason = "timeout" if waited >= self.timeout_s * 0.9 else "died"
            problem = (
                f"did not answer within learner.collective_timeout_s = {self.timeout_s:g} s"
                if reason == "timeout"
                else f"failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            )
            raise RankError(
                f"the learner's {what} exchange with its other ranks {problem}", reason=reason
            ) from exc

    def _dead_child(self, grace_s: float = 3.0) -> RankProcess | None:
        """A child whose process has ended, waiting ``grace_s`` for one whose connection closed first."""
        deadline = time.monotonic() + grace_s
        while True:
            dead = next((child for child in self._children if child.exited()), None)
            if dead is not None or not self._children or time.monotonic() > deadline:
                return dead
            time.sleep(0.05)


class Alone:
    """The learner's ranks when it is one process: the leader of a group of one, every exchange ``Ranks``
    makes the identity, so that the learner core runs one way whatever its ranks."""

    leader = True
    broken = False

    def send(self, kind: int, **_: Any) -> None:
        """Nobody to tell."""

    def shard(self, count: int) -> tuple[int, int]:
        return 0, count

    def gather(self, local: torch.Tensor, count: int) -> torch.Tensor:
        return local

    def total(self, values: Sequence[float]) -> list[float]:
        return list(values)

    def reduce_gradients(self, parameters: Sequence[torch.Tensor], *, mean: bool) -> None:
        """Its own gradients are the sum."""

    def check_model(self, policy: Policy) -> None:
        """Nobody to differ from."""

    def sync(
        self, tensors: dict[str, torch.Tensor], meta: dict[str, Any], updates: int
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any], int]:
        return tensors, meta, updates

    def close(self) -> None:
        """Nothing held."""


def rank_devices(settings: LearnerSettings, first: torch.device, world: int) -> list[torch.device]:
    """Each rank's device: ``settings.devices``, else rank r on ``cuda:r`` where rank 0 is on CUDA, else
    the CPU."""
    if settings.devices:
        return [torch.device(name) for name in settings.devices]
    if first.type == "cuda":
        return [torch.device("cuda", r) for r in range(world)]
    return [torch.device("cpu")] * world


def _bounds(count: int, world: int) -> list[tuple[int, int]]:
    base, extra = divmod(count, world)
    bounds, start = [], 0
    for rank in range(world):
        stop = start + base + (1 if rank < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def _frame(trajectory: Trajectory) -> bytes:
    packed = pack_trajectory(trajectory)
    return _LENGTH.pack(len(packed)) + packed


def _unframe(data: bytes) -> Iterator[Trajectory]:
    view, offset = memoryview(data), 0
    while offset < len(view):
        (size,) = _LENGTH.unpack_from(view, offset)
        offset += _LENGTH.size
        try:
            trajectory = unpack_trajectory(view[offset : offset + size])
        except DocumentError as exc:
            problem = f"rank 0 sent a trajectory that cannot be read: {exc}"
            raise RankError(problem, reason="mismatch") from exc
        offset += size
        yield trajectory
