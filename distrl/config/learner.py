"""``[learner]``: the algorithm and its hyper-parameters, each with its default, bounds and meaning (the
equations: ``distrl.learner``'s modules)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from distrl.config.fields import num_field, text_field

__all__ = ["LearnerSettings"]


@dataclass(frozen=True, kw_only=True)
class LearnerSettings:
    """The algorithm and its hyper-parameters (see the learner's docs for the equations)."""

    algorithm: Literal["a-ride", "digirl", "filtered-bc"] = "a-ride"
    """``a-ride`` (DistRL), ``digirl`` (AWR with hard filtering) or ``filtered-bc``."""
    device: str = text_field(
        "auto", r"auto|cpu|mps|cuda(:[0-9]+)?", "'auto', 'cpu', 'mps', 'cuda' or 'cuda:N'"
    )
    """Torch device for training: ``auto`` (CUDA when present), ``cpu``, ``cuda`` or ``cuda:N``."""
    lr_actor: float = num_field(1e-4, gt=0)
    """Adam learning rate of the adapter."""
    lr_critic: float = num_field(1e-4, gt=0)
    """Adam learning rate of the critics."""
    batch_size: int = num_field(8, gt=0)
    """Trajectories per update."""
    gamma: float = num_field(0.9, ge=0, le=1)
    """Discount factor γ."""
    retrace_lambda: float = num_field(1.0, ge=0, le=1)
    """λ in the truncated importance weight c = λ·min(1, ρ) of the step critic's Retrace targets."""
    advantage_lambda: float = num_field(0.5, ge=0, le=1)
    """A-RIDE: λ of the traces in the actor's advantages A_t = r_t + γ·v_{t+1} − V(s_t), where v are
    Retrace targets with c = advantage_lambda·min(1, ρ) (``retrace_lambda``: the critic's own targets).
    Below 1 a step is credited more with what its action changed at once and less with the rest of its
    episode, as GAE's λ does; at 1 every step of a successful episode gets nearly the same credit, wasted
    moves included (README, "Benchmarks": 0.5 trains better than 1 on ``tiny``)."""
    rho_clip: float = num_field(1.0, gt=0, allow_inf=True)
    """Upper clip of ρ in the actor loss; ``inf`` leaves it unclipped as in the paper's Eq. 1."""
    push_down_floor: float = num_field(0.0, ge=0, le=1)
    """A-RIDE: a step whose weight is negative (a negative advantage, an invalid answer) stops pushing its
    answer down once ρ = π/μ has fallen below this, as PPO's clip at 1 − ε stops a push down; 0 never
    stops (the push then fades only with ρ itself)."""
    entropy_coef: float = num_field(0.0, ge=0)
    """β, A-RIDE's entropy bonus coefficient. 0: no bonus, as the paper's released code defaults (β = 0.05
    when it is on). Measured on ``tiny-bc``: its answers' entropy is 0.01-0.02 nats per token, so the bonus
    buys no exploration, and β = 0.05 cost test success at temperature 1 in each of three paired fleet
    seeds (README, "A-RIDE against DigiRL in the fleet")."""
    invalid_penalty: float = num_field(1.0, ge=0)
    """Weight of the invalid-action penalty term."""
    advantages: Literal["decision", "positive", "normalised", "signed"] = "decision"
    """A-RIDE: which advantages weigh −log π in the actor loss.

    - ``decision`` (default): A_t signed, scaled to weighted mean magnitude 1 over the batch, on the
      answer's decision tokens (action type, points, typed text), and only its positive part on the
      format tokens every answer shares: failures teach too, and the shared format is never pushed down.
    - ``positive``: max(A_t, 0) on the whole answer, so the actor raises only the actions that did better
      than the step critic expected; scaled to mean 1 over the steps it keeps. The paper's released code
      clamps A the same way (then binarises it, losing the size). Only successes teach.
    - ``normalised``: A_t shifted and scaled to weighted mean 0 and deviation 1 over the batch, on the
      whole answer.
    - ``signed``: A_t as it is on the whole answer, Eq. 1 as written.

    Why not ``signed`` on the whole answer: an answer's log-prob sums over all its tokens, most of them
    the action format every answer shares. When most episodes fail most advantages are negative, and
    pushing those answers down pushes the shared format down on every update, so a small policy drifts
    into answers that do not parse (README, "Learner")."""
    kl_coef: float = num_field(1.0, ge=0)
    """κ_KL, the weight of the anchor: the KL(π ‖ π_ref) of each trained answer (per token, summed over
    the answer, as its log-prob is) to the starting policy π_ref (the model with its adapter disabled
    when training starts from a fresh adapter, else a frozen copy of the adapter the learner started
    from). 0 turns it off (no reference pass). It keeps the greedy policy, which users deploy, from
    drifting away from its start while training at temperature 1 (README, "Benchmarks": without it
    greedy train success fell 10 points in 80 updates; with 1 it held). ``decision`` advantages need it:
    with an anchor about 500 times weaker they unlearned the start (greedy train success 43% → 15%)."""
    priority_weights: tuple[float, float, float] = field(default=(50.0, 1.0, 0.01), metadata={"ge": 0})
    """w1, w2, w3 of the replay priority w1·mean|δ| + w2·mean ρ + w3·mean H."""
    priority_alpha: float = num_field(0.5, ge=0)
    """Sampling ∝ priority^α (0 is uniform)."""
    priority_beta: float = num_field(0.4, ge=0, le=1)
    """Initial importance-sampling exponent, annealed to 1."""
    priority_beta_updates: int = num_field(1000, gt=0)
    """Updates over which the importance-sampling exponent rises linearly to 1."""
    replay_capacity: int = num_field(10_000, gt=0)
    """Replay buffer size in steps."""
    grad_clip: float = num_field(1.0, gt=0)
    """Global gradient-norm clip."""
    critic_warmup_updates: int = num_field(20, ge=0)
    """The first updates train only the critics (``a-ride`` and ``digirl``), so that the actor's first
    advantages come from a critic that has learnt something."""
    lr_warmup_updates: int = num_field(0, ge=0)
    """The actor's learning rate rises linearly to ``lr_actor`` over its first this many updates (those
    after the critic warm-up): ``lr_actor``·k/N at its k-th; 0 starts at ``lr_actor``."""
    min_new_trajectories: int = num_field(4, ge=0)
    """An update waits until this many new trajectories have reached the learner since the last one (0:
    update continuously); it keeps the learner from overfitting a buffer that refills slowly."""
    ranks: int = num_field(1, gt=0)
    """Learner processes training each update together (data parallelism on ``torch.distributed``): the
    batch's steps are split across them and their gradients summed. Rank 0 is the learner that runs the
    fleet, the replay buffer and the checkpoints; the others only train, started as its child processes
    (under ``torchrun`` they are the processes it starts, on any machine: README, "Training on several
    GPUs")."""
    devices: tuple[str, ...] = ()
    """The torch device of each rank (``["cuda:0", "cuda:1"]``), as many as ``ranks``; empty: every rank
    on ``device``'s CPU, or rank r on ``cuda:r``. NCCL links CUDA ranks, gloo CPU ones."""
    collective_timeout_s: float = num_field(300.0, gt=0)
    """How long a rank waits for the others in any exchange before the run ends with an error naming
    the rank at fault (a rank that dies is noticed at once; this bounds a rank that hangs)."""
    micro_batch: int = num_field(16, gt=0)
    """Steps per forward pass in an update (gradients accumulate over the passes; bounds memory)."""
    gradient_checkpointing: bool = False
    """Recompute the model's activations in the actor's backward pass instead of keeping them: more
    compute, far less memory (a 2B policy keeps about 20 GB of activations per 1080×2400 step without
    it, so only a micro-batch of 1 or 2 fits an 80 GB GPU)."""
    digirl_lambda: float = num_field(0.5, ge=0, le=1)
    """λ of DigiRL's doubly robust step advantage (``algorithm = "digirl"`` only)."""
    digirl_top: float = num_field(1.0, gt=0, le=1)
    """DigiRL's curriculum: the share of each batch's trajectories its actor may learn from, the highest
    by instruction-level advantage r − V_instr(c) (and only those above 0). Its paper keeps the top p% of
    the replay data (its code: 10%); 1 keeps every trajectory above 0."""
    step_cost: float = num_field(0.0, ge=0)
    """A-RIDE's reward r: taken off every step (the paper's code: 0.05), so shorter successes score
    higher."""
    repeat_penalty: float = num_field(0.0, ge=0)
    """A-RIDE's reward r: taken off a step that repeats the previous valid action, times how many times
    in a row it has been repeated (the paper's code: 0.4)."""
    invalid_reward: float = num_field(0.0, ge=0)
    """A-RIDE's reward r: taken off a step whose answer is not an action (the paper's code: 1). Beside
    ``invalid_penalty``, the actor loss's own term for such answers."""
    trajectory_filter: Literal["off", "value", "advantage"] = "off"
    """A-RIDE's use of the trajectory critic V_traj(s_H, a_H): ``value`` trains the actor on the
    trajectories it values highest, ``advantage`` on the highest r − V_traj (the paper's released code),
    ``off`` on all (the critics always train on all)."""
    trajectory_top: float = num_field(0.5, gt=0, le=1)
    """The share of each batch's trajectories ``trajectory_filter`` keeps (rounded up)."""
