"""The replay buffer: capacity in steps, staleness, sampling ∝ p^α with exact IS weights, shared
screenshots, and checkpoints that resume the very same draws."""

from __future__ import annotations

import json
import math
import os
import struct
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from distrl.errors import CheckpointError
from distrl.learner.replay import PRIORITY_EPSILON, ReplayBuffer, ReplaySample
from distrl.records import Action, ActionType, EndReason, InvalidAction, Observation, Step, Task, Trajectory

TASK = Task(id="general/alarm/0001", suite="general", goal="Set an alarm for 6pm", params={"hour": 18})


def screen(label: str, size: int = 64) -> bytes:
    """Fake screenshot bytes, a fresh object on every call (equal content for an equal label)."""
    return bytes(bytearray(label.encode().ljust(size, b".")))


def trajectory(
    name: str,
    steps: int,
    *,
    versions: Sequence[int] | None = None,
    screens: Sequence[bytes] | None = None,
    final: bytes | None = b"",
) -> Trajectory:
    """A trajectory of ``steps`` steps; screenshots unique to ``name`` unless ``screens`` are given."""
    versions = versions or [0] * steps
    screens = screens or [screen(f"{name}-{i}") for i in range(steps)]
    actions: list[Action | InvalidAction] = [
        Action(type=ActionType.DUAL_POINT, touch=(0.5, 0.25), lift=(0.5, 0.25)),
        Action(type=ActionType.TYPE, text="6pm"),
        InvalidAction(text="click the thing", reason="no action type"),
    ]
    return Trajectory(
        id=name,
        task=TASK,
        host="h1",
        device="emulator-5554",
        steps=tuple(
            Step(
                index=i,
                observation=Observation(screenshot=screens[i], width=108, height=240, timestamp_s=i + 0.5),
                output=f"out {i}",
                action=actions[i % len(actions)],
                policy_version=versions[i],
                behaviour_logprob=-0.1 * (i + 1),
                reward=1.0 if i == steps - 1 else 0.0,
            )
            for i in range(steps)
        ),
        final_observation=None
        if final is None
        else Observation(screenshot=final or screen(f"{name}-final"), width=108, height=240),
        end_reason=EndReason.COMPLETE,
        success=True,
    )


def filled(
    priorities: Sequence[float], *, alpha: float = 0.5, beta: float = 0.4, seed: int = 0
) -> ReplayBuffer:
    """A buffer holding one 2-step trajectory per priority, each set to that priority."""
    buffer = ReplayBuffer(1000, alpha=alpha, beta=beta, seed=seed)
    for i in range(len(priorities)):
        assert buffer.add(trajectory(f"t{i}", 2), learner_version=0)
    buffer.update_priorities(list(buffer.priorities()), priorities)
    return buffer


def chi_square_survival(statistic: float, dof: int) -> float:
    """P(X² ≥ statistic) for an even number of degrees of freedom (closed form)."""
    assert dof % 2 == 0
    half = statistic / 2
    return math.exp(-half) * sum(half**j / math.factorial(j) for j in range(dof // 2))


def goodness_of_fit(sample: ReplaySample, expected: dict[int, float]) -> float:
    """The chi-square p-value of the sampled keys against the expected probabilities (by key)."""
    counts = Counter(sample.keys)
    n = len(sample.keys)
    statistic = sum((counts[key] - n * p) ** 2 / (n * p) for key, p in expected.items())
    return chi_square_survival(statistic, len(expected) - 1)


# -- capacity, refusals, staleness ------------------------------------------------------------------


def test_capacity_counts_steps_and_evicts_oldest_first() -> None:
    buffer = ReplayBuffer(10)
    for name, steps in (("a", 4), ("b", 3), ("c", 3)):
        assert buffer.add(trajectory(name, steps), learner_version=0)
    assert (len(buffer), buffer.steps) == (3, 10)
    assert buffer.add(trajectory("d", 2), learner_version=0)
    assert [t.id for t in buffer.trajectories()] == ["b", "c", "d"]
    assert buffer.steps == 8
    assert buffer.add(trajectory("e", 5), learner_version=0)
    assert [t.id for t in buffer.trajectories()] == ["c", "d", "e"]
    assert tuple(buffer.priorities()) == (2, 3, 4)
    stats = buffer.stats()
    assert (stats.trajectories, stats.steps, stats.added, stats.evicted) == (3, 10, 5, 2)


def test_a_task_group_is_evicted_whole() -> None:
    """Evicted one at a time, a group's last members stayed, and a draw of whole groups took them for all
    of it: a group-relative baseline over part of its plays."""
    buffer = ReplayBuffer(12)
    for name, group in (("g1-a", "g1"), ("g1-b", "g1"), ("g1-c", "g1"), ("solo", ""), ("g2-a", "g2")):
        assert buffer.add(replace(trajectory(name, 3), group=group), learner_version=0)
    # 15 steps past 12: the oldest, g1-a, goes, and with it the rest of its group
    assert [t.id for t in buffer.trajectories()] == ["solo", "g2-a"]
    assert buffer.stats().evicted == 3
    # a group that alone fills the buffer is kept whole as it arrives, past capacity: evicting its own
    # first members would leave its last ones to be drawn as the whole group
    small = ReplayBuffer(5)
    for name in ("a", "b", "c"):
        assert small.add(replace(trajectory(name, 3), group="g"), learner_version=0)
    assert [t.id for t in small.trajectories()] == ["a", "b", "c"]
    assert small.add(trajectory("next", 1), learner_version=0)  # the next one makes it leave, whole
    assert [t.id for t in small.trajectories()] == ["next"]


def test_a_trajectory_longer_than_capacity_is_kept_alone() -> None:
    buffer = ReplayBuffer(5)
    buffer.add(trajectory("a", 2), learner_version=0)
    assert buffer.add(trajectory("long", 8), learner_version=0)
    assert [t.id for t in buffer.trajectories()] == ["long"]
    assert buffer.steps == 8
    buffer.add(trajectory("b", 1), learner_version=0)  # now the long one is old: it goes
    assert [t.id for t in buffer.trajectories()] == ["b"]
    assert buffer.stats().evicted == 2


def test_empty_trajectories_are_refused() -> None:
    buffer = ReplayBuffer(10)
    empty = Trajectory(
        id="e",
        task=TASK,
        host="h",
        device="d",
        steps=(),
        final_observation=None,
        end_reason=EndReason.CANCELLED,
    )
    assert not buffer.add(empty, learner_version=0)
    assert len(buffer) == 0
    assert buffer.stats().refused_empty == 1
    assert buffer.stats().added == 0
    assert not buffer.add(empty, learner_version=0)
    assert buffer.stats().refused_empty == 2  # counted, not flagged
    stats = buffer.stats()
    assert (stats.mean_priority, stats.max_priority, stats.oldest_version) == (0.0, 0.0, None)


def test_stale_trajectories_are_refused_and_pruned() -> None:
    buffer = ReplayBuffer(100, max_policy_lag=2)
    assert not buffer.add(trajectory("old", 2, versions=[3, 5]), learner_version=6)  # lag 3
    assert not buffer.add(trajectory("older", 1, versions=[1]), learner_version=6)
    assert buffer.stats().dropped_stale == 2
    assert buffer.add(trajectory("ok", 2, versions=[5, 4]), learner_version=6)  # lag 2
    assert buffer.add(trajectory("new", 2, versions=[6, 6]), learner_version=6)
    assert buffer.stats().oldest_version == 4
    assert buffer.prune(6) == 0
    assert buffer.prune(7) == 1
    assert [t.id for t in buffer.trajectories()] == ["new"]
    stats = buffer.stats()
    assert (stats.dropped_stale, stats.added, stats.steps, stats.oldest_version) == (3, 2, 2, 6)

    unlimited = ReplayBuffer(100)
    assert unlimited.add(trajectory("old", 2, versions=[0, 0]), learner_version=1000)
    assert unlimited.prune(10_000) == 0
    assert len(unlimited) == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"capacity": 0},
        {"capacity": 10, "alpha": -0.1},
        {"capacity": 10, "alpha": math.nan},
        {"capacity": 10, "beta": 1.5},
        {"capacity": 10, "beta": -0.1},
        {"capacity": 10, "beta_updates": 0},
        {"capacity": 10, "max_policy_lag": -1},
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="replay"):
        ReplayBuffer(**kwargs)  # type: ignore[arg-type]


def test_the_defaults_and_the_edge_settings_are_a_buffer() -> None:
    buffer = ReplayBuffer(10)
    assert (buffer.alpha, buffer.initial_beta, buffer.beta_updates, buffer.seed) == (0.5, 0.4, 1000, 0)
    assert buffer.max_policy_lag is None
    for edge in ({"capacity": 1}, {"capacity": 5, "beta": 1.0}, {"capacity": 5, "beta_updates": 1}):
        ReplayBuffer(**edge)
    assert ReplayBuffer(5, max_policy_lag=0).max_policy_lag == 0  # only the learner's own version


# -- priorities and sampling ------------------------------------------------------------------------


def test_new_trajectories_get_the_largest_priority_ever_set() -> None:
    buffer = ReplayBuffer(100)
    buffer.add(trajectory("a", 1), learner_version=0)
    assert buffer.priorities()[0] == 1.0
    buffer.update_priorities([0], [5.0])
    buffer.add(trajectory("b", 1), learner_version=0)
    assert buffer.priorities()[1] == 5.0 + PRIORITY_EPSILON
    buffer.update_priorities([0, 1], [0.1, 0.2])  # the maximum is remembered, not recomputed
    buffer.add(trajectory("c", 1), learner_version=0)
    assert buffer.priorities()[2] == 5.0 + PRIORITY_EPSILON
    stats = buffer.stats()
    assert stats.max_priority == 5.0 + PRIORITY_EPSILON
    assert stats.mean_priority == pytest.approx((0.1 + 0.2 + 5.0) / 3 + PRIORITY_EPSILON)


def test_sampling_frequencies_follow_priority_to_the_alpha() -> None:
    priorities = [0.5, 1.0, 2.0, 4.0, 8.0]
    alpha = 0.7
    buffer = filled(priorities, alpha=alpha, seed=3)
    powered = [(p + PRIORITY_EPSILON) ** alpha for p in priorities]
    expected = {key: w / sum(powered) for key, w in zip(buffer.priorities(), powered, strict=True)}
    sample = buffer.sample(20_000)
    assert goodness_of_fit(sample, expected) > 1e-3
    for key, probability in zip(sample.keys, sample.probabilities, strict=True):
        assert probability == pytest.approx(expected[key], rel=1e-12)
    # The test has power: uniform would be far off.
    uniform = dict.fromkeys(buffer.priorities(), 1 / len(priorities))
    assert goodness_of_fit(sample, uniform) < 1e-12
    assert buffer.stats().sampled == 20_000


def test_alpha_zero_samples_uniformly() -> None:
    buffer = filled([0.01, 1.0, 100.0, 5.0, 0.0], alpha=0.0, seed=4)
    sample = buffer.sample(20_000)
    assert set(sample.probabilities) == {0.2}
    assert set(sample.weights) == {1.0}
    assert goodness_of_fit(sample, dict.fromkeys(buffer.priorities(), 0.2)) > 1e-3


def test_importance_weights_match_the_formula_over_the_whole_buffer() -> None:
    alpha, beta = 1.0, 0.5
    buffer = filled([1.0, 2.0, 4.0], alpha=alpha, beta=beta, seed=0)
    p = buffer.priorities()
    n = len(p)
    probability = {key: p[key] ** alpha / sum(v**alpha for v in p.values()) for key in p}
    biggest = max((n * probability[key]) ** -beta for key in p)
    sample = buffer.sample(200)
    assert set(sample.keys) == set(p)
    for key, weight, prob in zip(sample.keys, sample.weights, sample.probabilities, strict=True):
        assert prob == pytest.approx(probability[key], rel=1e-12)
        assert weight == pytest.approx((n * probability[key]) ** -beta / biggest, rel=1e-12)
        assert 0 < weight <= 1
    assert max(sample.weights) == pytest.approx(1.0)
    # By hand: P = 1/7, 2/7, 4/7 -> w = 1, (1/2)^0.5, (1/4)^0.5.
    by_key = dict(zip(sample.keys, sample.weights, strict=True))
    assert [by_key[k] for k in p] == pytest.approx([1.0, 0.5**0.5, 0.5], rel=1e-5)

    # The normaliser is the whole buffer's, not the draw's: a draw of only the likeliest is below 1.
    likeliest = list(p)[2]
    buffer.update_priorities([likeliest], [1e6])
    only = buffer.sample(1)
    assert only.keys == (likeliest,)
    assert only.weights[0] == pytest.approx(((1.0 + PRIORITY_EPSILON) / (1e6 + PRIORITY_EPSILON)) ** 0.5)


def test_beta_anneals_linearly_to_one_and_stays() -> None:
    buffer = ReplayBuffer(10, beta=0.4, beta_updates=3)
    seen = [buffer.beta]
    for _ in range(5):
        buffer.advance()
        seen.append(buffer.stats().beta)
    assert seen == pytest.approx([0.4, 0.6, 0.8, 1.0, 1.0, 1.0])
    assert seen[3] == 1.0

    weighted = filled([1.0, 4.0], alpha=1.0, beta=0.0)
    assert set(weighted.sample(50).weights) == {1.0}  # β = 0: no correction
    weighted.beta_updates = 1
    weighted.advance()
    sample = weighted.sample(100)
    low, high = weighted.priorities().values()
    assert sorted(set(sample.weights)) == pytest.approx([low / high, 1.0])  # β = 1: full correction


def test_update_priorities_changes_what_is_sampled() -> None:
    buffer = filled([1.0, 1.0, 1.0], alpha=1.0)
    starved = list(buffer.priorities())[1]
    buffer.update_priorities([starved], [0.0])
    assert buffer.priorities()[starved] == PRIORITY_EPSILON  # tiny, never zero
    assert starved not in buffer.sample(5000).keys
    buffer.update_priorities([starved], [1000.0])
    assert Counter(buffer.sample(1000).keys)[starved] > 900


def test_update_priorities_ignores_evicted_keys_and_refuses_bad_values() -> None:
    buffer = ReplayBuffer(4)
    for name in "abc":
        buffer.add(trajectory(name, 2), learner_version=0)
    assert tuple(buffer.priorities()) == (1, 2)
    buffer.update_priorities([0, 1], [9.0, 3.0])  # 0 was evicted: skipped
    assert buffer.priorities()[1] == 3.0 + PRIORITY_EPSILON
    for bad in (math.nan, math.inf, -1.0):
        with pytest.raises(ValueError, match="priority"):
            buffer.update_priorities([2, 1], [7.0, bad])
        assert buffer.priorities()[2] == 1.0  # nothing changed
    with pytest.raises(ValueError, match="never given out"):
        buffer.update_priorities([99], [1.0])
    with pytest.raises(ValueError, match="never given out"):
        buffer.update_priorities([3], [1.0])  # the next key to give out: not given yet
    with pytest.raises(ValueError, match=r"key 1\.5 was never given out"):
        buffer.update_priorities([1.5], [1.0])  # type: ignore[list-item]  # was skipped as if evicted
    with pytest.raises(ValueError, match="2 keys but 1"):
        buffer.update_priorities([1, 2], [1.0])


def test_sample_refuses_an_empty_buffer_and_no_draws() -> None:
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(10).sample(1)
    with pytest.raises(ValueError, match="at least 1"):
        filled([1.0]).sample(0)


def test_sampling_is_deterministic_for_a_seed() -> None:
    def draws(seed: int) -> list[tuple[int, ...]]:
        buffer = filled([1.0, 2.0, 3.0, 4.0], seed=seed)
        return [buffer.sample(20).keys for _ in range(3)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


def test_a_sample_hands_out_each_keys_trajectory_and_counts_the_draws() -> None:
    buffer = filled([1.0, 2.0, 3.0])
    by_key = dict(zip(buffer.priorities(), buffer.trajectories(), strict=True))
    first, second = buffer.sample(5), buffer.sample(4)
    for sample in (first, second):
        assert sample.trajectories == tuple(by_key[key] for key in sample.keys)
    assert buffer.stats().sampled == 9


# -- shared screenshots -----------------------------------------------------------------------------


def test_identical_screenshots_are_shared_and_released_with_their_last_holder() -> None:
    home, page = screen("home", 1000), screen("page", 500)
    first = trajectory("a", 2, screens=[home, page], final=screen("home", 1000))
    second = trajectory("b", 2, screens=[screen("home", 1000), screen("other", 300)])
    assert first.steps[0].observation.screenshot is not second.steps[0].observation.screenshot
    buffer = ReplayBuffer(4)
    buffer.add(first, learner_version=0)
    buffer.add(second, learner_version=0)
    held_first, held_second = buffer.trajectories()
    assert (held_first, held_second) == (first, second)
    shared = held_first.steps[0].observation.screenshot
    assert held_second.steps[0].observation.screenshot is shared
    assert held_first.final_observation is not None
    assert held_first.final_observation.screenshot is shared
    stats = buffer.stats()
    raw = 1000 + 500 + 1000 + 1000 + 300 + 64  # second's final screenshot is its own 64 bytes
    assert stats.raw_screenshot_bytes == raw
    assert stats.screenshot_bytes == 1000 + 500 + 300 + 64

    buffer.add(trajectory("c", 2), learner_version=0)  # evicts "a": "home" is still held by "b"
    stats = buffer.stats()
    assert stats.screenshot_bytes == 1000 + 300 + 64 + 3 * 64
    assert stats.raw_screenshot_bytes == 1000 + 300 + 64 + 3 * 64
    buffer.add(trajectory("d", 2), learner_version=0)  # evicts "b": "home" goes too
    assert buffer.stats().screenshot_bytes == 6 * 64 == buffer.stats().raw_screenshot_bytes


# -- checkpoints ------------------------------------------------------------------------------------


def busy_buffer(seed: int = 11) -> ReplayBuffer:
    """A buffer with history: evictions, a refusal, set priorities, β advanced and the RNG used."""
    buffer = ReplayBuffer(12, alpha=0.6, beta=0.3, beta_updates=10, max_policy_lag=5, seed=seed)
    common = screen("home", 200)
    for i in range(6):
        buffer.add(
            trajectory(f"t{i}", 3, versions=[i, i, i + 1], screens=[common, *[screen(f"t{i}")] * 2]),
            learner_version=i,
        )
    buffer.add(trajectory("empty", 0), learner_version=6)
    buffer.add(trajectory("stale", 1, versions=[0]), learner_version=6)
    buffer.update_priorities(list(buffer.priorities()), [0.3, 2.5, 0.7, 1.1])
    for _ in range(4):
        buffer.sample(3)
        buffer.advance()
    return buffer


def test_save_and_load_give_back_the_same_buffer_and_the_same_next_draws(tmp_path: Path) -> None:
    buffer = busy_buffer()
    path = tmp_path / "replay.bin"
    buffer.save(path)
    assert os.listdir(tmp_path) == ["replay.bin"]  # no temporary file left behind
    loaded = ReplayBuffer.load(path)
    assert loaded.trajectories() == buffer.trajectories()
    assert list(loaded.priorities().items()) == list(buffer.priorities().items())  # keys, order, values
    assert loaded.stats() == buffer.stats()
    assert loaded.stats().screenshot_bytes < loaded.stats().raw_screenshot_bytes  # sharing rebuilt
    for _ in range(3):
        assert loaded.sample(25) == buffer.sample(25)
        loaded.advance()
        buffer.advance()
    # Keys and the max priority carry on where they were.
    for b in (loaded, buffer):
        b.add(trajectory("next", 2, versions=[9, 9]), learner_version=9)
    assert list(loaded.priorities().items()) == list(buffer.priorities().items())
    assert list(loaded.priorities().values())[-1] == 2.5 + PRIORITY_EPSILON
    assert loaded.stats() == buffer.stats()

    buffer.save(path)  # overwrites
    assert ReplayBuffer.load(path).stats() == buffer.stats()


def test_an_empty_buffer_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "empty.bin"
    ReplayBuffer(7, alpha=0.0, seed=5).save(str(path))
    loaded = ReplayBuffer.load(str(path))
    assert (len(loaded), loaded.capacity, loaded.alpha, loaded.seed) == (0, 7, 0.0, 5)


def test_a_missing_checkpoint_is_reported_as_missing(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist") as caught:
        ReplayBuffer.load(tmp_path / "nope.bin")
    assert caught.value.reason == "missing"
    assert caught.value.path == str(tmp_path / "nope.bin")


def _damaged(data: bytes) -> list[tuple[str, bytes]]:
    header_end = data.index(b"\n") + 1
    middle = header_end + (len(data) - header_end) // 2
    return [
        ("empty", b""),
        ("header cut", data[: header_end - 5]),
        ("not JSON", b"{nope\n" + data[header_end:]),
        ("wrong format", data.replace(b'"distrl.replay"', b'"distrl.other"', 1)),
        ("truncated", data[:-10]),
        ("entry cut", data[: header_end + 7]),
        ("flipped byte", data[:middle] + bytes([data[middle] ^ 0x40]) + data[middle + 1 :]),
        ("trailing bytes", data + b"x"),
        ("bad field", data.replace(b'"capacity":12', b'"capacity":"12"', 1)),
    ]


def test_a_damaged_checkpoint_is_reported_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "replay.bin"
    busy_buffer().save(path)
    good = path.read_bytes()
    for what, data in _damaged(good):
        assert data != good, what
        path.write_bytes(data)
        with pytest.raises(CheckpointError, match="is corrupt: ") as caught:
            ReplayBuffer.load(path)
        assert caught.value.reason == "corrupt", what
        assert "\n" not in str(caught.value), what


def _rewritten(
    data: bytes, header: dict[str, object] | None = None, entries: float = -1, **fields: float
) -> bytes:
    """``data`` (a saved buffer) with header fields replaced (``"counters.added"`` for a nested one), and
    entry ``entries``'s key or priority replaced (``key=``, ``priority=``) under a CRC-32 that matches
    again: damage that only the checks of the values can see."""
    end = data.index(b"\n") + 1
    head = json.loads(data[:end])
    for name, value in (header or {}).items():
        section, _, field = name.partition(".")
        if field:
            head[section][field] = value
        else:
            head[name] = value
    body, out, offset, i = data[end:], b"", 0, 0
    while offset < len(body):
        key, priority, length = struct.unpack(">QdQ", body[offset : offset + 24])
        frame = body[offset + 28 : offset + 28 + length]
        if i == entries:
            key, priority = int(fields.get("key", key)), float(fields.get("priority", priority))
        packed = struct.pack(">QdQ", key, priority, length)
        out += packed + struct.pack(">I", zlib.crc32(frame, zlib.crc32(packed))) + frame
        offset, i = offset + 28 + length, i + 1
    return json.dumps(head, separators=(",", ":")).encode() + b"\n" + out


@pytest.mark.parametrize(
    ("header", "entry", "needle"),
    [
        ({"updates": -1}, {}, "its header's updates must be >= 0, not -1"),
        ({"counters.dropped_stale": -2}, {}, "its header's counters.dropped_stale must be >= 0, not -2"),
        ({"next_key": -1}, {}, "next_key must be >= 0, not -1"),
        ({"trajectories": -1}, {}, "trajectories must be >= 0, not -1"),
        ({"max_priority": 0.0}, {}, "max_priority is 0.0, not a number > 0"),
        ({"max_priority": -1.0}, {}, "max_priority is -1.0"),
        ({"max_policy_lag": "5"}, {}, "its header's max_policy_lag must be an integer, not a string"),
        ({"next_key": 1}, {}, "out of order"),  # keys at or past the next key
        ({}, {"entries": 1, "key": 0}, "trajectory 1 has key 0, out of order"),
        ({}, {"entries": 0, "priority": 0.0}, "a priority of 0.0"),
        ({}, {"entries": 0, "priority": -1.0}, "a priority of -1.0"),
        ({"capacity": 2}, {}, "over its capacity of 2"),
    ],
)
def test_a_header_or_entry_no_buffer_can_have_is_reported_as_corrupt(
    tmp_path: Path, header: dict[str, object], entry: dict[str, float], needle: str
) -> None:
    path = tmp_path / "replay.bin"
    busy_buffer().save(path)
    good = path.read_bytes()
    assert ReplayBuffer.load(path).stats() == busy_buffer().stats()  # the rewriting alone harms nothing
    path.write_bytes(_rewritten(good))
    assert ReplayBuffer.load(path).stats() == busy_buffer().stats()
    path.write_bytes(_rewritten(good, header, **entry))
    with pytest.raises(CheckpointError, match="is corrupt: ") as caught:
        ReplayBuffer.load(path)
    assert needle in str(caught.value)


def test_a_buffer_without_a_policy_lag_limit_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "replay.bin"
    ReplayBuffer(7, max_policy_lag=None).save(path)
    assert ReplayBuffer.load(path).max_policy_lag is None
    ReplayBuffer(7, max_policy_lag=3).save(path)
    assert ReplayBuffer.load(path).max_policy_lag == 3


def test_a_failed_save_leaves_the_last_good_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="cannot write") as caught:
        filled([1.0]).save(tmp_path / "no such folder" / "replay.bin")
    assert caught.value.reason == "io"

    path = tmp_path / "replay.bin"
    filled([1.0]).save(path)
    good = path.read_bytes()
    broken = filled([1.0, 2.0])
    broken.add(replace(trajectory("nan", 1), duration_s=math.nan), learner_version=0)  # no JSON form
    with pytest.raises(CheckpointError, match="no JSON form"):
        broken.save(path)
    assert path.read_bytes() == good
    assert os.listdir(tmp_path) == ["replay.bin"]


# -- checkpoints: what the mutation tool found untested ----------------------------------------------


def _saved(tmp_path: Path, buffer: ReplayBuffer | None = None) -> tuple[Path, bytes]:
    path = tmp_path / "replay.bin"
    (buffer or busy_buffer()).save(path)
    return path, path.read_bytes()


def _corrupt(path: Path, data: bytes) -> str:
    """The message of loading ``data`` from ``path``, which must be refused as corrupt."""
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match="is corrupt: ") as caught:
        ReplayBuffer.load(path)
    assert caught.value.reason == "corrupt"
    return str(caught.value)


def _entries(data: bytes) -> list[tuple[int, bytes]]:
    """A saved buffer's entries: where each starts, and its bytes (fields, CRC and frame)."""
    offset, found = data.index(b"\n") + 1, []
    while offset < len(data):
        length = struct.unpack(">QdQ", data[offset : offset + 24])[2]
        found.append((offset, data[offset : offset + 28 + length]))
        offset += 28 + length
    return found


def test_trajectories_without_a_final_screen_or_with_borrowed_screen_bytes_are_held_and_saved(
    tmp_path: Path,
) -> None:
    """An episode cut short has no final observation; screens decoded from the wire arrive as views of
    the frame. Both are held as plain bytes, and round-trip."""
    borrowed = trajectory("view", 2, screens=[bytearray(screen("a")), memoryview(screen("b"))])  # type: ignore[list-item]
    buffer = ReplayBuffer(10)
    assert buffer.add(trajectory("cut", 2, final=None), learner_version=0)
    assert buffer.add(borrowed, learner_version=0)
    cut, held = buffer.trajectories()
    assert cut.final_observation is None
    assert [type(step.observation.screenshot) for step in held.steps] == [bytes, bytes]
    assert [step.observation.screenshot for step in held.steps] == [screen("a"), screen("b")]
    buffer.save(tmp_path / "replay.bin")
    assert ReplayBuffer.load(tmp_path / "replay.bin").trajectories() == buffer.trajectories()


def test_a_save_writes_a_hidden_temporary_file_beside_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beside it, so the rename is atomic (a temporary file elsewhere may be on another file system);
    hidden and named after it, so a crash's leftover says what it was."""
    renamed: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(source: str, target: str) -> None:
        renamed.append((str(source), str(target)))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", spy)
    path, _ = _saved(tmp_path)
    [(source, target)] = renamed
    assert target == str(path)
    assert Path(source).parent == tmp_path
    assert Path(source).name.startswith(".replay.bin.")
    assert Path(source).name.endswith(".tmp")


def test_a_failed_save_names_the_checkpoint_and_survives_a_leftover_it_cannot_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = filled([1.0])
    broken.add(replace(trajectory("nan", 1), duration_s=math.nan), learner_version=0)
    path = tmp_path / "replay.bin"
    with pytest.raises(CheckpointError, match="no JSON form") as caught:
        broken.save(path)
    assert f"cannot save the replay buffer to {path}: trajectory 'nan'" in str(caught.value)
    assert caught.value.path == str(path)

    def refuse(name: str) -> None:
        raise PermissionError(13, "Permission denied", name)

    monkeypatch.setattr(os, "unlink", refuse)
    with pytest.raises(CheckpointError, match="no JSON form"):  # the cause, not the cleanup's failure
        broken.save(path)


def test_a_folder_that_cannot_be_synced_does_not_fail_the_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def refuse_folders(name: str, flags: int, *mode: int) -> int:
        if os.path.isdir(name):
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, flags, *mode)

    monkeypatch.setattr(os, "open", refuse_folders)
    path, _ = _saved(tmp_path)
    assert ReplayBuffer.load(path).stats() == busy_buffer().stats()


def test_the_header_line_may_be_exactly_as_long_as_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, data = _saved(tmp_path)
    header = data.index(b"\n")  # bytes before the newline
    monkeypatch.setattr("distrl.learner.replay_file.MAX_HEADER_BYTES", header)
    assert ReplayBuffer.load(path).stats() == busy_buffer().stats()
    monkeypatch.setattr("distrl.learner.replay_file.MAX_HEADER_BYTES", header - 1)
    assert "its header line is cut short or too long" in _corrupt(path, data)


def test_a_checkpoint_that_ends_inside_an_entry_says_which(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    start = data.index(b"\n") + 1
    for cut, part in ((start + 7, "7 of 24"), (start + 26, "2 of 4"), (start + 40, "12 of")):
        message = _corrupt(path, data[:cut])
        assert f"it ends inside trajectory 0 ({part}" in message, message


def test_an_entry_exactly_as_long_as_the_frame_limit_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, data = _saved(tmp_path)
    longest = max(len(entry) - 28 for _, entry in _entries(data))
    monkeypatch.setattr("distrl.learner.replay_file.MAX_FRAME_BYTES", longest)
    assert ReplayBuffer.load(path).stats() == busy_buffer().stats()
    monkeypatch.setattr("distrl.learner.replay_file.MAX_FRAME_BYTES", longest - 1)
    assert f"bytes, over the limit of {longest - 1}" in _corrupt(path, data)
    # nor is a file written that load would refuse: the save fails whole, the saved file stays
    with pytest.raises(CheckpointError, match=f"over the limit of {longest - 1}") as caught:
        busy_buffer().save(path)
    assert caught.value.reason == "corrupt"
    assert path.read_bytes() == data


def test_a_trajectory_over_the_wires_header_limit_is_saved_whole(tmp_path: Path) -> None:
    """A trajectory is gathered from many step frames, so its own frame can pass the limits one wire
    frame has (a 1 MiB header): the checkpoint has its own."""
    buffer = ReplayBuffer(10)
    long = trajectory("long", 3)
    long = replace(long, steps=tuple(replace(step, output="x" * 600_000) for step in long.steps))
    assert buffer.add(long, learner_version=0)
    path, _ = _saved(tmp_path, buffer)
    assert ReplayBuffer.load(path).trajectories() == (long,)


def test_a_trajectory_over_the_wires_frame_limit_is_saved_whole(tmp_path: Path) -> None:
    """Likewise for the 256 MiB a wire frame may hold (about 2 s and 0.6 GB of memory)."""
    buffer = ReplayBuffer(10)
    big = trajectory("big", 2, screens=[bytes(200 * 2**20), bytes(60 * 2**20)])
    assert buffer.add(big, learner_version=0)
    path, _ = _saved(tmp_path, buffer)
    assert ReplayBuffer.load(path).trajectories() == (big,)


def test_a_repeated_key_or_one_at_the_next_key_is_out_of_order(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    entries = _entries(data)
    end = data.index(b"\n") + 1
    head = json.loads(data[:end])
    head["trajectories"] += 1
    repeated = json.dumps(head, separators=(",", ":")).encode() + b"\n" + data[end:] + entries[-1][1]
    assert "out of order" in _corrupt(path, repeated)
    last_key = max(busy_buffer().priorities())
    assert "out of order" in _corrupt(path, _rewritten(data, {"next_key": last_key}))
    path.write_bytes(_rewritten(data, {"next_key": last_key + 1}))
    assert ReplayBuffer.load(path).stats() == busy_buffer().stats()


def test_one_trajectory_over_the_capacity_round_trips_but_two_are_corrupt(tmp_path: Path) -> None:
    alone = ReplayBuffer(2)
    assert alone.add(trajectory("long", 3), learner_version=0)
    path, _ = _saved(tmp_path, alone)
    assert ReplayBuffer.load(path).trajectories() == alone.trajectories()
    pair = ReplayBuffer(4)
    for name in ("a", "b"):
        assert pair.add(trajectory(name, 2), learner_version=0)
    _, data = _saved(tmp_path, pair)
    assert "it holds 4 steps, over its capacity of 3" in _corrupt(path, _rewritten(data, {"capacity": 3}))


def test_the_random_generators_state_is_checked_and_keeps_a_pending_gauss(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    rng = json.loads(data[: data.index(b"\n")])["rng"]
    path.write_bytes(_rewritten(data, {"rng": [rng[0], rng[1], 0.5]}))
    assert ReplayBuffer.load(path).stats() == busy_buffer().stats()
    for bad in ({"a": 1, "b": 2, "c": 3}, [rng[0], rng[1], "0.5"], [rng[0], rng[1]], 7):
        message = _corrupt(path, _rewritten(data, {"rng": bad}))
        assert "random generator state is not valid" in message, bad


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ({"counters": 5}, "its header's counters must be an object, not an integer"),
        ({"capacity": "12"}, "its header's capacity must be an integer, not a string"),
        ({"alpha": True}, "its header's alpha must be a number, not a boolean"),
        ({"alpha": "0.6"}, "its header's alpha must be a number, not a string"),
    ],
)
def test_a_header_field_of_the_wrong_kind_is_named_exactly(
    tmp_path: Path, header: dict[str, object], said: str
) -> None:
    path, data = _saved(tmp_path)
    assert _corrupt(path, _rewritten(data, header)).endswith(f"is corrupt: {said}")


def test_a_header_without_a_field_is_corrupt(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    end = data.index(b"\n")
    head = json.loads(data[:end])
    del head["seed"]
    damaged = json.dumps(head).encode() + data[end:]
    assert _corrupt(path, damaged).endswith("is corrupt: its header's seed is missing")


def test_a_file_of_another_format_version_is_refused_by_name(tmp_path: Path) -> None:
    """Version 3 framed each trajectory as a wire message (``TrajectoryReport``); this distrl reads 4."""
    path, data = _saved(tmp_path)
    end = data.index(b"\n")
    head = json.loads(data[:end])
    for version, said in (
        (3, "it has format version 3, not 4: an older distrl wrote it, and this one cannot read it"),
        (5, "it has format version 5, not 4"),
        (4.0, "it has format version 4.0, not 4"),
        ("4", "it has format version '4', not 4"),
    ):
        damaged = json.dumps({**head, "version": version}).encode() + data[end:]
        assert _corrupt(path, damaged).endswith(f"is corrupt: {said}"), version


def test_a_header_with_a_field_no_version_writes_is_corrupt(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    said = "is corrupt: its header has unknown field(s) ['extra']"
    assert _corrupt(path, _rewritten(data, {"extra": 1})).endswith(said)
    said = "is corrupt: its header's counters has unknown field(s) ['extra']"
    assert _corrupt(path, _rewritten(data, {"counters.extra": 1})).endswith(said)


def test_an_entry_whose_frame_is_no_trajectory_says_why(tmp_path: Path) -> None:
    """Bytes under a CRC-32 that matches, but no packed trajectory: the records' reader names the field."""
    path, data = _saved(tmp_path)
    (start, first), *_ = _entries(data)
    key, priority, _ = struct.unpack(">QdQ", first[:24])
    (size,) = struct.unpack(">I", first[28:32])
    document = json.loads(first[32 : 32 + size])
    document["trajectory"]["steps"][0]["reward"] = "high"
    packed = json.dumps(document).encode()
    frame = struct.pack(">I", len(packed)) + packed + first[32 + size :]
    fields = struct.pack(">QdQ", key, priority, len(frame))
    entry = fields + struct.pack(">I", zlib.crc32(frame, zlib.crc32(fields))) + frame
    said = "trajectory 0 cannot be decoded (trajectory.steps[0].reward must be a number, not a string)"
    assert _corrupt(path, data[:start] + entry + data[start + len(first) :]).endswith(said)
