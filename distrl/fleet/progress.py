"""A run's progress line: its numbers (``RunStats``) in one line, as ``python -m distrl run`` prints them.

The fields keep one order. Without a width the line holds every field in full (a log). Given a width (a
terminal's), the line takes the full forms where they fit, else the short ones; where even those do not
fit, it leaves fields out, the least telling first. Which fields a width shows does not depend on the
numbers: each field is given a room (``room``, ``full_room``) as wide as its numbers usually grow, and the
fields are chosen by their rooms, so the line does not show one field now and another the next time a
number grows a digit. A field appears once the run has it (a loss with the training, the time left with a
budget) and stays.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from distrl.fleet.ledger import RunStats

__all__ = ["progress_line"]

GAP = "  "
"""Between two fields."""
UNKNOWN = "-"
"""A number the run does not have yet (the loss before the first update)."""


@dataclasses.dataclass(frozen=True)
class _Field:
    full: str
    short: str
    keep: int
    """Where the width is short, fields of a higher ``keep`` are left out first."""
    room: int
    """Characters the short form is given."""
    full_room: int
    """Characters the full form is given."""


def progress_line(stats: RunStats, width: int | None = None) -> str:
    """``stats`` in one line of at most ``width`` characters (None: every field, in full)."""
    fields = _fields(stats)
    full = GAP.join(field.full for field in fields)
    if width is None or (_room(f.full_room for f in fields) <= width and len(full) <= width):
        return full
    shown: list[_Field] = []
    for field in sorted(fields, key=lambda f: f.keep):
        if _room(f.room for f in [*shown, field]) <= width:
            shown.append(field)
    shown = [field for field in fields if field in shown]
    # numbers grown past their room: leave out more, as the rooms would
    while len(shown) > 1 and len(GAP.join(f.short for f in shown)) > width:
        shown.remove(max(shown, key=lambda f: f.keep))
    return GAP.join(field.short for field in shown)[:width]


def _room(rooms: Iterable[int]) -> int:
    widths = list(rooms)
    return sum(widths) + len(GAP) * (len(widths) - 1)


def _fields(stats: RunStats) -> list[_Field]:
    """The fields ``stats`` has, in their order."""
    fields = [
        _Field(_clock(stats.elapsed_s), _clock(stats.elapsed_s), keep=0, room=7, full_room=7),
        _Field(
            f"episodes {stats.completed} ({stats.success_rate:.0%} success)",
            f"{stats.completed} ep {stats.success_rate:.0%}",
            keep=1,
            room=11,
            full_room=26,
        ),
        _Field(
            f"{stats.steps_per_s:.1f} steps/s", f"{stats.steps_per_s:.1f}/s", keep=7, room=7, full_room=13
        ),
    ]
    if stats.goal_episodes or stats.deadline_s:
        left = stats.time_left_s
        clock = UNKNOWN if left is None else _clock(left)
        fields.append(_Field(f"{clock} left", f"{clock} left", keep=6, room=12, full_room=12))
    if stats.training:
        loss = UNKNOWN if stats.actor_loss is None else f"{stats.actor_loss:.3g}"
        entropy = UNKNOWN if stats.entropy is None else f"{stats.entropy:.2f}"
        fields += [
            _Field(f"updates {stats.updates}", f"upd {stats.updates}", keep=9, room=8, full_room=12),
            _Field(f"loss {loss}", f"loss {loss}", keep=8, room=11, full_room=11),
            _Field(f"entropy {entropy}", f"ent {entropy}", keep=12, room=8, full_room=12),
        ]
    recent = f"{stats.recent_success_rate:.0%}" if stats.recent else UNKNOWN
    fields.append(
        _Field(f"last {len(stats.recent)}: {recent} success", f"last {recent}", keep=2, room=9, full_room=22)
    )
    if stats.recent_greedy:
        greedy = f"{stats.recent_greedy_success_rate:.0%}"
        fields.append(
            _Field(
                f"greedy {greedy} of {len(stats.recent_greedy)}",
                f"greedy {greedy}",
                keep=13,
                room=11,
                full_room=18,
            )
        )
    stopped = stats.failed.get("stopped", 0)
    fields += [
        _Field(
            f"hosts {stats.hosts_up}/{stats.hosts} up",
            f"hosts {stats.hosts_up}/{stats.hosts}",
            keep=3,
            room=9,
            full_room=12,
        ),
        _Field(
            f"{stats.in_flight} running, {stats.failures} failed"
            + (f", {stopped} stopped" if stopped else ""),
            f"{stats.in_flight} run {stats.failures} fail" + (f" {stopped} stop" if stopped else ""),
            keep=4,
            room=12,
            full_room=20,
        ),
    ]
    if stats.training:
        fields.append(
            _Field(
                f"policy v{stats.policy_version} lag p50 {stats.lag_p50}",
                f"v{stats.policy_version} lag {stats.lag_p50}",
                keep=5,
                room=9,
                full_room=20,
            )
        )
    if stats.judge:
        fields.append(
            _Field(f"judge: {stats.judging} waiting", f"judge {stats.judging}", keep=10, room=9, full_room=16)
        )
    if stats.unscored:
        fields.append(
            _Field(f"{stats.unscored} unscored", f"{stats.unscored} unsc", keep=11, room=8, full_room=12)
        )
    return fields


def _clock(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
