"""``Learner``: the replay buffer, the critics and one update of A-RIDE, DigiRL or filtered BC.

One ``update()``:

1. Drop trajectories past ``max_policy_lag``; sample ``batch_size`` trajectories from the replay buffer
   (∝ priority^α for A-RIDE; uniformly for the baselines) with their importance-sampling weights w.
2. Score every step under the current weights, without gradients, in evaluation mode: log π(a_t|s_t),
   the entropy and the hidden states the critics read (``distrl.learner.critics``).
3. Per trajectory (``distrl.learner.retrace``): ρ_t, c_t = λ·min(1, ρ_t), Retrace targets v_t
   (``retrace_lambda``) and advantages A_t (traces with ``advantage_lambda``) over the whole trajectory,
   and its new priority
   p = w1·mean|δ_t| + w2·mean ρ_t + w3·mean(−log π(a_t|s_t)) (paper §3, DPER; ρ capped at 10 there
   so one wild ratio cannot own the buffer).
4. Critic step (Adam, ``lr_critic``), the losses summed as the paper's total loss sums them:
   - A-RIDE: L(V) = E[w·BCE(V(s_t), v_t)], the step critic regressed on its Retrace targets;
     L(V_traj) = E[w·BCE(V_traj(s_H, a_H), r)], r = 1 for a successful episode.
   - DigiRL: L(V) = E[BCE(V(s_t), r)] and L(V_instr) = E[BCE(V_instr(c), r)] (DigiRL trains both on
     the final reward).
   - filtered BC: no critic.
5. Actor step (AdamW on the adapter, ``lr_actor``), gradients accumulated over ``micro_batch`` chunks
   in training mode:
   - A-RIDE, Eq. 1: L_π = −E[w·min(ρ_t, ρ̄)·A_t·log π(a_t|s_t)] − β·E[w·H(π(·|s_t))]
     + κ·E[w·min(ρ_t, ρ̄)·1{a_t invalid}·log π(a_t|s_t)]. ρ̄ is ``rho_clip`` (``inf``: unclipped, as
     written in the paper). A_t is first taken as ``advantages`` says: by default only its positive
     part, max(A_t, 0), scaled to mean 1 over the steps it keeps (not Eq. 1 as written; see
     ``LearnerSettings.advantages`` and ``retrace.actor_advantages``). The penalty lowers
     the likelihood of answers that did not parse: an advantage of −κ on them, weighted by the same
     ratio, so that its push fades once such an answer has become unlikely (an unweighted
     −log-likelihood push never stops, and wrecks the policy). The paper's P_invalid came from a judge;
     here parsing decides.
   - DigiRL: −E[log π(a_t|s_t)] over the steps kept by its hard filters: step advantage
     A_step > 1/H (doubly robust, ``digirl_step_advantages``) in trajectories whose instruction-level
     advantage r − V_instr(c) is positive (with a 0/1 reward: the successes, hardest first in value)
     and among the batch's top ``digirl_top`` by it (its paper's curriculum keeps the top p%).
   - filtered BC: −E[log π(a_t|s_t)] over the steps of successful trajectories.
   A-RIDE's r is the outcome shaped by ``step_cost``, ``invalid_reward`` and ``repeat_penalty``
   (``distrl.learner.rewards``); with ``trajectory_filter`` its actor trains only on the batch's top
   ``trajectory_top`` trajectories by V_traj(s_H, a_H) (``value``) or r − V_traj (``advantage``), as
   the paper filters its buffer to high-value trajectories.
   A-RIDE's actor pass runs over the steps whose weight on −log π is not 0, its entropy bonus is taken
   over those steps, and its loss is their mean, as the baselines' losses are means over the steps they
   keep. With ``positive`` advantages about four steps in five weigh 0 (only successful episodes' steps
   did better than their critic expected): over the whole batch, the bonus alone would be their
   gradient, a batch without one better-than-expected step would make a whole Adam step of pure entropy
   ascent (Adam scales any gradient up to the learning rate), and every update would pay the backward
   pass of every step (2.2 times DigiRL's update on ``tiny``). The bonus keeps its job, holding the
   trained answers' distributions open, where the actor pushes. Why the mean over those steps and not
   the sum over the batch's steps (Eq. 1's expectation): divided by the batch's size, an update's
   gradient grew with its share of better-than-expected steps, so a batch with one success barely moved
   the adapter while Adam's running scale let the rare batches of many successes dominate; as a mean,
   every update that trains moves the adapter as strongly (README, "Benchmarks": measured better).
   During the first ``critic_warmup_updates`` updates only the critics train (A-RIDE and DigiRL): the
   advantages of an untrained critic (V ≈ 0.5 everywhere) would push down every action of every failed
   episode, and unlearn the behaviour-cloned start (DigiRL pre-trains its critics the same way).
6. New priorities go back to the buffer, β moves towards 1, and the update counter (the policy version
   the learner holds) goes up by one.

Checkpoints (``save``/``load``): the adapter (PEFT layout), the critics, both optimisers, the replay
buffer with its priorities and sampler state, the RNG states and the counters; ``load`` then
``update()`` gives bitwise the update an uninterrupted run would have made.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import random
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from distrl.config import LearnerSettings
from distrl.errors import CheckpointError, LearnerError, PolicyError
from distrl.learner.checkpoint import (
    load_optimizer_state,
    load_tensors,
    optimizer_state,
    restore_rng_state,
    rng_state,
    save_tensors,
)
from distrl.learner.critics import Critics
from distrl.learner.losses import (
    a_ride_actor_loss,
    a_ride_weights,
    digirl_keep,
    filtered_bc_keep,
    imitation_loss,
    top_trajectories,
)
from distrl.learner.replay import ReplayBuffer, ReplaySample, ReplayStats
from distrl.learner.retrace import (
    actor_advantages,
    digirl_step_advantages,
    importance_ratios,
    priority,
    retrace,
    td_errors,
    traces,
)
from distrl.learner.rewards import shaped_rewards
from distrl.policy import Policy, PolicyInput
from distrl.records import InvalidAction, Step, Trajectory

__all__ = ["Learner", "UpdateReport"]

_STATE_FILE = "learner.safetensors"
_REPLAY_FILE = "replay.bin"
_ADAPTER_DIR = "adapter"


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class UpdateReport:
    """What one ``Learner.update`` did."""

    update: int
    """The update's number (1 for the first); the learner's version after it."""
    trajectories: int
    steps: int
    trained_steps: int
    """Steps in the actor loss after the algorithm's filters (for A-RIDE, those whose weight is not 0)."""
    actor_loss: float
    critic_loss: float
    """Step critic plus the trajectory (A-RIDE) or instruction (DigiRL) critic."""
    entropy: float
    """Mean per-token entropy of the sampled steps' answers."""
    mean_rho: float
    clipped_share: float
    """Share of steps whose ρ exceeded ``rho_clip``."""
    mean_advantage: float
    mean_value: float
    mean_priority: float
    staleness: tuple[int, ...]
    """Per sampled step: learner version − the version that chose it."""
    wall_s: float


@dataclasses.dataclass(slots=True)
class _Scored:
    logprob: torch.Tensor
    entropy: torch.Tensor
    state: torch.Tensor
    answer_state: torch.Tensor


class Learner:
    """Trains ``policy``'s adapter from trajectories with ``settings.algorithm``."""

    def __init__(
        self,
        policy: Policy,
        settings: LearnerSettings,
        *,
        max_policy_lag: int | None = None,
        seed: int = 0,
    ) -> None:
        self.policy = policy
        self.settings = settings
        self.updates = 0
        self.progress: dict[str, int] = {}
        """The run's own counters that a checkpoint keeps for its resumption (``episodes``, ``env_steps``:
        where TensorBoard's x-axes go on from); set by the run before each checkpoint."""
        """Updates done: the version of the weights the learner holds."""
        hidden = int(policy.model.get_input_embeddings().weight.shape[1])
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.critics = Critics(hidden).to(policy.device)
        if settings.gradient_checkpointing:
            # non-reentrant: the frozen base's inputs need no gradient for the adapter's to flow
            model, kwargs = policy.model, {"use_reentrant": False}
            if hasattr(model, "activation_checkpointing_enable"):  # its newer name
                model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        self.actor_optimiser = torch.optim.AdamW(policy.trainable_parameters(), lr=settings.lr_actor)
        self.critic_optimiser = torch.optim.Adam(self.critics.parameters(), lr=settings.lr_critic)
        prioritised = settings.algorithm == "a-ride"
        self.replay = ReplayBuffer(
            settings.replay_capacity,
            alpha=settings.priority_alpha if prioritised else 0.0,
            beta=settings.priority_beta if prioritised else 1.0,
            beta_updates=settings.priority_beta_updates,
            max_policy_lag=max_policy_lag,
            seed=seed,
        )
        self.rng = random.Random(f"learner/{seed}")
        """Reserved for the learner's own draws; saved and restored with checkpoints."""

    @property
    def version(self) -> int:
        return self.updates

    def add(self, trajectory: Trajectory) -> bool:
        """Put a scored trajectory in the replay buffer; False if it was refused: empty, too stale, or
        cut short by a device or policy failure (its outcome says nothing about the policy)."""
        if trajectory.cut_short:
            return False
        return self.replay.add(trajectory, learner_version=self.updates)

    def stats(self) -> ReplayStats:
        return self.replay.stats()

    # -- one update --------------------------------------------------------------------------------------

    def update(self) -> UpdateReport | None:
        """One update from a sampled batch (module docstring); None while the buffer is empty."""
        started = time.monotonic()
        settings = self.settings
        self.replay.prune(self.updates)
        if len(self.replay) == 0:
            return None
        batch = self.replay.sample(settings.batch_size)
        with self.policy.prompter.remembering_screens():  # each screen processed once, not twice
            return self._update(batch, started)

    def _update(self, batch: ReplaySample, started: float) -> UpdateReport:
        settings = self.settings
        steps = [(i, step) for i, trajectory in enumerate(batch.trajectories) for step in trajectory.steps]
        inputs = [_input(batch.trajectories[i], step) for i, step in steps]
        texts = [step.output for _, step in steps]
        with _evaluation(self.policy), torch.no_grad():
            scored = self._score(inputs, texts)
            values = torch.sigmoid(Critics.logit(self.critics.step, scored.state))
        for name, tensor in (("logprob", scored.logprob), ("entropy", scored.entropy), ("value", values)):
            self._finite(name, tensor)

        spans = _spans(batch.trajectories)
        weights = torch.tensor(
            [batch.weights[i] for i, _ in steps], dtype=torch.float32, device=self.policy.device
        )
        success = [1.0 if t.success else 0.0 for t in batch.trajectories]
        targets = torch.zeros(len(steps), device=self.policy.device)
        advantages = torch.zeros(len(steps), device=self.policy.device)
        rhos = torch.zeros(len(steps), device=self.policy.device)
        priorities = []
        for i, (start, end) in enumerate(spans):
            trajectory = batch.trajectories[i]
            rewards = torch.tensor(
                shaped_rewards(
                    trajectory.steps,
                    step_cost=settings.step_cost,
                    invalid_reward=settings.invalid_reward,
                    repeat_penalty=settings.repeat_penalty,
                ),
                dtype=torch.float32,
                device=self.policy.device,
            )
            behaviour = torch.tensor(
                [step.behaviour_logprob for step in trajectory.steps],
                dtype=torch.float32,
                device=self.policy.device,
            )
            rho = importance_ratios(scored.logprob[start:end], behaviour)
            value = values[start:end]
            target, advantage = retrace(rewards, value, traces(rho, settings.retrace_lambda), settings.gamma)
            if settings.advantage_lambda != settings.retrace_lambda:
                _, advantage = retrace(rewards, value, traces(rho, settings.advantage_lambda), settings.gamma)
            delta = td_errors(rewards, value, settings.gamma)
            priorities.append(priority(delta, rho, scored.logprob[start:end], settings.priority_weights))
            rhos[start:end] = rho
            targets[start:end] = target
            advantages[start:end] = advantage
        self._finite("priority", torch.tensor(priorities))
        invalid = torch.tensor(
            [isinstance(step.action, InvalidAction) for _, step in steps],
            dtype=torch.float32,
            device=self.policy.device,
        )
        # A-RIDE's weight on −log π; the baselines replace it with their filters' 0/1
        shaped = actor_advantages(advantages, weights, settings.advantages)
        coefficients = a_ride_weights(
            rhos, shaped, invalid, rho_clip=settings.rho_clip, invalid_penalty=settings.invalid_penalty
        )

        # the critic steps before the actor's loss is known: keep what it had, to undo a refused update
        critics = copy.deepcopy((self.critics.state_dict(), self.critic_optimiser.state_dict()))
        critic_loss = self._critic_step(batch.trajectories, spans, scored, targets, weights, success)
        keep, coefficients = self._actor_coefficients(batch.trajectories, spans, scored, values, coefficients)
        if self.updates < settings.critic_warmup_updates and settings.algorithm != "filtered-bc":
            keep = torch.zeros_like(keep)  # critics first: advantages from an untrained critic mislead
        try:
            actor_loss = self._actor_step(inputs, texts, keep, coefficients, weights)
        except LearnerError:
            self.critics.load_state_dict(critics[0])
            self.critic_optimiser.load_state_dict(critics[1])
            raise

        self.replay.update_priorities(batch.keys, priorities)
        self.replay.advance()
        self.updates += 1
        clip = settings.rho_clip
        return UpdateReport(
            update=self.updates,
            trajectories=len(batch.trajectories),
            steps=len(steps),
            trained_steps=int(keep.sum()),
            actor_loss=actor_loss,
            critic_loss=critic_loss,
            entropy=float(scored.entropy.mean()),
            mean_rho=float(rhos.mean()),
            clipped_share=float((rhos > clip).float().mean()) if math.isfinite(clip) else 0.0,
            mean_advantage=float(advantages.mean()),
            mean_value=float(values.mean()),
            mean_priority=sum(priorities) / len(priorities),
            staleness=tuple(self.updates - 1 - step.policy_version for _, step in steps),
            wall_s=time.monotonic() - started,
        )

    def _score(self, inputs: Sequence[PolicyInput], texts: Sequence[str]) -> _Scored:
        """``Policy.score`` over all steps, ``micro_batch`` at a time, concatenated."""
        parts = []
        size = self.settings.micro_batch
        for start in range(0, len(inputs), size):
            scores = self.policy.score(inputs[start : start + size], texts[start : start + size])
            assert scores.state is not None
            assert scores.answer_state is not None
            parts.append(scores)
        return _Scored(
            torch.cat([p.logprob for p in parts]),
            torch.cat([p.entropy for p in parts]),
            torch.cat([p.state for p in parts if p.state is not None]),
            torch.cat([p.answer_state for p in parts if p.answer_state is not None]),
        )

    def _critic_step(
        self,
        trajectories: Sequence[Trajectory],
        spans: Sequence[tuple[int, int]],
        scored: _Scored,
        targets: torch.Tensor,
        weights: torch.Tensor,
        success: Sequence[float],
    ) -> float:
        algorithm = self.settings.algorithm
        if algorithm == "filtered-bc":
            return 0.0
        bce = torch.nn.functional.binary_cross_entropy_with_logits
        device = self.policy.device
        outcome = torch.tensor(success, dtype=torch.float32, device=device)
        step_logits = Critics.logit(self.critics.step, scored.state)
        if algorithm == "a-ride":
            step_loss = (weights * bce(step_logits, targets.clamp(0.0, 1.0), reduction="none")).mean()
            last = torch.stack([scored.answer_state[end - 1] for _, end in spans])
            trajectory_weights = torch.stack([weights[start] for start, _ in spans])
            other = (
                trajectory_weights
                * bce(Critics.logit(self.critics.trajectory, last), outcome, reduction="none")
            ).mean()
        else:  # digirl
            labels = torch.cat(
                [
                    torch.full((end - start,), r, device=device)
                    for (start, end), r in zip(spans, success, strict=True)
                ]
            )
            step_loss = bce(step_logits, labels)
            first = torch.stack([scored.state[start] for start, _ in spans])
            other = bce(Critics.logit(self.critics.instruction, first), outcome)
        loss = step_loss + other
        self._finite("critic_loss", loss.detach())
        self.critic_optimiser.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
        torch.nn.utils.clip_grad_norm_(self.critics.parameters(), self.settings.grad_clip)
        self.critic_optimiser.step()
        return float(loss.detach())

    def _actor_coefficients(
        self,
        trajectories: Sequence[Trajectory],
        spans: Sequence[tuple[int, int]],
        scored: _Scored,
        values: torch.Tensor,
        coefficients: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Which steps enter the actor loss, and each one's weight on −log π."""
        settings = self.settings
        algorithm = settings.algorithm
        outcome = torch.tensor([1.0 if t.success else 0.0 for t in trajectories], device=coefficients.device)
        if algorithm == "a-ride":
            if settings.trajectory_filter != "off":
                with torch.no_grad():
                    last = torch.stack([scored.answer_state[end - 1] for _, end in spans])
                    value = torch.sigmoid(Critics.logit(self.critics.trajectory, last))
                score = value if settings.trajectory_filter == "value" else outcome - value
                chosen = top_trajectories(score, settings.trajectory_top)
                coefficients = coefficients.clone()
                for i, (start, end) in enumerate(spans):
                    if not chosen[i]:
                        coefficients[start:end] = 0.0
            # a step with weight 0 (``positive`` zeroes every advantage ≤ 0) would enter the actor loss
            # through the entropy bonus alone (module docstring, step 5)
            return coefficients != 0, coefficients
        keep = torch.zeros_like(coefficients, dtype=torch.bool)
        out = torch.zeros_like(coefficients)
        with torch.no_grad():
            first = torch.stack([scored.state[start] for start, _ in spans])
            instruction = torch.sigmoid(Critics.logit(self.critics.instruction, first))
        curriculum = top_trajectories(outcome - instruction, settings.digirl_top, above=0.0)
        for i, (start, end) in enumerate(spans):
            trajectory = trajectories[i]
            reward = 1.0 if trajectory.success else 0.0
            if algorithm == "digirl" and not curriculum[i]:
                continue
            if algorithm == "filtered-bc":
                keep[start:end] = filtered_bc_keep(bool(trajectory.success), end - start, keep.device)
                continue
            rewards = torch.tensor([s.reward for s in trajectory.steps], device=values.device)
            step_advantage = digirl_step_advantages(
                rewards, values[start:end], reward, self.settings.digirl_lambda
            )
            keep[start:end] = digirl_keep(
                step_advantage,
                final_reward=reward,
                instruction_value=float(instruction[i]),
                max_steps=trajectory.task.max_steps,
            )
        count = int(keep.sum())
        if count:
            out[keep] = 1.0
        return keep, out

    def _actor_step(
        self,
        inputs: Sequence[PolicyInput],
        texts: Sequence[str],
        keep: torch.Tensor,
        coefficients: torch.Tensor,
        weights: torch.Tensor,
    ) -> float:
        settings = self.settings
        a_ride = settings.algorithm == "a-ride"
        rows = [i for i in range(len(inputs)) if bool(keep[i])]
        if not rows:
            return 0.0
        total = len(rows)  # every algorithm's loss is a mean over the steps it trains
        self.policy.train(True)
        self.actor_optimiser.zero_grad(set_to_none=True)
        loss_sum = 0.0
        try:
            for start in range(0, len(rows), settings.micro_batch):
                chunk = rows[start : start + settings.micro_batch]
                logprob, entropy = self.policy.logprobs([inputs[i] for i in chunk], [texts[i] for i in chunk])
                index = torch.tensor(chunk, device=self.policy.device)
                if a_ride:
                    loss = a_ride_actor_loss(
                        logprob,
                        entropy,
                        coefficients[index],
                        weights[index],
                        entropy_coef=settings.entropy_coef,
                        steps=total,
                    )
                else:
                    loss = imitation_loss(logprob, steps=total)
                if not torch.isfinite(loss.detach()):
                    self.actor_optimiser.zero_grad(set_to_none=True)
                    self._finite("actor_loss", loss.detach())
                loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
                loss_sum += float(loss.detach())
        finally:
            self.policy.train(False)
        torch.nn.utils.clip_grad_norm_(self.policy.trainable_parameters(), settings.grad_clip)
        self.actor_optimiser.step()
        return loss_sum

    def _finite(self, quantity: str, values: torch.Tensor) -> None:
        """Refuse the update (``LearnerError``) where ``values`` hold a NaN or an infinity."""
        if not bool(torch.isfinite(values).all()):
            raise LearnerError(
                f"update {self.updates + 1} refused: the {quantity.replace('_', ' ')} is not finite (NaN or"
                " infinite); the learner is as it was before it. A learning rate too high, or damaged"
                " weights, do this",
                quantity=quantity,
                update=self.updates + 1,
            )

    # -- checkpoints -------------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        """Write everything ``load`` needs into ``folder`` (which must exist; see ``Checkpoints``)."""
        folder = Path(folder)
        self.policy.save_adapter(folder / _ADAPTER_DIR)
        tensors: dict[str, torch.Tensor] = {
            f"critics.{name}": value for name, value in self.critics.state_dict().items()
        }
        actor_tensors, actor_meta = optimizer_state(self.actor_optimiser, "optimiser.actor")
        critic_tensors, critic_meta = optimizer_state(self.critic_optimiser, "optimiser.critic")
        rng_tensors, rng_meta = rng_state(self.rng)
        tensors.update(actor_tensors)
        tensors.update(critic_tensors)
        tensors.update(rng_tensors)
        meta: dict[str, Any] = {
            "format": 1,
            "algorithm": self.settings.algorithm,
            "updates": self.updates,
            "progress": dict(self.progress),
            "actor_optimiser": actor_meta,
            "critic_optimiser": critic_meta,
            "rng": rng_meta,
        }
        save_tensors(folder / _STATE_FILE, tensors, meta)
        self.replay.save(folder / _REPLAY_FILE)

    def load(self, folder: str | Path) -> None:
        """Restore what ``save`` wrote into this learner (same policy model and settings).

        Raises ``CheckpointError`` for a missing or damaged checkpoint, or one of another algorithm or
        model; the learner is then left as it was.
        """
        before = self._memory()
        try:
            self._load(Path(folder))
        except BaseException:
            self._recall(before)
            raise

    def _memory(self) -> tuple[Any, ...]:
        """Copies of everything ``_load`` changes, for ``_recall``."""
        return (
            copy.deepcopy(self.critics.state_dict()),
            self.policy.adapter_state(),
            copy.deepcopy(self.actor_optimiser.state_dict()),
            copy.deepcopy(self.critic_optimiser.state_dict()),
            rng_state(self.rng),
            self.replay,
            self.updates,
            dict(self.progress),
        )

    def _recall(self, memory: tuple[Any, ...]) -> None:
        critics, adapter, actor, critic, (rng_tensors, rng_meta), self.replay, self.updates, self.progress = (
            memory
        )
        self.critics.load_state_dict(critics)
        self.policy.load_adapter_state(adapter)
        self.actor_optimiser.load_state_dict(actor)
        self.critic_optimiser.load_state_dict(critic)
        restore_rng_state(rng_tensors, rng_meta, self.rng)

    def _load(self, folder: Path) -> None:
        state_file = folder / _STATE_FILE
        tensors, meta = load_tensors(state_file)
        if meta.get("algorithm") != self.settings.algorithm:
            raise CheckpointError(
                f"the checkpoint in {str(folder)!r} was trained with {meta.get('algorithm')!r},"
                f" this run uses {self.settings.algorithm!r}",
                path=str(folder),
                reason="mismatch",
            )
        with _refusing(f"the learner state in {str(state_file)!r} is incomplete", state_file, "corrupt"):
            actor, critic, rng, updates = (
                meta[key] for key in ("actor_optimiser", "critic_optimiser", "rng", "updates")
            )
            updates = int(updates)
        if not 0 <= updates < 2**53:  # JSON's exact integers; a learner makes some thousands of updates
            raise CheckpointError(
                f"the learner state in {str(state_file)!r} counts {updates} updates, not a count a run makes",
                path=str(state_file),
                reason="corrupt",
            )
        adapter_file = folder / _ADAPTER_DIR / "adapter_model.safetensors"
        with _refusing(f"the adapter in {str(adapter_file)!r} cannot be read", adapter_file, "corrupt"):
            adapter = load_file(str(adapter_file))
        critics = {
            name.removeprefix("critics."): value
            for name, value in tensors.items()
            if name.startswith("critics.")
        }
        with _refusing(f"the critics in {str(folder)!r} do not fit this policy", folder, "mismatch"):
            self.critics.load_state_dict(critics)
        replay = ReplayBuffer.load(folder / _REPLAY_FILE)
        with _refusing(
            f"the adapter in {str(adapter_file)!r} does not fit this policy", adapter_file, "mismatch"
        ):
            self.policy.load_adapter_state(adapter)
        load_optimizer_state(self.actor_optimiser, tensors, actor, "optimiser.actor")
        load_optimizer_state(self.critic_optimiser, tensors, critic, "optimiser.critic")
        restore_rng_state(tensors, rng, self.rng)
        self.replay = replay
        self.updates = updates
        progress = meta.get("progress", {})
        self.progress = (
            {
                str(k): int(v)
                for k, v in progress.items()
                if isinstance(v, int) and not isinstance(v, bool) and v >= 0
            }
            if isinstance(progress, dict)
            else {}
        )


@contextlib.contextmanager
def _refusing(problem: str, path: Path, reason: str) -> Iterator[None]:
    """Turn a failure to read or fit a checkpoint's part into a ``CheckpointError``: ``problem (detail)``."""
    try:
        yield
    except (OSError, KeyError, TypeError, ValueError, RuntimeError, PolicyError) as exc:
        raise CheckpointError(f"{problem} ({exc})", path=str(path), reason=reason) from exc


def _input(trajectory: Trajectory, step: Step) -> PolicyInput:
    history = tuple(s.action for s in trajectory.steps[: step.index])
    return PolicyInput(goal=trajectory.task.goal, observation=step.observation, history=history)


def _spans(trajectories: Sequence[Trajectory]) -> list[tuple[int, int]]:
    spans = []
    start = 0
    for trajectory in trajectories:
        spans.append((start, start + len(trajectory.steps)))
        start += len(trajectory.steps)
    return spans


class _evaluation:  # used as a context manager, like torch.no_grad
    """Evaluation mode (no dropout) for the duration, then the mode the policy was in."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.training = policy.model.training

    def __enter__(self) -> None:
        self.policy.train(False)

    def __exit__(self, *exc: object) -> None:
        self.policy.train(self.training)
