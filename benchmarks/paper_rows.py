"""The table of ``paper_table.py``'s measured rows: its cells, the issue's goals, the figure and the
Markdown table the documentation includes. Reads rows as ``rows.jsonl`` holds them; measures nothing."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from plotting import saved_figure

from distrl.local.evaluation import mean_and_error

Record = dict[str, Any]
"""A row as ``rows.jsonl`` holds it (JSON)."""
CELLS = (("test", 1.0), ("test", 0.0), ("train", 1.0), ("train", 0.0))
"""The table's columns: the paper's metric (test at temperature 1) first."""
HEADINGS = ("test, T = 1 (the paper's metric)", "test, greedy", "train, T = 1", "train, greedy")


def rates(record: Record, cell: str) -> dict[str, float]:
    return {task: float(success) for task, success in record["cells"][cell]}


def table(rows: list[Record], target_points: float) -> Record:
    """Per start and variant: each cell's mean over seeds (± standard error over seeds, or over tasks for
    one seed), the gain over the start paired by task, episodes and updates, and the time to the target."""
    out: Record = {}
    for start in dict.fromkeys(str(r["start"]) for r in rows):
        starts = [r for r in rows if r["start"] == start and r["variant"] == "start"]
        groups: dict[str, list[Record]] = {}
        for record in rows:
            if record["start"] == start:
                name = str(record["variant"]) + ("" if record["mode"] == "async" else f" ({record['mode']})")
                groups.setdefault(name, []).append(record)
        start_curve = float(starts[0]["curve"][0][2]) if starts and starts[0]["curve"] else None
        for name, records in groups.items():
            entry: Record = {"seeds": sorted(int(r["seed"]) for r in records)}
            for cell in (f"{split}@{temperature:g}" for split, temperature in CELLS):
                entry[cell] = _cell(records, starts if name != "start" else [], cell)
            if name != "start":
                entry["episodes"] = [r["episodes"] for r in records]
                entry["updates"] = [r["updates"] for r in records]
                if start_curve is not None:
                    goal = start_curve + target_points / 100
                    entry["time_to_target_s"] = [
                        next((p[0] for p in r["curve"] if p[2] >= goal), None) for r in records
                    ]
            out[f"{start} / {name}"] = entry
    return out


def _cell(records: list[Record], starts: list[Record], cell: str) -> dict[str, float]:
    per_seed = [rates(r, cell) for r in records]
    means = [sum(found.values()) / len(found) for found in per_seed]
    if len(means) > 1:
        mean, error = mean_and_error(means)
    else:
        mean, error = means[0], math.sqrt(means[0] * (1 - means[0]) / len(per_seed[0]))
    out = {"success": round(100 * mean, 1), "error": round(100 * error, 1)}
    if starts:
        before = rates(starts[0], cell)
        gains = [sum(found[t] - before[t] for t in found) / len(found) for found in per_seed]
        if len(gains) > 1:
            gain, gain_error = mean_and_error(gains)
        else:  # one seed: paired by task
            gain, gain_error = mean_and_error([per_seed[0][t] - before[t] for t in per_seed[0]])
        out |= {"gain": round(100 * gain, 1), "gain_error": round(100 * gain_error, 1)}
    return out


def goals(cells: Record, rows: list[Record], starts: list[str]) -> Record:
    """The issue's goals, from the table: the best gain from each start (beyond 2 standard errors?), A-RIDE
    against every other row paired by seed, the ablations' order and the time to target, async against
    sync."""
    out: Record = {}
    for start in starts:
        trained = {
            k: v for k, v in cells.items() if k.startswith(f"{start} / ") and not k.endswith("/ start")
        }
        for cell in ("test@1", "train@1"):
            best = max(trained, key=lambda k: trained[k][cell]["gain"], default=None)
            if best is not None:
                found = trained[best][cell]
                out[f"{start}: best gain, {cell}"] = {
                    "row": best,
                    "gain": found["gain"],
                    "beyond_2_errors": found["gain"] > 2 * found["gain_error"] > 0,
                }
        test = {
            (str(r["variant"]), str(r["mode"]), int(r["seed"])): rates(r, "test@1")
            for r in rows
            if r["start"] == start
        }
        others = dict.fromkeys(v for v, m, _ in test if m == "async" and v not in ("start", "a-ride"))
        for other in others:
            seeds = sorted(
                s for v, m, s in test if (v, m) == (other, "async") and ("a-ride", "async", s) in test
            )
            if not seeds:
                continue
            pairs = [(test["a-ride", "async", s], test[other, "async", s]) for s in seeds]
            if len(seeds) == 1:  # one seed: paired by task, as the table's cells of one seed are
                mine, theirs = pairs[0]
                diff, error = mean_and_error([mine[task] - theirs[task] for task in mine if task in theirs])
            else:
                diff, error = mean_and_error(
                    [sum(a.values()) / len(a) - sum(b.values()) / len(b) for a, b in pairs]
                )
            out[f"{start}: a-ride minus {other}, test@1"] = {
                "points": round(100 * diff, 1),
                "error": round(100 * error, 1),
                "error_over": "tasks" if len(seeds) == 1 else "seeds",
                "seeds": seeds,
                "ahead_beyond_error": diff > error > 0,
            }
        for key, sync_row in cells.items():  # each algorithm run in sync rounds too, against its async row
            if not (key.startswith(f"{start} / ") and key.endswith(" (sync)")):
                continue
            variant = key.split(" / ", 1)[1].removesuffix(" (sync)")
            async_row = cells.get(f"{start} / {variant}")
            if isinstance(async_row, dict) and "time_to_target_s" in async_row:
                out[f"{start}: time to target, {variant} async vs sync (s per seed)"] = {
                    "seeds": async_row["seeds"],
                    "async": async_row["time_to_target_s"],
                    "sync_seeds": sync_row["seeds"],
                    "sync": sync_row["time_to_target_s"],
                }
    return out


def markdown(cells: Record, minutes: float, target_points: float) -> str:
    """The table as the documentation shows it: per start, its own success, then each row's gain over it
    in points (bold beyond two errors; the row's success where the start's own row is not measured), its
    seeds, updates, and the minute each seed's curve first reached the start + ``target_points``."""
    lines: list[str] = []
    target = f"minute at start + {target_points:g}"
    for start in dict.fromkeys(key.split(" / ")[0] for key in cells):
        if lines:
            lines.append("")
        lines += [
            f"| from `{start}`, {minutes:g} min a run | seeds | "
            + " | ".join(HEADINGS)
            + f" | updates | {target} |",
            "|---|---|" + "---|" * len(HEADINGS) + "---|---|",
        ]
        names = [key.split(" / ", 1)[1] for key in cells if key.startswith(f"{start} / ")]
        for name in names:
            entry = cells[f"{start} / {name}"]
            values = [entry[f"{split}@{temperature:g}"] for split, temperature in CELLS]
            if name == "start":
                shown = [_success(v) + "%" for v in values]
                lines.append(f"| `{start}` itself, success | | " + " | ".join(shown) + " | | |")
                continue
            seeds = ", ".join(map(str, entry["seeds"])) + (
                " (± over tasks)" if len(entry["seeds"]) == 1 else ""
            )
            updates = ", ".join(f"{n:,}" for n in entry["updates"])
            reached = ", ".join(
                "—" if s is None else f"{s / 60:.0f}" for s in entry.get("time_to_target_s", [])
            )
            shown_name = (
                f"`{name.removesuffix(' (sync)')}` in sync rounds"
                if name.endswith(" (sync)")
                else f"`{name}`"
            )
            lines.append(
                f"| {shown_name} | {seeds} | "
                + " | ".join(map(_gain, values))
                + f" | {updates} | {reached} |"
            )
    return "\n".join(lines) + "\n"


def runs_markdown(rows: list[Record], minutes: float) -> str:
    """Each run on a line of its own: per cell its success in % ± the tasks' error and, in brackets, its
    gain over its start paired by task (bold beyond two errors), then its episodes and updates."""
    lines = [
        f"| run, {minutes:g} min | " + " | ".join(HEADINGS) + " | episodes | updates |",
        "|---|" + "---|" * len(HEADINGS) + "---|---|",
    ]
    for record in rows:
        start = str(record["start"])
        if record["variant"] == "start":
            shown = [_success(_cell([record], [], f"{s}@{t:g}")) for s, t in CELLS]
            lines.append(f"| `{start}` (start) | " + " | ".join(shown) + " | | |")
            continue
        starts = [r for r in rows if r["start"] == start and r["variant"] == "start"]
        values = [_cell([record], starts, f"{s}@{t:g}") for s, t in CELLS]
        shown = [_success(v) + (f" ({_gain(v)})" if "gain" in v else "") for v in values]
        mode = "" if record["mode"] == "async" else f" in {record['mode']} rounds"
        lines.append(
            f"| `{record['variant']}`{mode} from `{start}`, seed {record['seed']} | "
            + " | ".join(shown)
            + f" | {record['episodes']:,} | {record['updates']:,} |"
        )
    return "\n".join(lines) + "\n"


def _success(value: dict[str, float]) -> str:
    return f"{value['success']:.1f} ± {value['error']:.1f}"


def _gain(value: dict[str, float]) -> str:
    if "gain" not in value:  # no row of the start itself to pair with: its success
        return _success(value) + "%"
    gain, error = value["gain"], value["gain_error"]
    shown = f"{'+' if gain >= 0 else '−'}{abs(gain):.1f} ± {error:.1f}"
    return f"**{shown}**" if abs(gain) > 2 * error else shown


def styles(count: int) -> list[tuple[Any, str]]:
    """``count`` (colour, line style) pairs, no two alike: twenty colours, then again in dashes and dots (the
    default cycle's ten gave the table's eleventh curve its first's colour)."""
    import matplotlib

    tab20 = matplotlib.colormaps["tab20"]
    pairs = [tab20(i) for i in range(20)]  # each colour dark, then light
    palette = [*pairs[::2], *pairs[1::2]]
    return [(palette[n % len(palette)], ("-", "--", ":")[n // len(palette) % 3]) for n in range(count)]


def plot(rows: list[Record], path: Path) -> None:
    drawn = sorted(
        {(str(r["start"]), str(r["variant"]), str(r["mode"])) for r in rows if r["variant"] != "start"}
    )
    style = dict(zip(drawn, styles(len(drawn)), strict=True))
    with saved_figure(path, size=(8, 4.5)) as axis:
        for start in sorted({str(r["start"]) for r in rows}):
            origin = []  # every curve begins at its start's point, at no time
            for record in rows:
                if record["start"] == start and record["variant"] == "start" and record["curve"]:
                    origin = record["curve"][:1]
                    axis.axhline(
                        100 * record["curve"][0][2], linestyle="--", color="grey", label=f"{start} (start)"
                    )
            for (of, variant, mode), (color, linestyle) in style.items():  # in drawn's order
                if of != start:
                    continue
                curves = [
                    origin + r["curve"]
                    for r in rows
                    if (r["start"], r["variant"], r["mode"]) == (start, variant, mode) and r["curve"]
                ]
                if not curves:
                    continue
                length = min(len(c) for c in curves)
                xs = [sum(c[i][0] for c in curves) / len(curves) / 60 for i in range(length)]
                ys = [[100 * c[i][2] for c in curves] for i in range(length)]
                mean = [sum(y) / len(y) for y in ys]
                low, high = [min(y) for y in ys], [max(y) for y in ys]
                label = f"{start}: {variant}" + ("" if mode == "async" else f" ({mode})")
                axis.plot(xs, mean, marker="o", label=label, color=color, linestyle=linestyle)
                if len(curves) > 1:
                    axis.fill_between(xs, low, high, alpha=0.2, color=color)
        axis.set_xlabel("wall time (minutes, this machine)")
        axis.set_ylabel("success on test tasks at T = 1 (%)")
        axis.set_title("Each algorithm from its start, in the fleet (band: min-max over seeds)")
        axis.legend(fontsize=7)
