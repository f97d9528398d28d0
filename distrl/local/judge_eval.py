"""``python -m distrl judge-eval``: what a judge's rewards are worth, measured against the sim's truth.

Episodes are played on simulated phones in this process, half by the expert (with mistakes, so that some
fail) and half by the policy (most of which fail), so that both outcomes occur. The judge is asked about
each, exactly as a run asks it (the final screens, the last actions, the goal), and its verdicts are
compared with the sim's own success checks: accuracy, precision and recall of "success", the confusion
table, what it cost (tokens, requests, this process's CPU) and how long an episode waits for its score.
"""

from __future__ import annotations

import collections
import dataclasses
import random
import time
from collections.abc import Sequence

import anyio

from distrl.errors import JudgeError
from distrl.local.demos import expert_trajectory
from distrl.local.play import Actor, episode_device, rollouts
from distrl.records import Trajectory
from distrl.tasks.draw import TaskDraw, split_tasks
from distrl.tasks.judge import Judge

__all__ = ["Calibration", "calibrate", "calibration_episodes"]

MISTAKE_RATE = 0.3
"""Chance that an expert step is a mistake: about half the expert's episodes fail."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Calibration:
    """A judge's verdicts against the truth, and their cost."""

    true_positive: int
    """Successes the judge called successes."""
    false_negative: int
    false_positive: int
    """Failures the judge called successes: rewards the policy would get for nothing."""
    true_negative: int
    unscored: int
    """Episodes the judge gave no verdict for."""
    why_unscored: str = ""
    """Why, in the judge's most frequent words (a 401, a judge down, its timeouts); empty if none."""
    requests: int
    retries: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    latency_p50_s: float
    latency_p95_s: float
    """Seconds from asking to the verdict, once a call is free (what a judged episode waits before it is
    scored, beyond the queue for ``max_concurrency`` calls)."""
    cpu_s: float
    """This process's CPU time while judging (encoding screens, HTTP, parsing)."""
    wall_s: float

    @property
    def judged(self) -> int:
        return self.true_positive + self.false_negative + self.false_positive + self.true_negative

    @property
    def accuracy(self) -> float:
        return (self.true_positive + self.true_negative) / self.judged if self.judged else 0.0

    @property
    def precision(self) -> float:
        called = self.true_positive + self.false_positive
        return self.true_positive / called if called else 0.0

    @property
    def recall(self) -> float:
        real = self.true_positive + self.false_negative
        return self.true_positive / real if real else 0.0

    def as_json(self) -> dict[str, float | int]:
        """Every count and rate, for ``--json`` and the benchmarks."""
        counts = dataclasses.asdict(self)
        per = max(self.judged + self.unscored, 1)
        return {
            **counts,
            "judged": self.judged,
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "cpu_ms_per_episode": 1000 * self.cpu_s / per,
            "tokens_per_episode": (self.prompt_tokens + self.completion_tokens) / per,
        }

    def report(self) -> str:
        """The table ``judge-eval`` prints."""
        per = max(self.judged + self.unscored, 1)
        return "\n".join(
            [
                f"{self.judged} episodes judged ({self.unscored} without a verdict) in {self.wall_s:.1f} s"
                + (f"; no verdict because {self.why_unscored}" if self.why_unscored else ""),
                f"accuracy {self.accuracy:.1%}  precision {self.precision:.1%}  recall {self.recall:.1%}",
                "                  judge: success   judge: failure",
                f"  truly success   {self.true_positive:>14}   {self.false_negative:>14}",
                f"  truly failure   {self.false_positive:>14}   {self.true_negative:>14}",
                f"cost per episode: {(self.prompt_tokens + self.completion_tokens) / per:.0f} tokens"
                f" ({self.prompt_tokens / per:.0f} in, {self.completion_tokens / per:.0f} out),"
                f" {self.requests / per:.2f} requests, {1000 * self.cpu_s / per:.1f} ms of CPU here",
                f"time to a score: p50 {self.latency_p50_s:.2f} s, p95 {self.latency_p95_s:.2f} s"
                f" ({self.retries} retries, {self.cache_hits} from the cache)",
            ]
        )


def calibration_episodes(
    policy: Actor | None,
    *,
    suite: str,
    split: str,
    episodes: int,
    seed: int = 0,
    width: int = 540,
    height: int = 1200,
) -> list[Trajectory]:
    """``episodes`` episodes of ``suite``'s ``split``, each with the sim's verdict as its ``success`` and
    its final screen: half by the expert with mistakes, half by ``policy`` (all by the expert without one)."""
    if episodes < 1:
        raise ValueError(f"episodes must be ≥ 1, got {episodes}")
    rng = random.Random(f"judge-eval/{suite}/{split}/{seed}")
    chosen = TaskDraw(split_tasks(suite, split), rng).take(episodes)
    by_expert = episodes if policy is None else episodes - episodes // 2
    played: list[Trajectory] = []
    for index, task in enumerate(chosen[:by_expert]):
        device = episode_device(task, seed=seed, width=width, height=height)
        trajectory, _ = expert_trajectory(device, task, rng, MISTAKE_RATE)
        played.append(dataclasses.replace(trajectory, id=f"expert/{index}"))
    if policy is not None and by_expert < episodes:
        played += rollouts(
            policy, chosen[by_expert:], version=0, seed=seed, width=width, height=height, id_prefix="policy"
        )
    return [trajectory for trajectory in played if not trajectory.cut_short]


async def calibrate(judge: Judge, episodes: Sequence[Trajectory]) -> Calibration:
    """Ask ``judge`` about each episode (as many at once as it allows) and compare with their
    ``success``."""
    verdicts: dict[str, bool | None] = {}
    why: collections.Counter[str] = collections.Counter()
    started, cpu = time.perf_counter(), time.process_time()
    requests, retries, hits = judge.stats.requests, judge.stats.retries, judge.stats.cache_hits
    tokens_in, tokens_out = judge.stats.prompt_tokens, judge.stats.completion_tokens
    seen_latencies = len(judge.stats.latency_s)

    async def ask(trajectory: Trajectory) -> None:
        try:
            verdicts[trajectory.id] = (await judge.verdict(trajectory)).success
        except JudgeError as exc:
            verdicts[trajectory.id] = None
            why[str(exc)] += 1

    async with anyio.create_task_group() as tg:
        for trajectory in episodes:
            tg.start_soon(ask, trajectory)
    pairs = [(bool(t.success), verdicts[t.id]) for t in episodes]
    latencies = sorted(list(judge.stats.latency_s)[seen_latencies:]) or [0.0]
    stats = judge.stats
    return Calibration(
        true_positive=sum(1 for truth, said in pairs if truth and said is True),
        false_negative=sum(1 for truth, said in pairs if truth and said is False),
        false_positive=sum(1 for truth, said in pairs if not truth and said is True),
        true_negative=sum(1 for truth, said in pairs if not truth and said is False),
        unscored=sum(1 for _, said in pairs if said is None),
        why_unscored=why.most_common(1)[0][0] if why else "",
        requests=stats.requests - requests,
        retries=stats.retries - retries,
        cache_hits=stats.cache_hits - hits,
        prompt_tokens=stats.prompt_tokens - tokens_in,
        completion_tokens=stats.completion_tokens - tokens_out,
        latency_p50_s=latencies[len(latencies) // 2],
        latency_p95_s=latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))],
        cpu_s=time.process_time() - cpu,
        wall_s=time.perf_counter() - started,
    )
