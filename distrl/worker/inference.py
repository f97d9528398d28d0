"""The worker's inference: the policy replica behind one batcher, and the expert that needs none.

Inference runs in one thread for all devices (``distrl.policy.batching.Batcher``): requests from the
device coroutines are gathered into batches of at most ``policy.max_batch``. A ``Weights`` message is applied
between inference batches (``Batcher.exclusive``), verified against the learner's checksum; a diff that
does not apply changes nothing and raises its ``WeightsError``. With ``model = "expert"`` there is no
replica: the device's own expert chooses each step (``ExpertDevice``: the simulated phones).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from distrl.config import WorkerSettings
from distrl.errors import PolicyError, WeightsError
from distrl.records import Action, InvalidAction, Observation, Step, Task
from distrl.wire import Weights

if TYPE_CHECKING:
    import torch

    from distrl.device.protocol import Device
    from distrl.policy import Policy, PolicyInput, Sample
    from distrl.policy.batching import Batcher

log = logging.getLogger(__name__)


class Replica:
    """The policy replica: the model, the batcher that feeds it, and the weights version it holds."""

    def __init__(self, policy: Policy, settings: WorkerSettings, host: str) -> None:
        from distrl.policy.batching import Batcher

        self.policy = policy
        self.host = host
        self.batcher: Batcher[PolicyInput, tuple[Sample, int]] = Batcher(
            self._infer, max_batch=settings.policy.max_batch, max_wait_s=settings.policy.max_wait_s
        )
        self.weights: dict[str, torch.Tensor] = policy.adapter.state()
        """The last snapshot applied, as published (its dtype may differ from the adapter's)."""
        self.dtypes: dict[str, torch.dtype] = {name: tensor.dtype for name, tensor in self.weights.items()}
        """The adapter's own dtype per tensor, which published weights are cast to."""
        self.version: int | None = None

    @classmethod
    async def start(cls, settings: WorkerSettings, host: str, tg: TaskGroup) -> Replica:
        """Load the policy (in a thread: heartbeats go on) and start its batcher in ``tg``."""
        from distrl.policy import Policy

        def load() -> Policy:
            policy = Policy.load(settings.policy, device="auto", seed=settings.seed)
            if settings.policy.merge_adapter:
                policy.adapter.serve_merged()  # a worker never trains: each answer costs what the base's does
            return policy

        policy = await anyio.to_thread.run_sync(load)
        replica = cls(policy, settings, host)
        await tg.start(replica.batcher.run)
        return replica

    def _infer(self, batch: list[PolicyInput]) -> list[tuple[Sample, int]]:
        """One inference batch, in the batcher's thread; each answer with the version that gave it."""
        version = self.version or 0
        return [(sample, version) for sample in self.policy.sample(batch)]

    async def choose(
        self,
        task: Task,
        observation: Observation,
        history: Sequence[Action | InvalidAction],
        index: int,
        temperature: float | None = None,
    ) -> Step:
        """The batched model's step on ``observation``, at ``temperature`` (None: the settings')."""
        asked = time.perf_counter()
        from distrl.policy import PolicyInput

        sample, version = await self.batcher(
            PolicyInput(
                goal=task.goal, observation=observation, history=tuple(history), temperature=temperature
            )
        )
        return sample.step(index, observation, version, time.perf_counter() - asked)

    async def apply(self, message: Weights) -> int:
        """Take in a full snapshot or a diff against the version held; returns the new version."""
        from distrl.weights import apply

        base = None if message.kind == "full" else self.version
        if message.kind == "diff" and base is None:
            raise WeightsError(
                "a diff arrived before any full snapshot", reason="base", version=message.version
            )
        started = time.perf_counter()
        snapshot = await anyio.to_thread.run_sync(
            lambda: apply(self.weights if base is not None else {}, message.blob, expected_base=base)
        )
        policy = self.policy
        cast = {
            name: tensor.to(self.dtypes[name]) if name in self.dtypes else tensor
            for name, tensor in snapshot.tensors.items()
        }
        async with self.batcher.exclusive():
            try:
                policy.adapter.load_state(cast)
            except PolicyError as exc:
                raise WeightsError(
                    f"the weights do not fit this worker's adapter: {exc}",
                    reason="mismatch",
                    version=message.version,
                ) from exc
            self.weights, self.version = snapshot.tensors, snapshot.version
        log.debug(
            "worker %s: weights v%d (%s, %d bytes) applied in %.1f ms",
            self.host,
            snapshot.version,
            message.kind,
            len(message.blob),
            1000 * (time.perf_counter() - started),
        )
        return snapshot.version


def expert_step(device: Device, task: Task, observation: Observation, index: int) -> Step:
    """The scripted expert's step on a device whose kind has one (``ExpertDevice``: the simulated
    phone): deterministic, so its log-prob is 0."""
    asked = time.perf_counter()
    from distrl.device.episode import scripted_step
    from distrl.device.protocol import ExpertDevice

    assert isinstance(device, ExpertDevice)  # the agent's setup refuses the expert on adb devices
    return scripted_step(device.expert_action(task), observation, index, asked)


def import_heavy(expert: bool) -> None:
    """Import what every setup needs (seconds of work for torch and transformers). The kinds of device
    and the evaluators are loaded when the host's devices or the tasks name them, not here."""
    import distrl.device.episode
    import distrl.tasks.registry

    if not expert:
        import distrl.policy
        import distrl.policy.batching  # noqa: F401
