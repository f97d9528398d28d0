"""``[learner] ranks``: the learner as several processes that train every update together (data
parallelism on ``torch.distributed``).

Rank 0 is the ``Learner`` the run holds: the fleet loop, the replay buffer, the checkpoints and the
publisher stay with it. The other ranks only train. Rank 0 starts them as its child processes
(``python -m distrl.learner.ranks``, the settings on their stdin as JSON), or ``torchrun`` starts them
all, on one machine or several (``distrl run`` then serves as a rank where ``RANK`` is not 0).

One update, on every rank:

1. Rank 0 draws the batch from its buffer and broadcasts it: a header (what to do, the sizes, its update
   count), the trajectories as wire frames (``TrajectoryReport``: the records' own encoding, no pickle
   crosses between ranks) and their importance-sampling weights.
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

import dataclasses
import datetime
import logging
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeVar

import orjson
import torch
import torch.distributed as dist

from distrl.config import LearnerSettings, PolicySettings, learner_settings_json, parse_learner_settings
from distrl.errors import RankError
from distrl.learner.tensor_files import load_optimizer_state, optimizer_state
from distrl.records import Trajectory
from distrl.wire import MAX_FRAME_BYTES, MAX_HEADER_BYTES, TrajectoryReport, decode, encode

if TYPE_CHECKING:
    from distrl.learner.core import Learner
    from distrl.policy import Policy

__all__ = ["Command", "Ranks", "follow", "serve", "torchrun_rank"]

log = logging.getLogger(__name__)

T = TypeVar("T")

STOP, UPDATE, SYNC = 0, 1, 2
_JOIN_POLL_S = 0.5
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


class Ranks:
    """This process's place in the learner's process group, and every exchange the learner makes in it."""

    def __init__(
        self,
        *,
        rank: int,
        world: int,
        device: torch.device,
        timeout_s: float,
        children: Sequence[_Child] = (),
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
        self._threads = torch.get_num_threads()
        """Rank 0's torch threads before ``start`` shared the cores out: ``close`` gives them back."""

    @property
    def leader(self) -> bool:
        return self.rank == 0

    # -- starting --------------------------------------------------------------------------------------

    @classmethod
    def start(cls, policy: Policy, settings: LearnerSettings, *, seed: int) -> Ranks:
        """Rank 0's group: joined under ``torchrun``, else with ``settings.ranks - 1`` children started here,
        each loading the policy as ``policy`` was loaded (its settings, dtype and ``seed``).

        Raises ``RankError`` (``start``) when a child does not join, with what it wrote last."""
        timeout = datetime.timedelta(seconds=settings.collective_timeout_s)
        backend = "nccl" if policy.device.type == "cuda" else "gloo"
        launched = torchrun_rank()
        if launched is not None:
            rank, world = launched
            dist.init_process_group(backend, init_method="env://", timeout=timeout)
            return cls(rank=rank, world=world, device=policy.device, timeout_s=settings.collective_timeout_s)
        world = settings.ranks
        threads = before = torch.get_num_threads()
        if policy.device.type == "cpu":  # ranks on one machine's cores share them
            threads = max(1, threads // world)
        store = dist.TCPStore("127.0.0.1", 0, world, is_master=True, timeout=timeout, wait_for_workers=False)
        document = {
            "settings": learner_settings_json(policy.settings, settings),
            "world": world,
            "port": store.port,
            "seed": seed,
            "dtype": str(next(policy.model.parameters()).dtype).removeprefix("torch."),
            "threads": threads,
            "backend": backend,
        }
        devices = rank_devices(settings, policy.device, world)
        children: list[_Child] = []
        try:
            for rank in range(1, world):
                children.append(_Child.start(rank, {**document, "rank": rank, "device": str(devices[rank])}))
            _wait_until_joined(store, children, settings.collective_timeout_s)
            dist.init_process_group(backend, store=store, rank=0, world_size=world, timeout=timeout)
        except BaseException:
            for child in children:
                child.kill()
            raise
        log.info("learner: %d ranks (%s), %d thread(s) each", world, backend, threads)
        ranks = cls(
            rank=0, world=world, device=policy.device, timeout_s=settings.collective_timeout_s, children=children
        )
        ranks._threads = before
        torch.set_num_threads(threads)
        return ranks

    # -- what rank 0 says, and the others hear ----------------------------------------------------------

    def send(self, op: int, *, updates: int = 0, trajectories: Sequence[Trajectory] = (), weights: Sequence[float] = ()) -> None:
        """Rank 0: tell the others what to do next (``UPDATE`` with the batch, ``SYNC``, ``STOP``)."""
        frames = b"".join(_frame(i, trajectory) for i, trajectory in enumerate(trajectories))
        header = torch.tensor([op, len(frames), len(weights), updates], dtype=torch.int64)
        self._exchange("send", lambda: self._broadcast(header))
        if frames:
            self._exchange("send", lambda: self._broadcast(torch.frombuffer(bytearray(frames), dtype=torch.uint8)))
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
            received = self._exchange("receive", lambda: self._broadcast(torch.zeros(count, dtype=torch.float64)))
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

    def sync(self, learner: Learner) -> None:
        """Every rank: rank 0's adapter, critics, optimisers and update count, copied to the others."""
        tensors: dict[str, torch.Tensor] = {}
        manifest = b""
        if self.leader:
            tensors, meta = _state(learner)
            shapes = [[name, list(t.shape), str(t.dtype).removeprefix("torch.")] for name, t in tensors.items()]
            manifest = orjson.dumps({"meta": meta, "updates": learner.updates, "tensors": shapes})
        manifest = self._bytes(manifest)
        document = orjson.loads(manifest)
        for name, shape, dtype in document["tensors"]:
            local = tensors[name] if self.leader else torch.zeros(shape, dtype=getattr(torch, dtype))
            tensors[name] = self._exchange("sync", lambda t=local: self._broadcast(t)).cpu()  # type: ignore[misc]
        if not self.leader:
            _apply(learner, tensors, document["meta"])
            learner.updates = int(document["updates"])

    def _bytes(self, data: bytes) -> bytes:
        size = self._exchange("sync", lambda: self._broadcast(torch.tensor([len(data)], dtype=torch.int64)))
        buffer = torch.frombuffer(bytearray(data), dtype=torch.uint8) if self.leader else torch.zeros(int(size[0]), dtype=torch.uint8)
        return self._exchange("sync", lambda: self._broadcast(buffer)).cpu().numpy().tobytes()

    # -- ending ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Rank 0: stop the others and leave the group; idempotent. Children that do not end in 10 s are
        killed."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.leader:
                try:
                    self.send(STOP)
                except RankError:
                    pass  # a rank already gone: the others are stopped below
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


    def _dead_child(self, grace_s: float = 3.0) -> _Child | None:
        """A child whose process has ended, waiting ``grace_s`` for one whose connection closed first."""
        deadline = time.monotonic() + grace_s
        while True:
            dead = next((child for child in self._children if child.exited()), None)
            if dead is not None or not self._children or time.monotonic() > deadline:
                return dead
            time.sleep(0.05)


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


def _frame(index: int, trajectory: Trajectory) -> bytes:
    frame = encode(TrajectoryReport(trajectory=trajectory, id=index), max_frame_bytes=MAX_FRAME_BYTES, max_header_bytes=MAX_HEADER_BYTES)
    return _LENGTH.pack(len(frame)) + frame


def _unframe(data: bytes) -> Iterator[Trajectory]:
    offset = 0
    while offset < len(data):
        (size,) = _LENGTH.unpack_from(data, offset)
        offset += _LENGTH.size
        message = decode(data[offset : offset + size], max_frame_bytes=MAX_FRAME_BYTES, max_header_bytes=MAX_HEADER_BYTES)
        offset += size
        if not isinstance(message, TrajectoryReport):
            raise RankError(f"rank 0 sent a {type(message).__name__} where a trajectory belongs", reason="mismatch")
        yield message.trajectory


def _state(learner: Learner) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """What ``sync`` copies: tensors by name, and the optimisers' structure (``optimizer_state``'s meta)."""
    tensors = {f"adapter.{name}": t for name, t in learner.policy.adapter_state().items()}
    tensors.update({f"critics.{name}": t.detach().cpu() for name, t in learner.critics.state_dict().items()})
    actor, actor_meta = optimizer_state(learner.actor_optimiser, "actor")
    critic, critic_meta = optimizer_state(learner.critic_optimiser, "critic")
    tensors.update(actor)
    tensors.update(critic)
    return tensors, {"actor": actor_meta, "critic": critic_meta}


def _apply(learner: Learner, tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
    learner.policy.load_adapter_state(
        {name.removeprefix("adapter."): t for name, t in tensors.items() if name.startswith("adapter.")}
    )
    learner.critics.load_state_dict(
        {name.removeprefix("critics."): t for name, t in tensors.items() if name.startswith("critics.")}
    )
    load_optimizer_state(learner.actor_optimiser, tensors, meta["actor"], "actor")
    load_optimizer_state(learner.critic_optimiser, tensors, meta["critic"], "critic")


# --- the other ranks -------------------------------------------------------------------------------------


def follow(learner: Learner) -> None:
    """Another rank's life: do what rank 0 says, update after update, until it says stop."""
    ranks = learner.ranks
    assert ranks is not None and not ranks.leader
    from distrl.errors import LearnerError  # the refusal is decided by every rank alike; rank 0 reports it
    from distrl.learner.replay import ReplaySample

    while True:
        command = ranks.receive()
        if command.op == STOP:
            return
        if command.op == SYNC:
            ranks.sync(learner)
            continue
        learner.updates = command.updates
        count = len(command.trajectories)
        sample = ReplaySample(
            keys=tuple(range(count)),
            trajectories=command.trajectories,
            probabilities=(1.0 / count,) * count,
            weights=command.weights,
        )
        try:
            learner.update_on(sample)
        except LearnerError:
            pass


def serve(
    policy_settings: PolicySettings,
    learner_settings: LearnerSettings,
    *,
    device: str,
    dtype: str | None,
    seed: int,
    join: Callable[[], Ranks],
) -> None:
    """Load the policy, join the group (``join``), and ``follow`` rank 0 until it stops."""
    from distrl.learner.core import Learner
    from distrl.policy import Policy

    policy = Policy.load(policy_settings, device=device, dtype=dtype, seed=seed)  # type: ignore[arg-type]
    ranks = join()
    try:
        learner = Learner(policy, learner_settings, seed=seed, ranks=ranks)
        follow(learner)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


@dataclasses.dataclass
class _Child:
    """A rank that rank 0 started: its process and where its stderr goes."""

    rank: int
    process: subprocess.Popen[bytes]
    stderr: IO[bytes]

    @classmethod
    def start(cls, rank: int, document: dict[str, Any]) -> _Child:
        stderr = tempfile.TemporaryFile()
        process = subprocess.Popen(
            [sys.executable, "-m", "distrl.learner.ranks"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,  # Ctrl-C reaches rank 0, which stops its ranks itself
        )
        assert process.stdin is not None
        process.stdin.write(orjson.dumps(document) + b"\n")
        process.stdin.flush()  # stdin stays open: its end is the parent's end
        return cls(rank, process, stderr)

    def exited(self) -> bool:
        return self.process.poll() is not None

    def returncode(self) -> int | None:
        return self.process.poll()

    def last_words(self) -> str:
        """``": <its last line on stderr>"``, or nothing."""
        self.stderr.seek(0)
        lines = [line.strip() for line in self.stderr.read().decode(errors="replace").splitlines() if line.strip()]
        return f": {lines[-1]}" if lines else ""

    def stop(self, timeout_s: float) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
        self.stderr.close()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def _wait_until_joined(store: dist.TCPStore, children: Sequence[_Child], timeout_s: float) -> None:
    """Wait until every child has loaded its policy and says so in the store, or refuse the one that died
    or took longer than ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    for child in children:
        while not store.check([f"ready/{child.rank}"]):
            time.sleep(_JOIN_POLL_S)
            if child.exited():
                raise RankError(
                    f"learner rank {child.rank} did not start (exit code {child.returncode()})"
                    f"{child.last_words()}",
                    rank=child.rank,
                    reason="start",
                )
            if time.monotonic() > deadline:
                raise RankError(
                    f"learner rank {child.rank} did not join within learner.collective_timeout_s ="
                    f" {timeout_s:g} s{child.last_words()}",
                    rank=child.rank,
                    reason="timeout",
                )


def _child_main() -> None:
    """``python -m distrl.learner.ranks``: a rank rank 0 started, its settings on stdin."""
    logging.basicConfig(level=logging.WARNING, format="learner rank %(process)d: %(message)s")
    document = orjson.loads(sys.stdin.buffer.readline())
    threading.Thread(target=_end_with_parent, daemon=True).start()
    policy_settings, learner_settings = parse_learner_settings(document["settings"])
    torch.set_num_threads(int(document["threads"]))
    rank, world = int(document["rank"]), int(document["world"])
    timeout = datetime.timedelta(seconds=learner_settings.collective_timeout_s)

    def join() -> Ranks:
        store = dist.TCPStore("127.0.0.1", int(document["port"]), world, is_master=False, timeout=timeout)
        store.set(f"ready/{rank}", "1")
        dist.init_process_group(document["backend"], store=store, rank=rank, world_size=world, timeout=timeout)
        device = torch.device(document["device"])
        return Ranks(rank=rank, world=world, device=device, timeout_s=learner_settings.collective_timeout_s)

    serve(
        policy_settings,
        learner_settings,
        device=document["device"],
        dtype=document["dtype"],
        seed=int(document["seed"]),
        join=join,
    )


def _end_with_parent() -> None:
    """Exit when rank 0's end of our stdin closes: rank 0 ended, or stopped us."""
    while os.read(0, 1 << 16):  # unbuffered: a thread blocked in sys.stdin would stop the interpreter's exit
        pass
    os._exit(0)


if __name__ == "__main__":
    _child_main()
