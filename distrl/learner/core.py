"""``Learner``: the core every algorithm runs on: batches, scoring, micro-batches, optimisers, the anchor,
guards and checkpoints. The algorithm (``distrl.learner.algorithm``: the contract;
``distrl.learner.algorithms``: the registry) owns its networks and its whole loss; the core names none.

One ``update()``:

1. Drop trajectories past ``max_policy_lag``; sample ``batch_size`` trajectories from the replay buffer
   (∝ priority^α where the algorithm is prioritised, else uniformly) with their importance-sampling
   weights w.
2. Score every step under the current weights, without gradients, in evaluation mode: log π(a_t|s_t),
   the entropy, the hidden states the algorithm's heads read (``distrl.learner.heads``) and
   ρ_t = π(a_t|s_t)/μ(a_t|s_t) from the stored behaviour log-prob. That is the ``Batch``.
3. ``algorithm.plan(batch)``: its networks' loss, advantages, values and new priorities. The networks'
   step (Adam, ``lr_critic``) follows.
4. ``algorithm.targets(batch, plan)``: what its actor loss reads, and the steps it trains. During the
   first ``critic_warmup_updates`` updates an algorithm with networks trains only them: the advantages
   of an untrained critic (V ≈ 0.5 everywhere) would push the behaviour-cloned start around.
5. Actor step (AdamW on the adapter, ``lr_actor``, ramped up over ``lr_warmup_updates``) over the steps
   trained, gradients accumulated over ``micro_batch`` chunks in training mode: the sum of the
   algorithm's named losses (``algorithm.loss`` on each ``Chunk``; a mean over the steps trained) plus
   the core's anchor ``kl_coef``·KL(π ‖ π_ref) (``losses.kl_anchor``) to the starting policy: the model
   with its adapter disabled when the learner starts from a fresh adapter, else a frozen copy of the adapter
   it started with (what the policy held when the learner was built; a resumed run builds it from the same
   settings, so its reference is the same).
6. New priorities go back to the buffer, β moves towards 1, and the update counter (the policy version
   the learner holds) goes up by one.

Guards: a NaN or infinity in any score, value, priority or loss, an algorithm that raises, or one whose
answer breaks the contract (a ``plan`` that is not a ``Plan``, ``trained`` that is not ``(N,)``, a loss
that is not a dict of scalar tensors with gradients) refuses the whole update (``LearnerError``), the
networks put back as they were. An algorithm that fails to start is a ``ConfigError`` naming it.
Checkpoints: ``save``/``load`` (``distrl.learner.checkpoint``), of what ``state_dict`` gives.

With ``ranks`` above 1 (``distrl.learner.ranks``) every update runs on all the ranks: each scores and
trains its share of the batch's steps, and the same step is taken everywhere. ``close`` stops them.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from distrl.config import LearnerSettings, checked_section, seed_problem
from distrl.errors import LearnerError
from distrl.learner.algorithm import Algorithm, Batch, Chunk, Targets
from distrl.learner.algorithms import build, configure
from distrl.learner.checkpoint import load_learner, restore_training_state, save_learner, training_state
from distrl.learner.contract import Guard, losses_problem, plan_problem, targets_problem
from distrl.learner.losses import kl_anchor, kl_to_reference
from distrl.learner.rank_processes import start_ranks
from distrl.learner.ranks import SYNC, UPDATE, Alone, Ranks, torchrun_rank
from distrl.learner.replay import ReplayBuffer, ReplaySample, ReplayStats
from distrl.learner.report import UpdateReport
from distrl.learner.scoring import score
from distrl.learner.tensor_files import restore_rng_state, rng_state
from distrl.policy import Policy, PolicyInput
from distrl.records import Trajectory

__all__ = ["Learner", "UpdateReport"]


class Learner:
    """Trains ``policy``'s adapter from trajectories with the algorithm ``settings.algorithm`` names (its
    settings from ``settings.tables``; ``ConfigError`` where they are wrong)."""

    def __init__(
        self,
        policy: Policy,
        settings: LearnerSettings,
        *,
        max_policy_lag: int | None = None,
        seed: int = 0,
        ranks: Ranks | None = None,
    ) -> None:
        """``ranks``: this process's place among the learner's ranks, where it is not rank 0 (which starts
        the others itself when ``settings.ranks`` is above 1, or joins them under ``torchrun``)."""
        self.policy = policy
        checked_section(settings, "learner")  # as the inventory checks them (built in Python, say)
        if problem := seed_problem(seed):
            raise ValueError(problem)
        self.settings = settings
        algorithm, options = configure(settings)
        self.updates = 0
        """Updates done: the version of the weights the learner holds."""
        self.progress: dict[str, int] = {}
        """The run's own counters that a checkpoint keeps for its resumption (``episodes``, ``env_steps``:
        where TensorBoard's x-axes go on from); set by the run before each checkpoint."""
        self.hidden = int(policy.model.get_input_embeddings().weight.shape[1])
        """H, the width of the hidden states the algorithm's networks read."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.algorithm: Algorithm = build(algorithm, options, features=self.hidden)
        if self.algorithm.networks is not None:
            self.algorithm.networks.to(policy.device)
        start = policy.adapter.state()
        fresh = all(not bool(t.any()) for name, t in start.items() if "lora_B" in name)
        self.reference: dict[str, torch.Tensor] | None = None if fresh else start
        """The anchor's π_ref: the adapter the learner started from, or None for a fresh one (then the
        model with its adapter disabled, the same policy without the adapter's cost)."""
        if settings.gradient_checkpointing:
            # non-reentrant: the frozen base's inputs need no gradient for the adapter's to flow
            model, kwargs = policy.model, {"use_reentrant": False}
            if hasattr(model, "activation_checkpointing_enable"):  # its newer name
                model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        self.actor_optimiser = torch.optim.AdamW(policy.trainable_parameters(), lr=settings.lr_actor)
        networks = self.networks
        self.critic_optimiser = (
            torch.optim.Adam(networks.parameters(), lr=settings.lr_critic) if networks is not None else None
        )
        """Adam over the algorithm's networks (None without networks)."""
        prioritised = self.algorithm.prioritised
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
        if ranks is None and (settings.ranks > 1 or torchrun_rank() is not None):
            ranks = start_ranks(policy, settings, seed=seed)
        self.ranks: Ranks | Alone = ranks or Alone()
        """The learner's ranks (``Alone``: this process alone), the one way every exchange goes."""
        try:
            self.ranks.check_model(policy)
            self.sync_ranks()  # every rank starts from rank 0's adapter and networks
        except BaseException:
            self.close()
            raise

    @property
    def networks(self) -> torch.nn.Module | None:
        """The algorithm's networks (its critic heads), or None."""
        return self.algorithm.networks

    def sync_ranks(self) -> None:
        """Every rank: rank 0's adapter, networks, optimisers and update count, copied to the others."""
        tensors: dict[str, torch.Tensor] = {}
        meta: dict[str, Any] = {}
        if self.ranks.leader:  # the others' own state is not sent
            tensors, meta = training_state(self.networks, self.actor_optimiser, self.critic_optimiser)
            tensors.update({f"adapter.{name}": t for name, t in self.policy.adapter.state().items()})
        tensors, meta, updates = self.ranks.sync(tensors, meta, self.updates)
        if not self.ranks.leader:
            self.policy.adapter.load_state(
                {
                    name.removeprefix("adapter."): t
                    for name, t in tensors.items()
                    if name.startswith("adapter.")
                }
            )
            restore_training_state(self.networks, self.actor_optimiser, self.critic_optimiser, tensors, meta)
            self.updates = updates

    def close(self) -> None:
        """Stop the other ranks (rank 0), or leave their group; idempotent. A learner of one rank holds
        nothing to close."""
        self.ranks.close()

    def __enter__(self) -> Learner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        return self.updates

    def add(self, trajectory: Trajectory) -> bool:
        """Put a scored trajectory in the replay buffer; False if it was refused: empty, too stale, or
        cut short by a device or policy failure (its outcome says nothing about the policy). A
        ``ValueError`` for one no update could train on as it is: unscored (``success`` None), a reward
        or behaviour log-prob that is not finite, or a step played by a version the learner has not
        reached (the fleet never hands on such a one; a caller building trajectories might)."""
        if trajectory.cut_short:
            return False
        if problem := _untrainable(trajectory, self.updates):
            raise ValueError(f"trajectory {trajectory.id!r} cannot be trained on: {problem}")
        return self.replay.add(trajectory, learner_version=self.updates)

    def stats(self) -> ReplayStats:
        return self.replay.stats()

    def state_dict(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """The learner's own state, as named tensors and their JSON meta: the algorithm's networks and
        both optimisers (``checkpoint.training_state``), the RNG, the update count, the run's progress
        counters and the algorithm's name. Its adapter and replay buffer are saved apart
        (``checkpoint.save_learner``). The tensors are its own, not copies."""
        tensors, meta = training_state(self.networks, self.actor_optimiser, self.critic_optimiser)
        rng_tensors, rng_meta = rng_state(self.rng)
        return {**tensors, **rng_tensors}, {
            "algorithm": self.settings.algorithm,
            "updates": self.updates,
            "progress": dict(self.progress),
            **meta,
            "rng": rng_meta,
        }

    def load_state_dict(self, tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
        """Put back what ``state_dict`` gave. Where it does not fit (a ``KeyError``, ``ValueError``,
        ``TypeError`` or ``RuntimeError``; ``CheckpointError`` for an unusable RNG) the learner may be
        partly changed: ``checkpoint.load_learner`` puts it back as it was."""
        restore_training_state(self.networks, self.actor_optimiser, self.critic_optimiser, tensors, meta)
        restore_rng_state(tensors, meta["rng"], self.rng)
        self.updates = int(meta["updates"])
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

    def save(self, folder: str | Path) -> None:
        """Write a checkpoint into ``folder`` (``checkpoint.save_learner``)."""
        save_learner(self, folder)

    def load(self, folder: str | Path) -> None:
        """Restore a checkpoint (``checkpoint.load_learner``); on ``CheckpointError`` nothing changed. The
        other ranks get what was loaded."""
        load_learner(self, folder)
        self.ranks.send(SYNC)
        self.sync_ranks()

    # -- one update --------------------------------------------------------------------------------------

    def update(self) -> UpdateReport | None:
        """One update from a sampled batch (module docstring); None while the buffer is empty."""
        started = time.monotonic()
        self.replay.prune(self.updates)
        if len(self.replay) == 0:
            return None
        sample = self.replay.sample(
            self.settings.batch_size, whole_groups=getattr(self.algorithm, "grouped", False)
        )
        self.ranks.send(
            UPDATE, updates=self.updates, trajectories=sample.trajectories, weights=sample.weights
        )
        try:
            return self.update_on(sample, started)
        except LearnerError:
            raise  # refused on every rank alike: they are still in step
        except BaseException:
            self.ranks.broken = True
            raise

    def update_on(self, sample: ReplaySample, started: float | None = None) -> UpdateReport:
        """One update from ``sample`` (``update`` draws it; another rank gets rank 0's draw)."""
        with self.policy.prompter.remembering_screens():  # each screen processed once, not twice
            return self._update(sample, time.monotonic() if started is None else started)

    def _update(self, sample: ReplaySample, started: float) -> UpdateReport:
        settings = self.settings
        algorithm = self.algorithm
        scored = score(
            self.policy, sample, micro_batch=settings.micro_batch, hidden=self.hidden, ranks=self.ranks
        )
        batch, steps, inputs, texts = scored.batch, scored.steps, scored.inputs, scored.texts
        for quantity, scores in (("logprob", batch.logprob), ("entropy", batch.entropy)):
            self._guard.finite(quantity, scores)
        plan = self._guard.asking("plan", algorithm.plan, batch)
        self._guard.contract("plan", plan_problem(plan, batch, self.networks is not None))
        for quantity, tensor in (("value", plan.values), ("advantage", plan.advantages)):
            if tensor is not None:
                self._guard.finite(quantity, tensor)
        if plan.priorities is not None:
            self._guard.finite("priority", torch.tensor(plan.priorities))

        # the networks step before the actor's loss is known: keep what they had, to undo a refused update
        networks = self.networks
        kept = (
            copy.deepcopy((networks.state_dict(), self.critic_optimiser.state_dict()))
            if networks is not None and self.critic_optimiser is not None
            else None
        )
        critic_loss = self._critic_step(plan.network_loss)
        try:
            if networks is not None and self.updates < settings.critic_warmup_updates:
                trained, loss, kl, named = 0, 0.0, 0.0, dict[str, float]()  # the networks first
            else:
                targets = self._guard.asking("targets", algorithm.targets, batch, plan)
                self._guard.contract("targets", targets_problem(targets, len(batch.logprob)))
                trained = int(targets.trained.sum())
                loss, kl, named = self._actor_step(batch, inputs, texts, targets)
        except LearnerError:
            if networks is not None and kept is not None and self.critic_optimiser is not None:
                networks.load_state_dict(kept[0])
                self.critic_optimiser.load_state_dict(kept[1])
            raise

        if self.ranks.leader:  # the buffer is rank 0's
            if plan.priorities is not None:
                self.replay.update_priorities(sample.keys, plan.priorities)
            self.replay.advance()
        self.updates += 1
        priorities = plan.priorities or [0.0]
        return UpdateReport(
            update=self.updates,
            trajectories=len(sample.trajectories),
            steps=len(steps),
            trained_steps=trained,
            actor_loss=loss,
            critic_loss=critic_loss,
            entropy=float(batch.entropy.mean()),
            mean_rho=float(batch.rhos.mean()),
            clipped_share=float(plan.stats.get("clipped_share", 0.0)),
            mean_advantage=float(plan.advantages.mean()) if plan.advantages is not None else 0.0,
            mean_value=float(plan.values.mean()) if plan.values is not None else 0.0,
            mean_priority=sum(priorities) / len(priorities),
            staleness=tuple(self.updates - 1 - step.policy_version for step in steps),
            wall_s=time.monotonic() - started,
            kl=kl,
            losses=named,
            stats=dict(plan.stats),
        )

    def _critic_step(self, loss: torch.Tensor | None) -> float:
        networks, optimiser = self.networks, self.critic_optimiser
        if loss is None or networks is None or optimiser is None:
            return 0.0
        self._guard.finite("critic_loss", loss.detach())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
        # the same loss on every rank: the mean keeps them in step
        self.ranks.reduce_gradients(list(networks.parameters()), mean=True)
        torch.nn.utils.clip_grad_norm_(networks.parameters(), self.settings.grad_clip)
        optimiser.step()
        return float(loss.detach())

    def _actor_step(
        self, batch: Batch, inputs: Sequence[PolicyInput], texts: Sequence[str], targets: Targets
    ) -> tuple[float, float, dict[str, float]]:
        """The actor's step over the steps ``targets`` trains; its loss, mean KL and named losses (0, 0, {}
        if none). With several ranks each takes its share of those steps, and their gradients are summed
        before the step (a non-finite loss on any rank refuses the update on all)."""
        settings = self.settings
        trained = targets.trained
        rows = [i for i in range(len(inputs)) if bool(trained[i])]
        if not rows:
            return 0.0, 0.0, {}
        total = len(rows)  # the loss is a mean over the steps trained, on whichever rank each is
        first, stop = self.ranks.shard(total)
        mine = rows[first:stop]
        anchored = settings.kl_coef > 0
        self.policy.train(True)
        self.actor_optimiser.zero_grad(set_to_none=True)
        loss_sum = kl_sum = 0.0
        named: dict[str, float] = {}
        broken = ""
        refused: LearnerError | None = None
        """This rank's refusal of the update, raised once every rank knows that one refused."""
        try:
            for start in range(0, len(mine), settings.micro_batch):
                chunk = mine[start : start + settings.micro_batch]
                chunk_inputs, chunk_texts = [inputs[i] for i in chunk], [texts[i] for i in chunk]
                reference = (
                    self.policy.reference_log_probs(chunk_inputs, chunk_texts, self.reference)
                    if anchored
                    else None
                )
                scores = self.policy.token_scores(chunk_inputs, chunk_texts)
                index = torch.tensor(chunk, device=self.policy.device)
                part = Chunk(
                    rows=index,
                    token_logprob=scores.logprob,
                    answer=scores.answer,
                    decision=scores.decision,
                    entropy=scores.entropy,
                    steps=total,
                )
                try:
                    losses = self._guard.asking("loss", self.algorithm.loss, batch, targets, part)
                    self._guard.contract("loss", losses_problem(losses))
                except LearnerError as exc:
                    refused = exc
                    break
                broken = next((name for name, t in losses.items() if not torch.isfinite(t.detach())), "")
                if broken:
                    break
                loss = torch.stack(list(losses.values())).sum()
                if reference is not None:
                    kl = kl_to_reference(scores.log_probs, reference, scores.answer)
                    loss = loss + kl_anchor(kl, batch.weights[index], kl_coef=settings.kl_coef, steps=total)
                    kl_sum += float(kl.detach().sum())
                if not torch.isfinite(loss.detach()):  # each loss finite: their sum, or the anchor, is not
                    broken = "anchor" if reference is not None else "sum"
                    break
                loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
                loss_sum += float(loss.detach())
                for name, value in losses.items():
                    named[name] = named.get(name, 0.0) + float(value.detach())
        finally:
            self.policy.train(False)
        failed, loss_sum, kl_sum = self.ranks.total(
            [0.0 if not (broken or refused) else 1.0, loss_sum, kl_sum]
        )
        if failed:
            self.actor_optimiser.zero_grad(set_to_none=True)
            if refused is not None:
                raise refused
            if broken == "anchor":
                self._guard.finite("kl", torch.tensor(math.nan), "the loss with its KL anchor")
            if broken == "sum":
                self._guard.finite(
                    "actor_loss", torch.tensor(math.nan), f"the sum of the {self.algorithm.name!r} losses"
                )
            if broken:
                self._guard.finite(
                    "actor_loss", torch.tensor(math.nan), f"the {self.algorithm.name!r} loss {broken!r}"
                )
            raise LearnerError(
                f"update {self.updates + 1} refused: the algorithm {self.algorithm.name!r}'s loss failed on"
                " another rank (it raised, broke its contract, or it or its KL anchor was not finite there);"
                " the learner is as it was before it",
                quantity="loss",
                update=self.updates + 1,
            )
        self.ranks.reduce_gradients(self.policy.trainable_parameters(), mean=False)
        torch.nn.utils.clip_grad_norm_(self.policy.trainable_parameters(), settings.grad_clip)
        for group in self.actor_optimiser.param_groups:
            group["lr"] = self._actor_lr()
        self.actor_optimiser.step()
        return loss_sum, kl_sum / total, named

    def _actor_lr(self) -> float:
        """``lr_actor``, ramped up over the actor's first ``lr_warmup_updates`` updates."""
        warmup = self.settings.lr_warmup_updates
        warming = self.settings.critic_warmup_updates if self.networks is not None else 0
        done = self.updates - warming  # the actor's updates before this one
        return self.settings.lr_actor * (min(1.0, (done + 1) / warmup) if warmup else 1.0)

    @property
    def _guard(self) -> Guard:
        """The refusals of the update under way."""
        return Guard(update=self.updates + 1, algorithm=self.algorithm.name, source=self.settings.algorithm)


def _untrainable(trajectory: Trajectory, updates: int) -> str:
    """Why ``trajectory`` is no data for an update at version ``updates``, or ""."""
    if trajectory.success is None:
        return "it has no score (success is None): score it first, or leave it out"
    for step in trajectory.steps:
        at = f"step {step.index}"
        if not math.isfinite(step.reward):
            return f"{at}'s reward is {step.reward}, not a finite number"
        if not math.isfinite(step.behaviour_logprob):
            return f"{at}'s behaviour log-prob is {step.behaviour_logprob}, not a finite number"
        if not 0 <= step.policy_version <= updates:
            return f"{at} was played by policy version {step.policy_version}; the learner is at {updates}"
    return ""
