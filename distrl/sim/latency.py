"""How long a simulated phone takes, and how it fails: seeded latency and fault models.

A ``LatencyProfile`` gives every device operation (``Op``) a heavy-tailed duration: the sum of one or
more ``Spread`` parts, each a log-normal body with an optional, rare, capped Pareto tail.
``LatencyProfile.calibrated()`` follows the calibration table of ``docs/reference/android.md`` (each
field's docstring names its rows); ``LatencyProfile.off()`` takes no time at all. A ``LatencyModel``
draws from a profile with its own seeded random stream per operation, so a device's draws for taps do
not depend on how many screenshots it took in between, and ``wall`` scales the simulated seconds by
``time_scale`` for benchmarks (0 runs as fast as the machine allows).

A ``FaultModel`` draws injected faults (``Fault``) at the per-operation probabilities of a
``FaultRates``, which the CLI reads with ``FaultRates.parse("hang=0.01,crash=0.001")``. What a fault
does is the device's business; this module only decides when one happens.

Standard library only: the sim layer may not depend on numpy or anyio here.
"""

from __future__ import annotations

import enum
import math
import random
from dataclasses import dataclass, fields

__all__ = [
    "Op",
    "Spread",
    "LatencyProfile",
    "LatencyModel",
    "Fault",
    "FaultRates",
    "FaultModel",
]

_Z95 = 1.6448536269514722
"""The standard normal's 95th percentile: a log-normal's p5..p95 span is ±_Z95 σ around its median."""


class Op(enum.StrEnum):
    """A device operation that takes time."""

    SCREENSHOT = "screenshot"
    """Capture and encode the screen (``screencap -p``)."""
    TAP = "tap"
    """``input tap``, including the UI settling afterwards."""
    SWIPE = "swipe"
    """``input swipe``, including the UI settling afterwards."""
    TEXT = "text"
    """``input text``, including the UI settling afterwards."""
    KEY = "key"
    """``input keyevent``, including the UI settling afterwards."""
    LAUNCH = "launch"
    """Start an app (``am start``, ``monkey``)."""
    PAGE_LOAD = "page_load"
    """A browser page loading after navigation."""
    RESET = "reset"
    """Restore the boot snapshot (``avd snapshot load``)."""
    BOOT = "boot"
    """A cold boot (after a crash, or when no snapshot can be loaded)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Spread:
    """A positive, heavy-tailed duration: a log-normal body and, rarely, a bounded Pareto tail.

    The body is the log-normal whose 5th and 95th percentiles are ``low_s`` and ``high_s``, cut at
    ``max_s`` (draws above it are drawn again, so nothing piles up at the cut). With probability
    ``tail_p`` the draw comes from the tail instead: a Pareto of shape ``tail_alpha`` bounded to
    ``[tail_low_s, tail_high_s]``.
    """

    low_s: float
    """The body's 5th percentile, seconds (> 0)."""
    high_s: float
    """The body's 95th percentile, seconds (≥ ``low_s``)."""
    max_s: float = 0.0
    """Longest body draw, seconds; 0 for ``4 × high_s``."""
    tail_p: float = 0.0
    """Probability that a draw comes from the tail (0 for none)."""
    tail_low_s: float = 0.0
    """Shortest tail draw (the Pareto scale), seconds."""
    tail_high_s: float = 0.0
    """Longest tail draw, seconds."""
    tail_alpha: float = 1.5
    """Pareto shape of the tail; smaller is heavier."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise ValueError(f"Spread.{f.name} must be a finite number ≥ 0, got {value!r}")
        if not 0 < self.low_s <= self.high_s:
            raise ValueError(f"Spread needs 0 < low_s ≤ high_s, got {self.low_s!r} and {self.high_s!r}")
        if self.max_s and self.max_s < self.high_s:
            raise ValueError(f"Spread.max_s {self.max_s!r} is below high_s {self.high_s!r}")
        if self.tail_p > 1:
            raise ValueError(f"Spread.tail_p is a probability, got {self.tail_p!r}")
        if self.tail_p > 0 and not (0 < self.tail_low_s < self.tail_high_s and self.tail_alpha > 0):
            raise ValueError("a Spread with a tail needs 0 < tail_low_s < tail_high_s and tail_alpha > 0")

    @property
    def cap_s(self) -> float:
        """The longest possible draw, seconds."""
        return max(self.max_s or 4.0 * self.high_s, self.tail_high_s if self.tail_p else 0.0)

    def draw(self, rng: random.Random) -> float:
        """One duration in seconds, from ``rng``."""
        if self.tail_p > 0 and rng.random() < self.tail_p:
            # Inverse CDF of the Pareto bounded to [L, H]: L · (1 − u·(1 − (L/H)^α))^(−1/α).
            low, high, alpha = self.tail_low_s, self.tail_high_s, self.tail_alpha
            span = 1.0 - (low / high) ** alpha
            value: float = low * (1.0 - rng.random() * span) ** (-1.0 / alpha)
            return min(value, high)
        mu = (math.log(self.low_s) + math.log(self.high_s)) / 2
        sigma = (math.log(self.high_s) - math.log(self.low_s)) / (2 * _Z95)
        limit = self.max_s or 4.0 * self.high_s
        for _ in range(16):  # each try passes with probability > 0.95, so this never runs out
            body = rng.lognormvariate(mu, sigma)
            if body <= limit:
                return body
        return limit


# The parts several operations share (android.md §8, "Suggested defaults").
_GESTURE = Spread(low_s=0.03, high_s=0.15)
_SETTLE = Spread(low_s=0.3, high_s=1.0)


@dataclass(frozen=True, kw_only=True, slots=True)
class LatencyProfile:
    """How long each ``Op`` takes: the sum of its ``Spread`` parts (no parts: no time)."""

    screenshot: tuple[Spread, ...] = ()
    """``Op.SCREENSHOT``."""
    tap: tuple[Spread, ...] = ()
    """``Op.TAP``."""
    swipe: tuple[Spread, ...] = ()
    """``Op.SWIPE``."""
    text: tuple[Spread, ...] = ()
    """``Op.TEXT``."""
    key: tuple[Spread, ...] = ()
    """``Op.KEY``."""
    launch: tuple[Spread, ...] = ()
    """``Op.LAUNCH``."""
    page_load: tuple[Spread, ...] = ()
    """``Op.PAGE_LOAD``."""
    reset: tuple[Spread, ...] = ()
    """``Op.RESET``."""
    boot: tuple[Spread, ...] = ()
    """``Op.BOOT``."""

    def parts(self, op: Op) -> tuple[Spread, ...]:
        """The parts whose sum is ``op``'s duration."""
        parts: tuple[Spread, ...] = getattr(self, Op(op).value)
        return parts

    @property
    def is_off(self) -> bool:
        """True when no operation takes any time."""
        return not any(self.parts(op) for op in Op)

    @classmethod
    def off(cls) -> LatencyProfile:
        """Every operation is instant."""
        return cls()

    @classmethod
    def calibrated(cls) -> LatencyProfile:
        """Durations of a real emulator, from ``docs/reference/android.md``.

        - tap, key, text: 30–150 ms for the gesture (the adbutils floor of ≈21 ms per shell action,
          row "adbutils client floor", plus ``input`` itself) and 0.3–1.0 s for the UI to settle
          (row "AndroidWorld waits": stabilisation checks 0.5 s apart). Text adds up to a second of
          typing (same row: "typing adds 1 s").
        - swipe: the gesture lasts 200–400 ms (row "DigiRL / DistRL waits": a 200 ms swipe), then
          the same settle.
        - screenshot: 0.3–0.7 s like a raw ``screencap`` (row "raw screencap", ≈675 ms), and one in
          ten is PNG-like, 0.7–3 s (row "adb exec-out screencap -p": p10 0.66 s, median 2.12 s,
          p90 3.0 s; row "screencap on an Android P device", ≈3 s).
        - launch: 0.5–2 s (android.md §8 suggested defaults; DigiRL's 15–30 s waits after a launch
          in row "DigiRL / DistRL waits" are safety margins, not launch times), tail to 5 s.
        - page load: 0.4–2.5 s with a tail to 8 s. No row measures it; chosen between an app launch
          and DigiRL's 5 s wait before each screenshot (row "DigiRL / DistRL waits").
        - reset: 0.58–0.95 s (row "snapshot load", 580–694 ms), and one in eight as slow as a
          reboot from a snapshot, 2.5–4 s (same row, 2.5–3.7 s; android.md §8 "reset by snapshot
          0.6–4 s").
        - boot: 12.5–25 s, never over 30 s (row "emulator cold boot with KVM", 12579 ms; row
          "snapshot load", 25–28 s without snapshots).
        """
        return cls(
            screenshot=(
                Spread(low_s=0.3, high_s=0.7, tail_p=0.1, tail_low_s=0.7, tail_high_s=3.0, tail_alpha=1.0),
            ),
            tap=(_GESTURE, _SETTLE),
            swipe=(Spread(low_s=0.2, high_s=0.4), _SETTLE),
            text=(_GESTURE, Spread(low_s=0.1, high_s=1.0), _SETTLE),
            key=(_GESTURE, _SETTLE),
            launch=(Spread(low_s=0.5, high_s=2.0, tail_p=0.03, tail_low_s=2.0, tail_high_s=5.0),),
            page_load=(Spread(low_s=0.4, high_s=2.5, tail_p=0.05, tail_low_s=2.5, tail_high_s=8.0),),
            reset=(Spread(low_s=0.58, high_s=0.95, tail_p=0.125, tail_low_s=2.5, tail_high_s=4.0),),
            boot=(Spread(low_s=12.5, high_s=25.0, max_s=30.0),),
        )


class LatencyModel:
    """Seeded draws from a ``LatencyProfile``: the same seed gives the same durations, op by op."""

    def __init__(self, profile: LatencyProfile, *, seed: int | str, time_scale: float = 1.0) -> None:
        if not (math.isfinite(time_scale) and time_scale >= 0):
            raise ValueError(f"time_scale must be a finite number ≥ 0, got {time_scale!r}")
        self.profile = profile
        """The durations drawn from."""
        self.seed = seed
        """The seed of every per-operation stream."""
        self.time_scale = time_scale
        """Wall seconds per simulated second (0: no waiting at all)."""
        # One stream per operation (string seeds are hashed with SHA-512, so this is stable).
        self._rngs = {op: random.Random(f"latency/{seed}/{op.value}") for op in Op}

    def sample(self, op: Op) -> float:
        """How long ``op`` takes this time, in simulated seconds (≥ 0)."""
        rng = self._rngs[Op(op)]
        return sum(part.draw(rng) for part in self.profile.parts(op))

    def wall(self, op: Op) -> float:
        """How long to really wait for ``op`` this time, seconds: ``sample(op) × time_scale``."""
        if self.time_scale == 0 or self.profile.is_off:
            return 0.0
        return self.sample(op) * self.time_scale


def task_slowness(task_id: str, spread: float) -> float:
    """How much slower than the fastest the task ``task_id`` runs: a factor in [1, ``spread``],
    log-uniform, the same for the task on every device and every run (drawn from its id alone).

    Real apps and sites differ: a heavy shopping site loads and settles far slower than the settings
    app, so long tasks are long in both steps and seconds (the paper's tasks span up to 100× in
    duration). ``spread`` 1 makes every task equally fast."""
    if not (math.isfinite(spread) and spread >= 1):
        raise ValueError(f"spread must be a finite number ≥ 1, got {spread!r}")
    return float(spread ** random.Random(f"slowness/{task_id}").random())


class Fault(enum.StrEnum):
    """An injected failure."""

    HANG = "hang"
    """The operation never finishes (the caller's timeout fires)."""
    CRASH = "crash"
    """The device dies; it is down until it is reset (rebooted)."""
    OFFLINE = "offline"
    """The device drops off adb; it is unreachable until it is reset."""
    WHITE_FRAME = "white_frame"
    """A screenshot comes back all white (screenshots only)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FaultRates:
    """Probability of each fault per operation; together at most 1. All zero by default."""

    hang: float = 0.0
    """Probability that an operation hangs."""
    crash: float = 0.0
    """Probability that an operation crashes the device."""
    offline: float = 0.0
    """Probability that the device goes offline during an operation."""
    white_frame: float = 0.0
    """Probability that a screenshot is a white frame (screenshots only)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ValueError(f"fault rate {f.name} must be a probability in [0, 1], got {value!r}")
        if self.total > 1:
            raise ValueError(f"fault rates must add up to at most 1, got {self.total:g}")

    @property
    def total(self) -> float:
        """The probability that an operation fails in any way."""
        return self.hang + self.crash + self.offline + self.white_frame

    @classmethod
    def parse(cls, text: str) -> FaultRates:
        """Read ``"hang=0.01,crash=0.001"`` (names from ``Fault``; empty text: no faults).

        Raises ``ValueError`` with one sentence saying what is wrong."""
        names = [fault.value for fault in Fault]
        rates: dict[str, float] = {}
        for item in text.split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, raw = (part.strip() for part in item.partition("="))
            if not sep:
                raise ValueError(f"fault rate {item!r} is not name=probability (e.g. hang=0.01)")
            if name not in names:
                raise ValueError(f"unknown fault {name!r} in {item!r}; the faults are {', '.join(names)}")
            if name in rates:
                raise ValueError(f"fault {name!r} is given twice")
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"fault rate {name}={raw!r} is not a number") from None
            if not 0 <= value <= 1:  # also refuses nan
                raise ValueError(f"fault rate {name}={raw} is not a probability in [0, 1]")
            rates[name] = value
        return cls(**rates)


class FaultModel:
    """Seeded fault draws at the rates of a ``FaultRates``, one random stream per operation."""

    def __init__(self, rates: FaultRates, *, seed: int | str) -> None:
        self.rates = rates
        """The probabilities drawn with."""
        self.seed = seed
        """The seed of every per-operation stream."""
        self._rngs = {op: random.Random(f"faults/{seed}/{op.value}") for op in Op}

    def draw(self, op: Op) -> Fault | None:
        """The fault that strikes ``op`` this time, or None. ``WHITE_FRAME`` only for ``SCREENSHOT``."""
        rates = self.rates
        if rates.total == 0:
            return None
        op = Op(op)
        u = self._rngs[op].random()
        for fault, rate in (
            (Fault.HANG, rates.hang),
            (Fault.CRASH, rates.crash),
            (Fault.OFFLINE, rates.offline),
            (Fault.WHITE_FRAME, rates.white_frame if op is Op.SCREENSHOT else 0.0),
        ):
            if u < rate:
                return fault
            u -= rate
        return None
