"""The inventory: ``hosts.toml`` read into frozen dataclasses, checked whole at load time.

An inventory has these tables, each optional but ``[[hosts]]``::

    [run]        what to run: mode, task suite, budgets, seeds, output folder
    [tasks]      users' task files, and which evaluator scores the tasks
    [judge]      the VLM judge: an OpenAI-compatible endpoint, its model and limits
    [timeouts]   one named number per external operation, in seconds
    [learner]    the algorithm and its hyper-parameters
    [policy]     the model, its LoRA adapter, decoding and batching
    [defaults]   host settings every [[hosts]] entry inherits (``env`` tables merge key by key)
    [[hosts]]    one entry per machine: how to reach it and which devices it drives

Every mistake (unknown key, wrong type, impossible value, duplicate name, bad TOML) raises one
``ConfigError`` whose message names the file, the TOML path (``hosts[1].devices.sim``) and the problem.
``hosts.example.toml`` documents every key.
"""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import json
import math
import operator
import re
import sys
import tomllib
import typing
from collections import Counter
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
    """Limit on one call."""
    max_retries: int = _num(5, ge=0, le=100)
    """Tries again after a 429, a 5xx, a timeout or a lost connection, with exponential backoff."""
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
    entropy_coef: float = _num(0.05, ge=0)
    """β, the entropy bonus coefficient."""
    invalid_penalty: float = _num(1.0, ge=0)
    """Weight of the invalid-action penalty term."""
    advantages: Literal["positive", "normalised", "signed"] = "positive"
    """A-RIDE: which advantages weigh −log π in the actor loss.

    - ``positive`` (default): max(A_t, 0), so the actor raises only the actions that did better than the
      step critic expected, each in proportion to how much better; scaled to mean 1 over the steps it
      keeps, so that it weighs as much as the entropy bonus and the invalid-output penalty beside it
      expect. The paper's released code clamps A the same way (then binarises it, losing the size).
    - ``normalised``: A_t shifted and scaled to weighted mean 0 and deviation 1 over the batch.
    - ``signed``: A_t as it is, Eq. 1 as written.

    Why not signed: an answer's log-prob sums over all its tokens, most of them the action format every
    answer shares. When most episodes fail most advantages are negative, and pushing those answers down
    pushes the shared format down on every update, so a small policy drifts into answers that do not
    parse; normalising slows the drift but still pushes down half of every batch (README, "Learner")."""
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
    min_new_trajectories: int = _num(4, ge=0)
    """An update waits until this many new trajectories have reached the learner since the last one (0:
    update continuously); it keeps the learner from overfitting a buffer that refills slowly."""
    micro_batch: int = _num(16, gt=0)
    """Steps per forward pass in an update (gradients accumulate over the passes; bounds memory)."""
    gradient_checkpointing: bool = False
    """Recompute the model's activations in the actor's backward pass instead of keeping them: more
    compute, far less memory (a 2B policy keeps about 20 GB of activations per 1080×2400 step without
    it, so only a micro-batch of 1 or 2 fits an 80 GB GPU)."""
    digirl_lambda: float = _num(0.5, ge=0, le=1)
    """λ of DigiRL's doubly robust step advantage (``algorithm = "digirl"`` only)."""


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


@dataclass(frozen=True, kw_only=True)
class Devices:
    """The devices one host drives."""

    sim: int = _num(0, ge=0, le=4096)
    """Number of built-in simulated phones."""
    adb_serials: tuple[str, ...] = ()
    """Devices by adb serial (``emulator-5554``, a USB serial, ``host:port``)."""
    emulator_ports: tuple[int, ...] = ()
    """Emulators by console port (even, 5554–5682); the serial is ``emulator-<port>``."""

    @property
    def serials(self) -> tuple[str, ...]:
        """Every device's name on its host: ``sim-0``…, then adb serials, then emulators."""
        return (
            tuple(f"sim-{i}" for i in range(self.sim))
            + self.adb_serials
            + tuple(f"emulator-{port}" for port in self.emulator_ports)
        )


@dataclass(frozen=True, kw_only=True)
class Host:
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
    """Python on the host that has distrl installed; empty for this interpreter (local) or ``python3``."""
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

    hosts: tuple[Host, ...]
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


def worker_settings_json(inventory: Inventory) -> str:
    """The ``WorkerSettings`` of ``inventory`` as a JSON document (``parse_worker_settings`` reads it)."""
    document = {
        "policy": dataclasses.asdict(inventory.policy),
        "sim": dataclasses.asdict(inventory.sim),
        "timeouts": dataclasses.asdict(inventory.timeouts),
        "seed": inventory.run.seed,
    }
    return json.dumps(document, allow_nan=True)


def parse_worker_settings(text: str) -> WorkerSettings:
    """Check a ``worker_settings_json`` document as the inventory's own sections are checked.

    Raises ``ConfigError`` naming the setting at fault."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError.at("", f"the worker settings are not JSON: {exc}", "setup") from exc
    reader = _Reader("setup")
    table = reader.table(data, "")
    reader.reject_unknown(table, ["policy", "sim", "timeouts", "seed"], "")
    seed = table.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise reader.fail("seed", f"must be an integer ≥ 0, not {seed!r}")
    return WorkerSettings(
        policy=reader.section(PolicySettings, table.get("policy", {}), "policy"),
        sim=reader.section(SimSettings, table.get("sim", {}), "sim"),
        timeouts=reader.section(Timeouts, table.get("timeouts", {}), "timeouts"),
        seed=seed,
    )


_SECTIONS: dict[str, type[Any]] = {
    "run": RunSettings,
    "tasks": TaskSettings,
    "judge": JudgeSettings,
    "timeouts": Timeouts,
    "learner": LearnerSettings,
    "policy": PolicySettings,
    "sim": SimSettings,
}
_HOST_ONLY = ("name", "address")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def load_inventory(path: str | Path) -> Inventory:
    """Read and check ``path``. Raises ``ConfigError`` (file, TOML path, problem) on any mistake."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError.at("", "file not found", file) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError.at("", f"cannot read the file ({exc})", file) from exc
    return parse_inventory(text, source=file)


def parse_inventory(text: str, *, source: str = "") -> Inventory:
    """Check an inventory given as TOML text; ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError.at("", f"invalid TOML: {exc}", source or None) from exc
    except RecursionError:
        raise ConfigError.at("", "invalid TOML: nested too deeply", source or None) from None
    return _Reader(source or None).inventory(data)


class _Reader:
    """Turns parsed TOML into checked dataclasses; every error names ``file`` and the TOML path."""

    def __init__(self, file: str | None) -> None:
        self.file = file
        self.base = Path(file).resolve().parent if file else Path.cwd()

    def local_path(self, value: str) -> str:
        """A path on this machine: ``~`` expanded, relative paths from the inventory's folder."""
        return str(self.base / Path(value).expanduser()) if value else ""

    def fail(self, path: str, problem: str) -> ConfigError:
        return ConfigError.at(path, problem, self.file)

    def inventory(self, data: dict[str, Any]) -> Inventory:
        allowed = [*_SECTIONS, "defaults", "hosts"]
        self.reject_unknown(data, allowed, "")
        if isinstance(data.get("judge"), dict) and "api_key" in data["judge"]:
            raise self.fail(
                "judge.api_key",
                "the key never goes in the inventory: put it in an environment variable and name that"
                " variable in judge.api_key_env",
            )
        sections = {name: self.section(cls, data.get(name, {}), name) for name, cls in _SECTIONS.items()}
        run: RunSettings = sections["run"]
        sections["run"] = dataclasses.replace(run, output_dir=self.local_path(run.output_dir))
        output = Path(sections["run"].output_dir)
        blocking = next((p for p in (output, *output.parents) if p.exists() and not p.is_dir()), None)
        if blocking is not None:
            raise self.fail("run.output_dir", f"{str(blocking)!r} is a file, not a folder")
        tasks: TaskSettings = sections["tasks"]
        sections["tasks"] = dataclasses.replace(tasks, files=tuple(self.local_path(f) for f in tasks.files))
        judge: JudgeSettings = sections["judge"]
        if judge.configured and not judge.model:
            raise self.fail("judge.model", "is needed with judge.base_url (the model to ask)")
        if judge.model and not judge.configured:
            raise self.fail("judge.base_url", "is needed with judge.model (the endpoint to ask)")
        cache = (
            self.local_path(judge.cache)
            if judge.cache
            else str(Path(sections["run"].output_dir) / "judge-cache")
        )
        sections["judge"] = dataclasses.replace(judge, cache=cache)
        policy: PolicySettings = sections["policy"]
        sections["policy"] = dataclasses.replace(
            policy,
            model=policy.model if policy.model in BUILT_IN_MODELS else self.local_path(policy.model),
            adapter=self.local_path(policy.adapter),
        )
        if run.max_policy_lag < run.publish_every - 1:
            raise self.fail(
                "run.max_policy_lag",
                f"must be at least run.publish_every - 1 ({run.publish_every - 1}): with fewer, most"
                " trajectories would be too stale to train on",
            )
        timeouts: Timeouts = sections["timeouts"]
        if timeouts.heartbeat_timeout_s <= timeouts.heartbeat_interval_s:
            raise self.fail(
                "timeouts.heartbeat_timeout_s",
                f"must be longer than timeouts.heartbeat_interval_s ({timeouts.heartbeat_interval_s:g} s)",
            )
        sim: SimSettings = sections["sim"]
        if sim.height < sim.width:
            raise self.fail("sim.height", f"must be at least sim.width ({sim.width}): phones are portrait")
        fault_total = sim.hang_rate + sim.crash_rate + sim.offline_rate + sim.white_frame_rate
        if fault_total > 1:
            raise self.fail("sim", f"the fault rates add up to {fault_total:g}, more than 1")
        return Inventory(hosts=self.hosts(data), source=self.file or "", **sections)

    def section(self, cls: type[T], table: object, path: str) -> T:
        return cls(**self.fields(cls, self.table(table, path), path))

    def hosts(self, data: dict[str, Any]) -> tuple[Host, ...]:
        defaults_table = self.table(data.get("defaults", {}), "defaults")
        for key in _HOST_ONLY:
            if key in defaults_table:
                raise self.fail(
                    f"defaults.{key}", f"'{key}' differs per host; set it in each [[hosts]] entry"
                )
        defaults = self.fields(Host, defaults_table, "defaults")
        entries = data.get("hosts")
        if entries is None:
            raise self.fail("hosts", "no hosts: add at least one [[hosts]] entry")
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise self.fail("hosts", f"expected an array of tables ([[hosts]]), got {_describe(entries)}")
        if not entries:
            raise self.fail("hosts", "no hosts: add at least one [[hosts]] entry")
        hosts: list[Host] = []
        seen: dict[str, int] = {}
        devices: dict[tuple[str, str], int] = {}
        """(address, serial) → host index: two hosts on one machine cannot share a device."""
        for index, entry in enumerate(entries):
            path = f"hosts[{index}]"
            host = self.host(entry, defaults, path)
            if host.name in seen:
                raise self.fail(
                    f"{path}.name", f"duplicate host name {host.name!r} (also hosts[{seen[host.name]}])"
                )
            seen[host.name] = index
            for serial in host.devices.serials:
                if serial.startswith("sim-"):
                    continue  # in-process phones: each worker has its own
                other = devices.setdefault((host.address, serial), index)
                if other != index:
                    raise self.fail(
                        f"{path}.devices",
                        f"device {serial!r} of {host.address} is also hosts[{other}]'s: two workers cannot"
                        " drive one device",
                    )
            hosts.append(host)
        return tuple(hosts)

    def host(self, entry: dict[str, Any], defaults: dict[str, Any], path: str) -> Host:
        own = self.fields(Host, entry, path)
        for key in _HOST_ONLY:
            if key not in own:
                raise self.fail(path, f"missing required key '{key}'")
            if not own[key]:
                raise self.fail(f"{path}.{key}", "must not be empty")
        merged = {**defaults, **own, "env": {**defaults.get("env", {}), **own.get("env", {})}}
        transport = merged.get("transport", "auto")
        if transport == "auto":
            transport = "local" if own["address"] == LOCAL_ADDRESS else "ssh"
        elif transport == "local" and own["address"] != LOCAL_ADDRESS:
            raise self.fail(
                f"{path}.address",
                f"transport 'local' runs the worker on this machine; set address = \"{LOCAL_ADDRESS}\"",
            )
        problem = address_problem(own["address"])
        if problem:
            raise self.fail(f"{path}.address", f"{own['address']!r} {problem}")
        merged["transport"] = transport
        if not merged.get("python"):
            merged["python"] = sys.executable if transport == "local" else "python3"
        for key in ("identity_file", "known_hosts_file") + (("workdir",) if transport == "local" else ()):
            merged[key] = self.local_path(merged.get(key, ""))
        if transport == "local" and merged.get("workdir") and not Path(merged["workdir"]).is_dir():
            where = f"{path}.workdir" if "workdir" in own else "defaults.workdir"
            raise self.fail(where, f"{merged['workdir']!r} is not a folder on this machine")
        host = Host(**merged)
        where = f"{path}.devices" if "devices" in own else "defaults.devices"
        for i, port in enumerate(host.devices.emulator_ports):
            if not (5554 <= port <= 5682 and port % 2 == 0):
                raise self.fail(
                    f"{where}.emulator_ports[{i}]",
                    f"{port} is not an emulator console port (even, 5554-5682)",
                )
        for i, serial in enumerate(host.devices.adb_serials):
            if not serial.strip() or any(c.isspace() for c in serial):
                raise self.fail(f"{where}.adb_serials[{i}]", f"{serial!r} is not an adb serial")
        serials = host.devices.serials
        if not serials:
            raise self.fail(where, "no devices: set sim, adb_serials or emulator_ports")
        duplicates = sorted(serial for serial, n in Counter(serials).items() if n > 1)
        if duplicates:
            raise self.fail(where, f"device {duplicates[0]!r} is listed twice")
        return host

    def fields(self, cls: type[Any], table: dict[str, Any], path: str) -> dict[str, Any]:
        """Check ``table``'s keys and values against ``cls``'s fields; returns the converted values."""
        specs = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name != "source"}
        self.reject_unknown(table, list(specs), path)
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for key, raw in table.items():
            where = _join(path, key)
            value = self.value(hints[key], raw, where)
            self.check_bounds(specs[key].metadata, value, where)
            pattern = specs[key].metadata.get("pattern")
            if pattern is not None and value and not pattern.fullmatch(value):
                raise self.fail(where, f"{value!r} is not {specs[key].metadata['meaning']}")
            values[key] = value
        return values

    def value(self, hint: Any, raw: object, path: str) -> Any:
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if hint is bool:
            if isinstance(raw, bool):
                return raw
            raise self.fail(path, f"expected true or false, got {_describe(raw)}")
        if hint is int:
            if isinstance(raw, int) and not isinstance(raw, bool):
                return raw
            raise self.fail(path, f"expected an integer, got {_describe(raw)}")
        if hint is float:
            if isinstance(raw, int | float) and not isinstance(raw, bool) and not math.isnan(raw):
                return float(raw)
            raise self.fail(path, f"expected a number, got {_describe(raw)}")
        if hint is str:
            if not isinstance(raw, str):
                raise self.fail(path, f"expected a string, got {_describe(raw)}")
            if "\0" in raw:
                raise self.fail(path, "must not contain a NUL character")
            return raw
        if origin is Literal:
            if isinstance(raw, str) and raw in args:
                return raw
            choices = ", ".join(repr(a) for a in args)
            raise self.fail(path, f"expected one of {choices}, got {_describe(raw)}")
        if origin is tuple:
            if not isinstance(raw, list):
                raise self.fail(path, f"expected an array, got {_describe(raw)}")
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(self.value(args[0], item, f"{path}[{i}]") for i, item in enumerate(raw))
            if len(raw) != len(args):
                raise self.fail(path, f"expected an array of {len(args)} items, got {len(raw)}")
            return tuple(
                self.value(a, item, f"{path}[{i}]") for i, (a, item) in enumerate(zip(args, raw, strict=True))
            )
        if origin in (Mapping, dict):
            table = self.table(raw, path)
            result: dict[str, str] = {}
            for key, item in table.items():
                where = _join(path, key)
                if not _ENV_NAME.fullmatch(key):
                    raise self.fail(where, f"{key!r} is not a valid environment variable name")
                result[key] = self.value(args[1], item, where)
            return result
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            return self.section(hint, raw, path)
        raise TypeError(f"no reader for {hint!r} at {path}")  # pragma: no cover - a bug in this module

    def check_bounds(self, bounds: Mapping[str, Any], value: object, path: str) -> None:
        if isinstance(value, tuple):
            for i, item in enumerate(value):
                self.check_bounds(bounds, item, f"{path}[{i}]")
            return
        if not isinstance(value, int | float):
            return
        if math.isinf(value) and not bounds.get("allow_inf"):
            raise self.fail(path, f"must be finite, got {value}")
        checks = (
            ("ge", operator.ge, "at least"),
            ("gt", operator.gt, "greater than"),
            ("le", operator.le, "at most"),
        )
        for key, ok, words in checks:
            bound = bounds.get(key)
            if bound is not None and not ok(value, bound):
                raise self.fail(path, f"must be {words} {bound:g}, got {value:g}")

    def table(self, raw: object, path: str) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise self.fail(path, f"expected a table, got {_describe(raw)}")
        return raw

    def reject_unknown(self, table: Mapping[str, object], allowed: list[str], path: str) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise self.fail(_join(path, key), f"unknown key{hint}")


def _join(path: str, key: str) -> str:
    part = key if _BARE_KEY.fullmatch(key) else '"' + key.replace('"', '\\"') + '"'
    return f"{path}.{part}" if path else part


def _describe(value: object) -> str:
    kinds: dict[type[Any], str] = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }
    kind = next((words for cls, words in kinds.items() if isinstance(value, cls)), type(value).__name__)
    if isinstance(value, dict | list):
        return kind
    shown = repr(value) if not isinstance(value, bool) else str(value).lower()
    return f"{kind} ({shown[:60]})"


__all__ = [
    "BUILT_IN_MODELS",
    "EXPERT",
    "TINY_BC",
    "Devices",
    "Host",
    "Inventory",
    "LearnerSettings",
    "PolicySettings",
    "SimSettings",
    "RunSettings",
    "Timeouts",
    "load_inventory",
    "parse_inventory",
]
