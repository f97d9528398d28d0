"""The inventory's settings: one frozen dataclass per table of ``hosts.toml``, each field with its
default, its bounds and its meaning (``hosts.example.toml`` shows them all). ``distrl.config.reader``
fills them from TOML and checks them.

Over 450 lines, one module: a list of dataclasses, each field with its default, bounds and meaning;
there is no logic to split off.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from distrl.errors import ConfigError

T = TypeVar("T")

LOCAL_ADDRESS = "localhost"
"""A host at this address runs its worker as a local subprocess unless ``transport`` says otherwise."""


def address_problem(address: str) -> str:
    """Why ``address`` is neither an IP address nor a host name (empty: it is one)."""
    try:
        ipaddress.ip_address(address.removeprefix("[").removesuffix("]"))
    except ValueError:
        pass
    else:
        return ""
    if len(address) > 253:
        return f"is {len(address)} characters long, more than a host name's 253"
    for label in address.removesuffix(".").split("."):
        if not label:
            return "has an empty part between dots: not a host name"
        if len(label) > 63:
            return f"has a part of {len(label)} characters, more than a host name's 63"
        if not _LABEL.fullmatch(label):
            return (
                f"has the part {label!r}: a host name is ASCII letters, digits, '-' and '_'"
                " (not starting or ending with '-'; internationalised names in their xn-- form)"
            )
    return ""


_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?")


def _num(
    default: float,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    allow_inf: bool = False,
) -> Any:
    """A numeric field with its bounds, checked at load time. Infinity is refused unless allowed."""
    return field(default=default, metadata={"ge": ge, "gt": gt, "le": le, "allow_inf": allow_inf})


def _text(default: str, pattern: str, meaning: str) -> Any:
    """A string field that must match ``pattern`` (empty always passes); ``meaning`` is for the error."""
    return field(default=default, metadata={"pattern": re.compile(pattern), "meaning": meaning})


_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
_NAME_MEANING = "a name (letters, digits, '.', '_', '-'; at most 64)"


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """What a run does and where its output goes."""

    name: str = _text("distrl", _NAME, _NAME_MEANING)
    """Run name, used for the output folder and in logs."""
    mode: Literal["async", "sync"] = "async"
    """``async`` (DistRL) or ``sync`` (DigiRL-style rounds with a barrier, the baseline)."""
    suite: Literal["general", "web_shopping"] = "general"
    """Task suite to train on."""
    output_dir: str = "runs"
    """Folder for checkpoints, logs and episodes; a relative path starts at the inventory's folder."""
    seed: int = _num(0, ge=0)
    """Seed for task sampling, the simulated phones and the learner."""
    max_trajectories: int = _num(0, ge=0)
    """Stop after this many trajectories have reached the learner; 0 for no limit."""
    duration_s: float = _num(0.0, ge=0)
    """Stop after this many seconds of wall time; 0 for no limit."""
    max_policy_lag: int = _num(32, ge=0)
    """Drop trajectories begun by a policy more than this many versions behind the learner, on arrival
    and later from the replay buffer (Retrace corrects for what stays). The learner updates every
    ``learner.min_new_trajectories`` arrivals, so an episode as long as D arrivals is about
    D / min_new_trajectories versions old when it arrives: 32 devices and 4 give 8. With 4, the old
    default, 32 sim phones had 90% of their trajectories refused, and success fell (README)."""
    publish_every: int = _num(1, gt=0)
    """Publish new weights to the workers every this many learner updates."""
    publish_dtype: Literal["float32", "bfloat16"] = "bfloat16"
    """Precision of the weights sent to workers: ``bfloat16`` (diffs a fifth of a float32 adapter's size;
    workers run in bfloat16 on GPUs anyway) or ``float32`` (bitwise the learner's weights)."""
    checkpoint_every: int = _num(50, ge=0)
    """Write a checkpoint every this many learner updates (and on clean shutdown); 0 for shutdown only."""
    checkpoint_every_s: float = _num(1800.0, ge=0)
    """Also write one after an update when this many seconds have passed since the last (0: no timer);
    it bounds the work lost to a crash when updates are slow."""
    keep_checkpoints: int = _num(3, gt=0)
    """How many of the latest checkpoints stay on disk; older ones are deleted."""
    record_episodes: float = _num(1.0, ge=0, le=1)
    """Share of the episodes written to ``<output>/episodes`` (steps as JSON lines, screens as JPEG;
    ``distrl.episodes``): 1 for all, 0 for none, chosen by a hash of the episode id."""
    episodes_max_gb: float = _num(2.0, ge=0)
    """Stop writing episodes once that folder holds this many GB (0: no limit). About 1 MB an episode of
    10 steps on a 1080×2400 phone: the default keeps a day-long run's folder bounded."""
    max_restarts: int = _num(5, ge=0)
    """A host link that fails more often than this in a row is given up; a device that does rests (10 s,
    doubling up to 5 minutes) and is tried again, and after this many rests is retired."""


@dataclass(frozen=True, kw_only=True)
class TaskSettings:
    """Where the tasks come from and how they are scored (``distrl.tasks``)."""

    files: tuple[str, ...] = ()
    """Task files (``.jsonl``, or ``.txt`` with one instruction a line; relative paths start at the
    inventory's folder). When given, the run's tasks are theirs, not ``run.suite``'s."""
    split: str = _text("train", r"[A-Za-z0-9_-]{1,32}", "a split name such as train or test")
    """The split ``run`` trains on."""
    max_steps: int = _num(10, ge=1, le=1000)
    """Step limit of the file tasks that give none."""
    evaluator: Literal["auto", "sim", "adb", "judge"] = "auto"
    """What scores the tasks that do not choose: ``auto`` gives the sim's tasks ``sim`` on simulated
    phones and the judge elsewhere, a file task with checks ``adb``, and a bare goal the judge. ``sim``
    also says that adb devices are ``python -m distrl sim``. A run refuses to start when some task
    cannot be scored (``distrl.tasks.evaluators``)."""
    curriculum: Literal["uniform", "learnability"] = "uniform"
    """Which task ``run`` plays next (``distrl.tasks.draw``): ``uniform`` (every task once in a shuffled
    order, again and again) or ``learnability`` (every task once, then each in proportion to p̂(1 − p̂),
    its success over its last 8 scored episodes: more of the tasks the policy solves now and then)."""
    randomise: float = _num(0.0, ge=0, le=1)
    """Share of ``run``'s episodes of a sim suite's train tasks that play a drawn task instead: the same
    template with fresh values and wordings, never held-out ones, as ``pretrain --randomise`` does
    (``distrl.sim.suites.drawn_task``). RL then learns on more goals than the train split's, and the test
    split's held-out values and wordings are nearer to what it learnt on. Only a task source that draws
    (the sim's suites) can: task files refuse a share above 0."""


@dataclass(frozen=True, kw_only=True)
class JudgeSettings:
    """The VLM judge (``distrl.tasks.judge``): any OpenAI-compatible chat-completions endpoint."""

    base_url: str = _text("", r"https?://[^\s]+", "an http:// or https:// URL")
    """The endpoint's base URL (``https://api.openai.com/v1``; vLLM's ``http://host:8000/v1``). Empty:
    no judge."""
    model: str = ""
    """The model to ask (``gpt-4o``, ``gemini-1.5-pro``)."""
    api_key_env: str = _text("", r"[A-Za-z_][A-Za-z0-9_]*", "an environment variable name")
    """The environment variable that holds the API key, on the learner's machine; empty for servers
    that want none. The key itself never goes in the inventory, logs or checkpoints."""
    max_concurrency: int = _num(8, gt=0, le=1024)
    """Most calls in flight at once."""
    timeout_s: float = _num(60.0, gt=0)
    """Deadline of one call, in seconds: the connect, the request and the whole answer."""
    max_retries: int = _num(5, ge=0, le=100)
    """Tries again after a 429, a 5xx, a timeout or a lost connection, with exponential backoff."""
    max_backoff_s: float = _num(30.0, ge=0)
    """Longest wait between two tries of one call, in seconds; a server's ``Retry-After`` beyond it is
    cut to it."""
    max_response_bytes: int = _num(1 << 20, ge=1024)
    """Largest answer read, in bytes; a bigger one is dropped unread past it (no verdict)."""
    unreachable_s: float = _num(300.0, ge=0)
    """Longest the judge may give no verdict, in seconds from its first failed call: then ``run`` and
    ``collect`` stop, keeping the episodes that wait for it, unscored. 0: wait for ever."""
    screens: int = _num(1, ge=1, le=16)
    """The last screenshots shown to the judge (the paper's judge saw the final one)."""
    cache: str = ""
    """Folder of cached verdicts; empty for ``<run.output_dir>/judge-cache`` (shared by the runs there)."""

    @property
    def configured(self) -> bool:
        return bool(self.base_url)

    def api_key(self, source: str | None = None) -> str:
        """The key from ``api_key_env``; ``ConfigError`` (naming the inventory ``source``) when that
        variable is not set."""
        import os

        if not self.api_key_env:
            return ""
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise ConfigError.at(
                "judge.api_key_env",
                f"the environment variable {self.api_key_env} is not set (or empty)",
                source,
            )
        return key


@dataclass(frozen=True, kw_only=True)
class Timeouts:
    """One limit per external operation, in seconds."""

    ssh_connect_s: float = _num(15.0, gt=0)
    """TCP connect and SSH key exchange with a host."""
    ssh_login_s: float = _num(30.0, gt=0)
    """SSH authentication."""
    worker_start_s: float = _num(120.0, gt=0)
    """From starting ``python -m distrl worker`` to its hello (includes importing torch)."""
    handshake_s: float = _num(30.0, gt=0)
    """Hello exchange and the first policy push."""
    heartbeat_interval_s: float = _num(5.0, gt=0)
    """How often each side sends a heartbeat."""
    heartbeat_timeout_s: float = _num(30.0, gt=0)
    """A link silent this long is treated as lost."""
    weight_push_s: float = _num(120.0, gt=0)
    """Sending one weight update to one worker and receiving its ack."""
    device_boot_s: float = _num(180.0, gt=0)
    """Booting or reconnecting a device until it answers."""
    device_reset_s: float = _num(60.0, gt=0)
    """Resetting a device to a task's start state (snapshot load)."""
    device_observe_s: float = _num(30.0, gt=0)
    """Taking one screenshot."""
    device_act_s: float = _num(30.0, gt=0)
    """Performing one gesture (tap, swipe, text, key)."""
    policy_step_s: float = _num(120.0, gt=0)
    """One batched inference call on a worker."""
    episode_s: float = _num(1800.0, gt=0)
    """One whole episode, from request to trajectory."""
    cleanup_s: float = _num(10.0, gt=0)
    """Closing anything (links, devices, processes) on shutdown or error."""
    deploy_step_s: float = _num(1800.0, gt=0)
    """One step of ``python -m distrl deploy`` on a host: pushing the wheel, making the virtualenv,
    installing torch and distrl (downloads included)."""


@dataclass(frozen=True, kw_only=True)
class LearnerSettings:
    """The algorithm and its hyper-parameters (see the learner's docs for the equations)."""

    algorithm: Literal["a-ride", "digirl", "filtered-bc"] = "a-ride"
    """``a-ride`` (DistRL), ``digirl`` (AWR with hard filtering) or ``filtered-bc``."""
    device: str = _text("auto", r"auto|cpu|mps|cuda(:[0-9]+)?", "'auto', 'cpu', 'mps', 'cuda' or 'cuda:N'")
    """Torch device for training: ``auto`` (CUDA when present), ``cpu``, ``cuda`` or ``cuda:N``."""
    lr_actor: float = _num(1e-4, gt=0)
    """Adam learning rate of the adapter."""
    lr_critic: float = _num(1e-4, gt=0)
    """Adam learning rate of the critics."""
    batch_size: int = _num(8, gt=0)
    """Trajectories per update."""
    gamma: float = _num(0.9, ge=0, le=1)
    """Discount factor γ."""
    retrace_lambda: float = _num(1.0, ge=0, le=1)
    """λ in the truncated importance weight c = λ·min(1, ρ) of the step critic's Retrace targets."""
    advantage_lambda: float = _num(0.5, ge=0, le=1)
    """A-RIDE: λ of the traces in the actor's advantages A_t = r_t + γ·v_{t+1} − V(s_t), where v are
    Retrace targets with c = advantage_lambda·min(1, ρ) (``retrace_lambda``: the critic's own targets).
    Below 1 a step is credited more with what its action changed at once and less with the rest of its
    episode, as GAE's λ does; at 1 every step of a successful episode gets nearly the same credit, wasted
    moves included (README, "Benchmarks": 0.5 trains better than 1 on ``tiny``)."""
    rho_clip: float = _num(1.0, gt=0, allow_inf=True)
    """Upper clip of ρ in the actor loss; ``inf`` leaves it unclipped as in the paper's Eq. 1."""
    push_down_floor: float = _num(0.0, ge=0, le=1)
    """A-RIDE: a step whose weight is negative (a negative advantage, an invalid answer) stops pushing its
    answer down once ρ = π/μ has fallen below this, as PPO's clip at 1 − ε stops a push down; 0 never
    stops (the push then fades only with ρ itself)."""
    entropy_coef: float = _num(0.0, ge=0)
    """β, A-RIDE's entropy bonus coefficient. 0: no bonus, as the paper's released code defaults (β = 0.05
    when it is on). Measured on ``tiny-bc``: its answers' entropy is 0.01-0.02 nats per token, so the bonus
    buys no exploration, and β = 0.05 cost test success at temperature 1 in each of three paired fleet
    seeds (README, "A-RIDE against DigiRL in the fleet")."""
    invalid_penalty: float = _num(1.0, ge=0)
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
    kl_coef: float = _num(1.0, ge=0)
    """κ_KL, the weight of the anchor: the KL(π ‖ π_ref) of each trained answer (per token, summed over
    the answer, as its log-prob is) to the starting policy π_ref (the model with its adapter disabled
    when training starts from a fresh adapter, else a frozen copy of the adapter the learner started
    from). 0 turns it off (no reference pass). It keeps the greedy policy, which users deploy, from
    drifting away from its start while training at temperature 1 (README, "Benchmarks": without it
    greedy train success fell 10 points in 80 updates; with 1 it held). ``decision`` advantages need it:
    with an anchor about 500 times weaker they unlearned the start (greedy train success 43% → 15%)."""
    priority_weights: tuple[float, float, float] = field(default=(50.0, 1.0, 0.01), metadata={"ge": 0})
    """w1, w2, w3 of the replay priority w1·mean|δ| + w2·mean ρ + w3·mean H."""
    priority_alpha: float = _num(0.5, ge=0)
    """Sampling ∝ priority^α (0 is uniform)."""
    priority_beta: float = _num(0.4, ge=0, le=1)
    """Initial importance-sampling exponent, annealed to 1."""
    priority_beta_updates: int = _num(1000, gt=0)
    """Updates over which the importance-sampling exponent rises linearly to 1."""
    replay_capacity: int = _num(10_000, gt=0)
    """Replay buffer size in steps."""
    grad_clip: float = _num(1.0, gt=0)
    """Global gradient-norm clip."""
    critic_warmup_updates: int = _num(20, ge=0)
    """The first updates train only the critics (``a-ride`` and ``digirl``), so that the actor's first
    advantages come from a critic that has learnt something."""
    lr_warmup_updates: int = _num(0, ge=0)
    """The actor's learning rate rises linearly to ``lr_actor`` over its first this many updates (those
    after the critic warm-up): ``lr_actor``·k/N at its k-th; 0 starts at ``lr_actor``."""
    min_new_trajectories: int = _num(4, ge=0)
    """An update waits until this many new trajectories have reached the learner since the last one (0:
    update continuously); it keeps the learner from overfitting a buffer that refills slowly."""
    ranks: int = _num(1, gt=0)
    """Learner processes training each update together (data parallelism on ``torch.distributed``): the
    batch's steps are split across them and their gradients summed. Rank 0 is the learner that runs the
    fleet, the replay buffer and the checkpoints; the others only train, started as its child processes
    (under ``torchrun`` they are the processes it starts, on any machine: README, "Training on several
    GPUs")."""
    devices: tuple[str, ...] = ()
    """The torch device of each rank (``["cuda:0", "cuda:1"]``), as many as ``ranks``; empty: every rank
    on ``device``'s CPU, or rank r on ``cuda:r``. NCCL links CUDA ranks, gloo CPU ones."""
    collective_timeout_s: float = _num(300.0, gt=0)
    """How long a rank waits for the others in any exchange before the run ends with an error naming
    the rank at fault (a rank that dies is noticed at once; this bounds a rank that hangs)."""
    micro_batch: int = _num(16, gt=0)
    """Steps per forward pass in an update (gradients accumulate over the passes; bounds memory)."""
    gradient_checkpointing: bool = False
    """Recompute the model's activations in the actor's backward pass instead of keeping them: more
    compute, far less memory (a 2B policy keeps about 20 GB of activations per 1080×2400 step without
    it, so only a micro-batch of 1 or 2 fits an 80 GB GPU)."""
    digirl_lambda: float = _num(0.5, ge=0, le=1)
    """λ of DigiRL's doubly robust step advantage (``algorithm = "digirl"`` only)."""
    digirl_top: float = _num(1.0, gt=0, le=1)
    """DigiRL's curriculum: the share of each batch's trajectories its actor may learn from, the highest
    by instruction-level advantage r − V_instr(c) (and only those above 0). Its paper keeps the top p% of
    the replay data (its code: 10%); 1 keeps every trajectory above 0."""
    step_cost: float = _num(0.0, ge=0)
    """A-RIDE's reward r: taken off every step (the paper's code: 0.05), so shorter successes score
    higher."""
    repeat_penalty: float = _num(0.0, ge=0)
    """A-RIDE's reward r: taken off a step that repeats the previous valid action, times how many times
    in a row it has been repeated (the paper's code: 0.4)."""
    invalid_reward: float = _num(0.0, ge=0)
    """A-RIDE's reward r: taken off a step whose answer is not an action (the paper's code: 1). Beside
    ``invalid_penalty``, the actor loss's own term for such answers."""
    trajectory_filter: Literal["off", "value", "advantage"] = "off"
    """A-RIDE's use of the trajectory critic V_traj(s_H, a_H): ``value`` trains the actor on the
    trajectories it values highest, ``advantage`` on the highest r − V_traj (the paper's released code),
    ``off`` on all (the critics always train on all)."""
    trajectory_top: float = _num(0.5, gt=0, le=1)
    """The share of each batch's trajectories ``trajectory_filter`` keeps (rounded up)."""


EXPERT = "expert"
"""``[policy] model`` naming the simulated phone's scripted expert instead of a model."""
TINY_BC = "tiny-bc"
"""``[policy] model`` naming ``tiny`` behaviour-cloned on the sim's expert, shipped with distrl."""
BUILT_IN_MODELS = frozenset({"tiny", TINY_BC, EXPERT})
"""``[policy] model`` values that name something built in, not a folder."""


@dataclass(frozen=True, kw_only=True)
class PolicySettings:
    """The policy model, its adapter, decoding and batched inference."""

    model: str = "tiny"
    """``tiny`` (built in), a local folder that ``transformers`` can load (a relative path starts at the
    inventory's folder; every host must have the model at that path), or ``expert``: the simulated
    phone's scripted expert, which needs no model and cannot be trained (``collect`` on sim devices only:
    demonstrations, and benchmarks of the fleet without inference cost)."""
    adapter: str = ""
    """A PEFT adapter folder to start from; empty for a fresh LoRA adapter."""
    lora_rank: int = _num(16, gt=0)
    """LoRA rank r."""
    lora_alpha: float = _num(32.0, gt=0)
    """LoRA scaling α."""
    lora_dropout: float = _num(0.05, ge=0, le=1)
    """Dropout on the LoRA path."""
    lora_targets: tuple[str, ...] = ("all-linear",)
    """Module names to adapt, or ``["all-linear"]``."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Weights' dtype; ``auto`` is bfloat16 where the device supports it, else float32."""
    temperature: float = _num(1.0, ge=0)
    """Sampling temperature (0 is greedy)."""
    greedy_share: float = _num(0.0, ge=0, le=1)
    """Share of a run's episodes played greedily (temperature 0), spread evenly among the others (at
    ``temperature``): greedy decoding is what users deploy, and its episodes train it where it acts."""
    max_new_tokens: int = _num(128, gt=0)
    """Longest action text generated."""
    history: int = _num(1, ge=0)
    """Previous actions shown in the prompt."""
    max_image_pixels: int = _num(0, ge=0)
    """Most pixels a screenshot is resized to before the model sees it; 0 keeps the model's own setting.
    Qwen2-VL's default turns a 1080×2400 screen into about 3,300 image tokens; 1,003,520 (1280 tokens of
    28×28 pixels) is a common cap for GUI agents."""
    max_batch: int = _num(16, gt=0)
    """Most observations answered by one inference call on a worker."""
    max_wait_s: float = _num(0.02, ge=0)
    """Longest a request waits for its batch to fill."""
    merge_adapter: bool = True
    """Workers fold the adapter into the base weights at each new version (``Adapter.serve_merged``):
    an answer then costs what the base model's does (workers never train). ``false`` applies it unmerged,
    as the learner does."""
    engine: Literal["eager", "compiled"] = "eager"
    """What decodes answers (``distrl.policy.engine``): ``eager``, transformers' ``generate`` op by op; or
    ``compiled``, a static KV cache and a decode step compiled by ``torch.compile`` (CUDA graphs on a GPU),
    batches padded to powers of two. ``compiled`` compiles each batch size the first time it meets it
    (tens of seconds on a CPU) and samples from the same distributions."""


@dataclass(frozen=True, kw_only=True)
class SimSettings:
    """The built-in simulated phones: their screens, their latency and their faults."""

    width: int = _num(1080, ge=240, le=4096)
    """Screen width in pixels."""
    height: int = _num(2400, ge=320, le=8192)
    """Screen height in pixels (portrait: at least the width)."""
    image_format: Literal["jpeg", "png"] = "jpeg"
    """How in-process sim devices encode screenshots (over adb the sim sends PNG, as ``screencap -p``)."""
    jpeg_quality: int = _num(85, ge=1, le=95)
    """JPEG quality of screenshots."""
    nuisances: bool = True
    """Pop-ups and slow page loads, as real phones have them."""
    latency: Literal["calibrated", "off"] = "calibrated"
    """Per-operation delays calibrated from real emulators, or none."""
    time_scale: float = _num(1.0, ge=0)
    """Multiplies every simulated delay (0.1 runs ten times faster than a real emulator; 0 is no delay)."""
    task_spread: float = _num(1.0, ge=1)
    """How much slower the slowest task's app is than the fastest's: each task's delays are multiplied
    by a factor in [1, task_spread], log-uniform and fixed per task (``latency.task_slowness``). 1 makes
    every app equally fast; the paper's tasks span up to 100× in duration."""
    hang_rate: float = _num(0.0, ge=0, le=1)
    """Chance per operation that the device stops answering (the operation times out)."""
    crash_rate: float = _num(0.0, ge=0, le=1)
    """Chance per operation that the device crashes (down until reset reboots it)."""
    offline_rate: float = _num(0.0, ge=0, le=1)
    """Chance per operation that the device goes offline (until reset)."""
    white_frame_rate: float = _num(0.0, ge=0, le=1)
    """Chance per screenshot of an all-white frame."""


EMULATOR_FLAGS = ("-no-window", "-no-audio", "-no-boot-anim", "-gpu", "swiftshader_indirect")
"""The default flags of a launched emulator: headless, silent, software GPU (runs on any host)."""


@dataclass(frozen=True, kw_only=True)
class Devices:
    """The devices one host drives."""

    sim: int = _num(0, ge=0, le=4096)
    """Number of built-in simulated phones."""
    adb_serials: tuple[str, ...] = ()
    """Devices by adb serial (``emulator-5554``, a USB serial, ``host:port``)."""
    emulator_ports: tuple[int, ...] = ()
    """Emulators by console port (even, 5554–5682); the serial is ``emulator-<port>``."""
    snapshot: str = _text(
        "default_boot", r"[A-Za-z0-9._-]+", "a snapshot name (letters, digits, '.', '_', '-')"
    )
    """The emulator snapshot every reset loads (of attached and launched emulators alike)."""
    avd: str = _text("", r"[A-Za-z0-9._-]+", "an AVD name (letters, digits, '.', '_', '-')")
    """An Android Virtual Device the worker launches ``count`` emulators of; empty for none."""
    count: int = _num(1, ge=1, le=64)
    """How many emulators of ``avd`` the worker launches (all read-only instances of the one AVD)."""
    first_port: int = _num(5554, ge=5554, le=5682)
    """Console port of the first launched emulator; the k-th gets ``first_port + 2k`` (adb: one more)."""
    sdk_root: str = ""
    """The Android SDK on the host; empty for ``$ANDROID_SDK_ROOT``, else ``$ANDROID_HOME``."""
    emulator_flags: tuple[str, ...] = EMULATOR_FLAGS
    """Flags for every launched emulator, besides ``-avd``, ``-port``, ``-read-only``, ``-snapshot``."""
    memory_mb: int = _num(0, ge=0)
    """RAM of each launched emulator (``-memory``); 0 for the AVD's own setting."""
    cores: int = _num(0, ge=0)
    """CPU cores of each launched emulator (``-cores``); 0 for the AVD's own setting."""
    max_relaunches: int = _num(5, ge=0)
    """Launches in a row that may fail (no boot, or dead before its next reset) before an emulator is
    given up; each waits longer than the last."""

    @property
    def launched(self) -> tuple[str, ...]:
        """The serials of the emulators the worker launches: ``emulator-<first_port + 2k>``."""
        if not self.avd:
            return ()
        return tuple(f"emulator-{self.first_port + 2 * k}" for k in range(self.count))

    @property
    def serials(self) -> tuple[str, ...]:
        """Every device's name on its host: ``sim-0``…, then adb serials, then emulators (attached, then
        launched)."""
        return (
            tuple(f"sim-{i}" for i in range(self.sim))
            + self.adb_serials
            + tuple(f"emulator-{port}" for port in self.emulator_ports)
            + self.launched
        )


@dataclass(frozen=True, kw_only=True)
class HostEntry:
    """One machine: how to reach it, how to start the worker there, and its devices."""

    name: str = _text("", _NAME, _NAME_MEANING)
    """Unique name, used in logs and metrics."""
    address: str = _text("", r"[^\s@/]+", "a hostname or IP address")
    """Hostname or IP; ``localhost`` runs the worker as a local subprocess."""
    transport: Literal["auto", "local", "ssh"] = "auto"
    """``local`` (subprocess), ``ssh``, or ``auto``: local for ``localhost``, SSH otherwise."""
    port: int = _num(22, ge=1, le=65535)
    """SSH port."""
    user: str = _text("", r"[^\s@:]+", "a user name")
    """SSH user; empty for the current user."""
    identity_file: str = ""
    """SSH private key file; empty to use the SSH agent and default keys."""
    known_hosts: Literal["check", "ignore"] = "check"
    """``check`` the host key against known_hosts, or ``ignore`` it (logged; throwaway hosts only)."""
    known_hosts_file: str = ""
    """known_hosts file to check against; empty for ``~/.ssh/known_hosts``."""
    proxy_jump: str = _text("", r"([^\s@:]+@)?[^\s@:/]+(:[0-9]{1,5})?", "[user@]host[:port]")
    """Jump host as ``[user@]host[:port]``; empty to connect directly."""
    python: str = ""
    """Python on the host that has distrl installed; empty for this interpreter (local), or over SSH
    ``~/.distrl/venv/bin/python`` where ``python -m distrl deploy`` made it, else ``python3``."""
    workdir: str = ""
    """Working folder of the worker; empty for the home folder (SSH) or the current folder (local)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables for the worker, passed explicitly."""
    devices: Devices = field(default_factory=Devices)
    """The host's devices."""
    concurrency: int = _num(0, ge=0)
    """Most episodes running at once on this host; 0 for one per device."""

    @property
    def is_local(self) -> bool:
        return self.transport == "local"

    @property
    def max_episodes(self) -> int:
        """Episodes this host runs at once."""
        count = len(self.devices.serials)
        return min(self.concurrency, count) if self.concurrency else count


@dataclass(frozen=True, kw_only=True)
class Inventory:
    """A whole ``hosts.toml``."""

    hosts: tuple[HostEntry, ...]
    run: RunSettings = field(default_factory=RunSettings)
    tasks: TaskSettings = field(default_factory=TaskSettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    timeouts: Timeouts = field(default_factory=Timeouts)
    learner: LearnerSettings = field(default_factory=LearnerSettings)
    policy: PolicySettings = field(default_factory=PolicySettings)
    sim: SimSettings = field(default_factory=SimSettings)
    source: str = ""
    """The file it was read from (empty when parsed from a string)."""

    @property
    def output_dir(self) -> Path:
        """Where this run writes: ``<run.output_dir>/<run.name>``."""
        return Path(self.run.output_dir) / self.run.name

    @property
    def device_count(self) -> int:
        return sum(len(host.devices.serials) for host in self.hosts)


@dataclass(frozen=True, kw_only=True)
class WorkerSettings:
    """What a worker agent needs of the inventory: sent by the learner in its ``Setup`` message."""

    policy: PolicySettings = field(default_factory=PolicySettings)
    sim: SimSettings = field(default_factory=SimSettings)
    timeouts: Timeouts = field(default_factory=Timeouts)
    seed: int = _num(0, ge=0)
    """The run's seed: the simulated phones' seeds derive from it."""
