"""The sim's latency and fault models: calibrated ranges, heavy tails, seeds, scaling, rates, parsing."""

from __future__ import annotations

import math
import statistics
from collections import Counter

import pytest

from distrl.sim.latency import (
    Fault,
    FaultModel,
    FaultRates,
    LatencyModel,
    LatencyProfile,
    Op,
    Spread,
    task_slowness,
)

N = 4000


def _samples(op: Op, n: int = N, seed: int = 0) -> list[float]:
    model = LatencyModel(LatencyProfile.calibrated(), seed=seed)
    return sorted(model.sample(op) for _ in range(n))


def _quantile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


# op, median range, 5th percentile floor, 95th percentile ceiling, hard maximum (android.md §8)
CALIBRATION = [
    (Op.TAP, (0.4, 0.9), 0.33, 1.3, 1.0 * 4 + 0.15 * 4),
    (Op.KEY, (0.4, 0.9), 0.33, 1.3, 1.0 * 4 + 0.15 * 4),
    (Op.TEXT, (0.6, 1.4), 0.4, 2.2, 8.6),
    (Op.SWIPE, (0.6, 1.1), 0.5, 1.5, 5.6),
    (Op.SCREENSHOT, (0.3, 0.7), 0.25, 3.0, 3.0),
    (Op.LAUNCH, (0.7, 1.4), 0.45, 2.6, 8.0),
    (Op.PAGE_LOAD, (0.7, 1.4), 0.35, 3.6, 10.0),
    (Op.RESET, (0.6, 0.95), 0.55, 4.0, 4.0),
    (Op.BOOT, (15.0, 20.0), 12.0, 26.0, 30.0),
]


@pytest.mark.parametrize(("op", "median", "p5_floor", "p95_ceiling", "maximum"), CALIBRATION)
def test_calibrated_durations_fall_in_the_measured_ranges(
    op: Op, median: tuple[float, float], p5_floor: float, p95_ceiling: float, maximum: float
) -> None:
    values = _samples(op)
    assert median[0] <= statistics.median(values) <= median[1]
    assert _quantile(values, 0.05) >= p5_floor
    assert _quantile(values, 0.95) <= p95_ceiling
    assert values[0] > 0
    assert values[-1] <= maximum


def test_screenshots_have_a_png_like_heavy_tail() -> None:
    values = _samples(Op.SCREENSHOT, n=10_000)
    slow = sum(v > 0.7 for v in values) / len(values)
    assert 0.1 <= slow <= 0.2  # one in ten from the tail, plus the body's top 5 %
    assert _quantile(values, 0.99) > 3 * statistics.median(values)
    assert sum(v > 2.0 for v in values) > 0  # the tail reaches PNG encoding times


def test_resets_are_sometimes_as_slow_as_a_reboot_from_a_snapshot() -> None:
    values = _samples(Op.RESET, n=10_000)
    assert 0.08 <= sum(v >= 2.5 for v in values) / len(values) <= 0.17
    assert sum(0.95 * 1.5 < v < 2.5 for v in values) == 0  # nothing between the body and the tail


def test_a_seed_gives_the_same_durations_and_ops_draw_independently() -> None:
    profile = LatencyProfile.calibrated()
    first = LatencyModel(profile, seed=7)
    second = LatencyModel(profile, seed=7)
    taps = [first.sample(Op.TAP) for _ in range(50)]
    # Interleaving other operations does not change the taps' durations.
    interleaved = []
    for _ in range(50):
        second.sample(Op.SCREENSHOT)
        interleaved.append(second.sample(Op.TAP))
    assert taps == interleaved
    other = LatencyModel(profile, seed=8)
    assert taps != [other.sample(Op.TAP) for _ in range(50)]
    by_name = LatencyModel(profile, seed="sim-3").sample(Op.KEY)
    assert by_name == LatencyModel(profile, seed="sim-3").sample(Op.KEY)


def test_wall_time_is_the_sample_scaled() -> None:
    profile = LatencyProfile.calibrated()
    simulated = LatencyModel(profile, seed=1)
    fast = LatencyModel(profile, seed=1, time_scale=0.01)
    for op in Op:
        assert fast.wall(op) == pytest.approx(simulated.sample(op) * 0.01)
    assert LatencyModel(profile, seed=1, time_scale=0).wall(Op.BOOT) == 0
    off = LatencyModel(LatencyProfile.off(), seed=1)
    assert all(off.wall(op) == 0 and off.sample(op) == 0 for op in Op)
    assert LatencyProfile.off().is_off
    assert not profile.is_off
    assert all(profile.parts(op) for op in Op)


@pytest.mark.parametrize("scale", [-1.0, math.nan, math.inf])
def test_time_scale_must_be_finite_and_not_negative(scale: float) -> None:
    with pytest.raises(ValueError, match="time_scale"):
        LatencyModel(LatencyProfile.off(), seed=0, time_scale=scale)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"low_s": 0.0, "high_s": 1.0},
        {"low_s": 2.0, "high_s": 1.0},
        {"low_s": 0.1, "high_s": math.inf},
        {"low_s": 0.1, "high_s": 1.0, "max_s": 0.5},
        {"low_s": 0.1, "high_s": 1.0, "tail_p": 1.5, "tail_low_s": 1, "tail_high_s": 2},
        {"low_s": 0.1, "high_s": 1.0, "tail_p": 0.1},
        {"low_s": 0.1, "high_s": 1.0, "tail_p": 0.1, "tail_low_s": 3, "tail_high_s": 2},
    ],
)
def test_impossible_spreads_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="Spread"):
        Spread(**kwargs)


def test_fault_frequencies_follow_the_rates() -> None:
    rates = FaultRates(hang=0.1, crash=0.05, offline=0.02, white_frame=0.2)
    model = FaultModel(rates, seed=3)
    n = 20_000
    shots = Counter(model.draw(Op.SCREENSHOT) for _ in range(n))
    taps = Counter(model.draw(Op.TAP) for _ in range(n))
    for fault, rate in [(Fault.HANG, 0.1), (Fault.CRASH, 0.05), (Fault.OFFLINE, 0.02)]:
        assert shots[fault] / n == pytest.approx(rate, abs=0.01)
        assert taps[fault] / n == pytest.approx(rate, abs=0.01)
    assert shots[Fault.WHITE_FRAME] / n == pytest.approx(0.2, abs=0.01)
    assert taps[Fault.WHITE_FRAME] == 0  # white frames are for screenshots only
    assert taps[None] / n == pytest.approx(0.83, abs=0.015)


def test_faults_are_seeded_and_none_without_rates() -> None:
    rates = FaultRates(hang=0.3)
    draws = FaultModel(rates, seed=5)
    again = FaultModel(rates, seed=5)
    assert [draws.draw(Op.KEY) for _ in range(100)] == [again.draw(Op.KEY) for _ in range(100)]
    other = FaultModel(rates, seed=6)
    assert [other.draw(Op.KEY) for _ in range(100)] != [again.draw(Op.KEY) for _ in range(100)]
    quiet = FaultModel(FaultRates(), seed=0)
    assert all(quiet.draw(op) is None for op in Op for _ in range(100))
    certain = FaultModel(FaultRates(offline=1.0), seed=0)
    assert all(certain.draw(op) is Fault.OFFLINE for op in Op)


def test_fault_rates_parse_the_cli_form() -> None:
    assert FaultRates.parse("hang=0.01,crash=0.001") == FaultRates(hang=0.01, crash=0.001)
    spaced = FaultRates.parse(" white_frame = 0.5 , offline=1e-3 ,")
    assert spaced == FaultRates(white_frame=0.5, offline=0.001)
    assert FaultRates.parse("") == FaultRates()
    assert FaultRates.parse("hang=1").total == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hang", r"'hang' is not name=probability"),
        (
            "freeze=0.1",
            r"unknown fault 'freeze' in 'freeze=0.1'; the faults are hang, crash, offline, white_fr",
        ),
        ("hang=lots", r"fault rate hang='lots' is not a number"),
        ("crash=1.5", r"fault rate crash=1.5 is not a probability in \[0, 1\]"),
        ("crash=-0.1", r"is not a probability"),
        ("crash=nan", r"is not a probability"),
        ("hang=0.1,hang=0.2", r"fault 'hang' is given twice"),
        ("hang=0.6,crash=0.6", r"fault rates must add up to at most 1, got 1.2"),
    ],
)
def test_bad_fault_rates_fail_with_one_clear_sentence(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FaultRates.parse(text)


@pytest.mark.parametrize("value", [-0.1, 1.1, math.nan, True])
def test_fault_rates_are_validated_when_built(value: float) -> None:
    with pytest.raises(ValueError, match="hang must be a probability"):
        FaultRates(hang=value)


def test_task_slowness_is_log_uniform_fixed_per_task_and_bounded() -> None:
    ids = [f"general/task-{i}" for i in range(N)]
    factors = [task_slowness(task_id, 100.0) for task_id in ids]
    assert all(1.0 <= f <= 100.0 for f in factors)
    assert factors == [task_slowness(task_id, 100.0) for task_id in ids]  # the same every time
    # log-uniform: log10 of the factor is uniform on [0, 2]
    logs = sorted(math.log10(f) for f in factors)
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):
        assert _quantile(logs, q) == pytest.approx(2 * q, abs=0.06)
    assert max(factors) / min(factors) > 90
    assert {task_slowness(task_id, 1.0) for task_id in ids} == {1.0}
    for bad in (0.5, math.inf, math.nan):
        with pytest.raises(ValueError, match="spread"):
            task_slowness("t", bad)
