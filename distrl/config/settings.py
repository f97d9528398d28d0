"""The inventory's settings: one frozen dataclass per table of ``hosts.toml``, each field with its
default, its bounds and its meaning (``hosts.example.toml`` shows them all). ``distrl.config.reader``
fills them from TOML and checks them. Two tables live in modules of their own: the hosts and their
devices (``distrl.config.hosts``) and the learner's (``distrl.config.learner``); a field's bounds are
stated with ``distrl.config.fields``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from distrl.config.fields import NAME, NAME_MEANING, num_field, text_field
from distrl.config.hosts import HostEntry
from distrl.config.learner import LearnerSettings
from distrl.errors import ConfigError

MOST_SEED = 2**63 - 1
"""The largest seed (TOML's largest integer): torch, Python's and the sim's generators all take it."""


def as_whole(value: object) -> int | None:
    """``value`` as an ``int`` where it is a whole number (an ``int``, numpy's integers; not a bool, not a
    float); None where it is not."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]  # any object: index says whether it is one
    except TypeError:
        return None


def seed_problem(seed: object) -> str:
    """Why ``seed`` is no seed (a whole number from 0 to ``MOST_SEED``), in words; "" when it is one."""
    value = as_whole(seed)
    if value is None or not 0 <= value <= MOST_SEED:
        return f"seed must be an integer from 0 to {MOST_SEED}, not {seed!r}"
    return ""


__all__ = [
    "MOST_SEED",
    "seed_problem",
    "as_whole",
    "BUILT_IN_BASES",
    "BUILT_IN_MODELS",
    "EXPERT",
    "TINY_BC",
    "TINY_WEAK",
    "PRETRAINED",
    "Inventory",
    "JudgeSettings",
    "PolicySettings",
    "MOVED_SIM_KEYS",
    "RunSettings",
    "ScreenSettings",
    "SimSettings",
    "TaskSettings",
    "Timeouts",
    "WorkerSettings",
]


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """What a run does and where its output goes."""

    name: str = text_field("distrl", NAME, NAME_MEANING)
    """Run name, used for the output folder and in logs."""
    mode: Literal["async", "sync"] = "async"
    """``async`` (DistRL) or ``sync`` (DigiRL-style rounds with a barrier, the baseline)."""
    suite: Literal["general", "web_shopping"] = "general"
    """Task suite to train on."""
    output_dir: str = "runs"
    """Folder for checkpoints, logs and episodes; a relative path starts at the inventory's folder."""
    seed: int = num_field(0, ge=0, le=MOST_SEED)
    """Seed for task sampling, the simulated phones and the learner."""
    max_trajectories: int = num_field(0, ge=0)
    """Stop after this many trajectories have reached the learner; 0 for no limit. With task groups, a
    multiple of ``[tasks] group_size``."""
    duration_s: float = num_field(0.0, ge=0)
    """Stop after this many seconds of wall time; 0 for no limit."""
    max_policy_lag: int = num_field(32, ge=0)
    """Drop trajectories begun by a policy more than this many versions behind the learner, on arrival
    and later from the replay buffer (Retrace corrects for what stays). The learner updates every
    ``learner.min_new_trajectories`` arrivals, so an episode as long as D arrivals is about
    D / min_new_trajectories versions old when it arrives: 32 devices and 4 give 8. With 4, the old
    default, 32 sim phones had 90% of their trajectories refused, and success fell
    (docs/results/learning.md)."""
    publish_every: int = num_field(1, gt=0)
    """Publish new weights to the workers every this many learner updates."""
    publish_dtype: Literal["float32", "bfloat16"] = "bfloat16"
    """Precision of the weights sent to workers: ``bfloat16`` (diffs a fifth of a float32 adapter's size;
    workers run in bfloat16 on GPUs anyway) or ``float32`` (bitwise the learner's weights)."""
    checkpoint_every: int = num_field(50, ge=0)
    """Write a checkpoint every this many learner updates (and on clean shutdown); 0 for shutdown only."""
    checkpoint_every_s: float = num_field(1800.0, ge=0)
    """Also write one after an update when this many seconds have passed since the last (0: no timer);
    it bounds the work lost to a crash when updates are slow."""
    keep_checkpoints: int = num_field(3, gt=0)
    """How many of the latest checkpoints stay on disk; older ones are deleted."""
    record_episodes: float = num_field(1.0, ge=0, le=1)
    """Share of the episodes written to ``<output>/episodes`` (each one's trajectory as JSON, screens as JPEG;
    ``distrl.episodes``): 1 for all, 0 for none, chosen by a hash of the episode id."""
    episodes_max_gb: float = num_field(2.0, ge=0)
    """Stop writing episodes once that folder holds this many GB (0: no limit). About 1 MB an episode of
    10 steps on a 1080×2400 phone: the default keeps a day-long run's folder bounded."""
    max_restarts: int = num_field(5, ge=0)
    """A host link that fails more often than this in a row is given up; a device that does rests (10 s,
    doubling up to 5 minutes) and is tried again, and after this many rests is retired."""


@dataclass(frozen=True, kw_only=True)
class TaskSettings:
    """Where the tasks come from and how they are scored (``distrl.tasks``)."""

    files: tuple[str, ...] = ()
    """Task files (``.jsonl``, or ``.txt`` with one instruction a line; relative paths start at the
    inventory's folder). When given, the run's tasks are theirs, not ``run.suite``'s."""
    split: str = text_field("train", r"[A-Za-z0-9_-]{1,32}", "a split name such as train or test")
    """The split ``run`` trains on."""
    max_steps: int = num_field(10, ge=1, le=1000)
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
    randomise: float = num_field(0.0, ge=0, le=1)
    """Share of ``run``'s episodes of a sim suite's train tasks that play a drawn task instead: the same
    template with fresh values and wordings, never held-out ones, as ``pretrain --randomise`` does
    (``distrl.sim.suites.drawn_task``). RL then learns on more goals than the train split's, and the test
    split's held-out values and wordings are nearer to what it learnt on. Only a task source that draws
    (the sim's suites) can: task files refuse a share above 0."""
    group_size: int = num_field(1, ge=1, le=1024)
    """K: each task drawn is handed to K sessions at once, on different devices (and hosts, where there
    are several), and their K trajectories reach the learner together as a group: what the
    group-relative algorithms (``grpo``, ``rloo``, ``ppo`` with ``baseline = "group"``) compare. A member
    lost on the way is played again in its group. At most the fleet's device count; 1: no groups."""


@dataclass(frozen=True, kw_only=True)
class JudgeSettings:
    """The VLM judge (``distrl.tasks.judge``): any OpenAI-compatible chat-completions endpoint."""

    base_url: str = text_field("", r"https?://[^\s]+", "an http:// or https:// URL")
    """The endpoint's base URL (``https://api.openai.com/v1``; vLLM's ``http://host:8000/v1``). Empty:
    no judge."""
    model: str = ""
    """The model to ask (``gpt-4o``, ``gemini-1.5-pro``)."""
    api_key_env: str = text_field("", r"[A-Za-z_][A-Za-z0-9_]*", "an environment variable name")
    """The environment variable that holds the API key, on the learner's machine; empty for servers
    that want none. The key itself never goes in the inventory, logs or checkpoints."""
    max_concurrency: int = num_field(8, gt=0, le=1024)
    """Most calls in flight at once."""
    timeout_s: float = num_field(60.0, gt=0)
    """Deadline of one call, in seconds: the connect, the request and the whole answer."""
    max_retries: int = num_field(5, ge=0, le=100)
    """Tries again after a 429, a 5xx, a timeout or a lost connection, with exponential backoff."""
    max_backoff_s: float = num_field(30.0, ge=0)
    """Longest wait between two tries of one call, in seconds; a server's ``Retry-After`` beyond it is
    cut to it."""
    max_response_bytes: int = num_field(1 << 20, ge=1024)
    """Largest answer read, in bytes; a bigger one is dropped unread past it (no verdict)."""
    unreachable_s: float = num_field(300.0, ge=0)
    """Longest the judge may give no verdict, in seconds from its first failed call: then ``run`` and
    ``collect`` stop, keeping the episodes that wait for it, unscored. 0: wait for ever."""
    screens: int = num_field(1, ge=1, le=16)
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

    ssh_connect_s: float = num_field(15.0, gt=0)
    """TCP connect and SSH key exchange with a host."""
    ssh_login_s: float = num_field(30.0, gt=0)
    """SSH authentication."""
    worker_start_s: float = num_field(120.0, gt=0)
    """From starting ``python -m distrl worker`` to its hello (includes importing torch)."""
    handshake_s: float = num_field(30.0, gt=0)
    """Hello exchange and the first policy push."""
    heartbeat_interval_s: float = num_field(5.0, gt=0)
    """How often each side sends a heartbeat."""
    heartbeat_timeout_s: float = num_field(30.0, gt=0)
    """A link silent this long is treated as lost."""
    weight_push_s: float = num_field(120.0, gt=0)
    """Sending one weight update to one worker and receiving its ack."""
    device_boot_s: float = num_field(180.0, gt=0)
    """Booting or reconnecting a device until it answers."""
    device_reset_s: float = num_field(60.0, gt=0)
    """Resetting a device to a task's start state (snapshot load)."""
    device_observe_s: float = num_field(30.0, gt=0)
    """Taking one screenshot."""
    device_act_s: float = num_field(30.0, gt=0)
    """Performing one gesture (tap, swipe, text, key)."""
    policy_step_s: float = num_field(120.0, gt=0)
    """One batched inference call on a worker."""
    episode_s: float = num_field(1800.0, gt=0)
    """One whole episode, from request to trajectory."""
    cleanup_s: float = num_field(10.0, gt=0)
    """Closing anything (links, devices, processes) on shutdown or error."""
    deploy_step_s: float = num_field(1800.0, gt=0)
    """One step of ``python -m distrl deploy`` on a host: pushing the wheel, making the virtualenv,
    installing torch and distrl (downloads included)."""


EXPERT = "expert"
"""``[policy] model`` naming the simulated phone's scripted expert instead of a model."""
TINY_BC = "tiny-bc"
"""``[policy] model`` naming ``tiny`` behaviour-cloned on the sim's expert, shipped with distrl."""
TINY_WEAK = "tiny-weak"
"""``[policy] model`` naming ``tiny`` behaviour-cloned briefly: a weak start, shipped with distrl."""
PRETRAINED = (TINY_BC, TINY_WEAK)
"""The built-in pretrained models, strongest first."""
BUILT_IN_BASES = frozenset({"tiny", *PRETRAINED})
"""The built-in models that can be trained (``pretrain --start``, ``[policy] model``), not folders."""
BUILT_IN_MODELS = BUILT_IN_BASES | {EXPERT}
"""``[policy] model`` values that name something built in, not a folder."""


MIN_SCREEN_PIXELS = 56 * 56
"""The fewest pixels ``[screen] max_pixels`` and ``[policy] max_image_pixels`` may scale a screen down
to: the smallest image Qwen2-VL's processor takes (its ``min_pixels``; a smaller one it scales up, the
detail lost)."""


def _check_pixels(key: str, value: int, zero: str) -> None:
    """``value`` of ``key`` is 0 (``zero`` says what that means) or at least ``MIN_SCREEN_PIXELS``."""
    if 0 < value < MIN_SCREEN_PIXELS:
        raise ConfigError.at(
            key,
            f"must be 0 ({zero}) or at least {MIN_SCREEN_PIXELS} (56×56, the smallest image the model's"
            f" processor takes), got {value}",
        )


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
    lora_rank: int = num_field(16, gt=0)
    """LoRA rank r."""
    lora_alpha: float = num_field(32.0, gt=0)
    """LoRA scaling α."""
    lora_dropout: float = num_field(0.05, ge=0, le=1)
    """Dropout on the LoRA path."""
    lora_targets: tuple[str, ...] = ("all-linear",)
    """Module names to adapt, or ``["all-linear"]``."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Weights' dtype; ``auto`` is bfloat16 where the device supports it, else float32."""
    temperature: float = num_field(1.0, ge=0)
    """Sampling temperature (0 is greedy)."""
    greedy_share: float = num_field(0.0, ge=0, le=1)
    """Share of a run's episodes played greedily (temperature 0), spread evenly among the others (at
    ``temperature``): greedy decoding is what users deploy, and its episodes train it where it acts."""
    max_new_tokens: int = num_field(128, gt=0)
    """Longest action text generated."""
    history: int = num_field(1, ge=0)
    """Previous actions shown in the prompt."""
    max_image_pixels: int = num_field(0, ge=0)
    """Most pixels a screenshot is resized to before the model sees it; 0 keeps the model's own setting.
    Qwen2-VL's default turns a 1080×2400 screen into about 3,300 image tokens; 1,003,520 (1280 tokens of
    28×28 pixels) is a common cap for GUI agents. Any other value than 0 is at least 3,136 (56×56)."""
    max_batch: int = num_field(16, gt=0)
    """Most observations answered by one inference call on a worker."""
    max_wait_s: float = num_field(0.02, ge=0)
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

    def __post_init__(self) -> None:
        _check_pixels("policy.max_image_pixels", self.max_image_pixels, "the model's own setting")


@dataclass(frozen=True, kw_only=True)
class SimSettings:
    """The built-in simulated phones: their screens, their latency and their faults."""

    width: int = num_field(1080, ge=240, le=4096)
    """Screen width in pixels."""
    height: int = num_field(2400, ge=320, le=8192)
    """Screen height in pixels (portrait: at least the width). The screens the policy sees are in
    ``[screen]``'s format, as every device's are."""
    nuisances: bool = True
    """Pop-ups and slow page loads, as real phones have them."""
    latency: Literal["calibrated", "off"] = "calibrated"
    """Per-operation delays calibrated from real emulators, or none."""
    time_scale: float = num_field(1.0, ge=0)
    """Multiplies every simulated delay (0.1 runs ten times faster than a real emulator; 0 is no delay)."""
    task_spread: float = num_field(1.0, ge=1)
    """How much slower the slowest task's app is than the fastest's: each task's delays are multiplied
    by a factor in [1, task_spread], log-uniform and fixed per task (``latency.task_slowness``). 1 makes
    every app equally fast; the paper's tasks span up to 100× in duration."""
    hang_rate: float = num_field(0.0, ge=0, le=1)
    """Chance per operation that the device stops answering (the operation times out)."""
    crash_rate: float = num_field(0.0, ge=0, le=1)
    """Chance per operation that the device crashes (down until reset reboots it)."""
    offline_rate: float = num_field(0.0, ge=0, le=1)
    """Chance per operation that the device goes offline (until reset)."""
    white_frame_rate: float = num_field(0.0, ge=0, le=1)
    """Chance per screenshot of an all-white frame."""


MOVED_SIM_KEYS: Mapping[str, str] = {
    "image_format": "screen.image_format",
    "jpeg_quality": "screen.jpeg_quality",
}
"""Keys that ``[sim]`` held while every device's screens took the sim's format, and where each is now."""


@dataclass(frozen=True, kw_only=True)
class ScreenSettings:
    """The screens the policy sees, from every device a worker drives (simulated phones, attached phones,
    emulators): encoded on the worker, before the wire and the replay buffer, so that a policy sees on
    a real phone the encoding and size it was trained on."""

    image_format: Literal["jpeg", "png"] = "jpeg"
    """How screens are encoded: ``jpeg`` (a real phone's 2 MB PNG becomes about a tenth of that) or
    ``png`` (lossless, as ``screencap -p`` captures)."""
    jpeg_quality: int = num_field(85, ge=1, le=95)
    """JPEG quality of screens, 1-95."""
    max_pixels: int = num_field(1080 * 2400, ge=0)
    """Screens with more pixels than this are scaled down to it, keeping their shape (a 1440×3120 phone's
    to 1,097×2,377 by default, the sim's 1080×2400 size); 0 keeps every screen's own size, and any other
    value is at least 3,136 (56×56, the smallest image the model's processor takes).
    ``[policy] max_image_pixels`` applies after, in the model's processor."""

    def __post_init__(self) -> None:
        _check_pixels("screen.max_pixels", self.max_pixels, "every screen's own size")


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
    screen: ScreenSettings = field(default_factory=ScreenSettings)
    sim: SimSettings = field(default_factory=SimSettings)
    source: str = field(default="", metadata={"not_a_key": True})
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
    screen: ScreenSettings = field(default_factory=ScreenSettings)
    """The format of every device's screens."""
    sim: SimSettings = field(default_factory=SimSettings)
    """The simulated phones' own settings (the ``sim`` kind of device's), used where the host has some."""
    timeouts: Timeouts = field(default_factory=Timeouts)
    seed: int = num_field(0, ge=0, le=MOST_SEED)
    """The run's seed: the simulated phones' seeds derive from it."""
