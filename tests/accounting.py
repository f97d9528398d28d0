"""The fleet's accounting, as every end-to-end test checks it."""

from __future__ import annotations

from collections.abc import Sequence

from distrl.fleet import RunStats
from distrl.records import Trajectory


def accounted(stats: RunStats, trajectories: Sequence[Trajectory] | None = None) -> None:
    """Every task handed out is completed, failed (and then re-queued), waiting for the judge or still
    running; each trajectory arrived once."""
    assert stats.handed_out == stats.completed + sum(stats.failed.values()) + stats.judging + stats.in_flight
    assert stats.requeued == sum(stats.failed.values())
    if trajectories is not None:
        assert len({t.id for t in trajectories}) == len(trajectories) == stats.completed
