"""``python -m distrl view DIR``: a static HTML page of the episodes in ``DIR``, to look at what the
policy did, with nothing but a browser.

One ``index.html`` beside the episode folders: a summary (episodes, successes, by task), then each
episode (goal, outcome, the judge's verdict, end reason) with its steps in order: the screen the step
saw, where a tap or swipe went (a mark over the screen), the model's answer and the reward. Screens are
linked, not copied: the page and the folder travel together; no server, no network. Filters (outcome,
task, policy version; a few lines of script) narrow the list, and the page's address keeps them. The
first episode shown is open; the others open with a click.
"""

from __future__ import annotations

import collections
import html
from pathlib import Path
from typing import Any

from distrl.episodes.store import raw_episodes

__all__ = ["write_viewer"]

PAGE = "index.html"

_SCRIPT = """
const keys = ["outcome", "task", "version"];
function apply() {
  const want = Object.fromEntries(keys.map(k => [k, document.getElementById(k).value]));
  let shown = 0, opened = false;
  for (const episode of document.querySelectorAll("details[data-outcome]")) {
    const ok = (!want.outcome || episode.dataset.outcome === want.outcome)
      && (!want.task || episode.dataset.task === want.task)
      && (!want.version || episode.dataset.versions.includes(" " + want.version + " "));
    episode.style.display = ok ? "" : "none";
    if (ok && !opened) { episode.open = true; opened = true; }
    shown += ok;
  }
  document.getElementById("shown").textContent = shown + " shown";
  location.hash = new URLSearchParams(Object.entries(want).filter(([, v]) => v)).toString();
}
const asked = new URLSearchParams(location.hash.slice(1));
for (const k of keys) {
  const select = document.getElementById(k);
  if (asked.get(k)) select.value = asked.get(k);
  select.addEventListener("change", apply);
}
apply();
"""

_STYLE = """
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } table { border-collapse: collapse; } td, th { padding: 2px 10px; text-align: left; }
details { border-top: 1px solid #ddd; padding: 6px 0; } summary { cursor: pointer; }
.success { color: #197a3c; } .failure { color: #b3261e; } .unscored { color: #777; }
.steps { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 8px; }
figure { margin: 0; width: 180px; } figcaption { font-size: 12px; overflow-wrap: anywhere; }
.screen { position: relative; width: 180px; }
.screen img { width: 180px; display: block; border: 1px solid #ccc; }
.mark { position: absolute; width: 12px; height: 12px; margin: -6px 0 0 -6px; border-radius: 6px;
        background: rgba(255, 0, 80, 0.7); border: 2px solid white; }
.lift { background: rgba(0, 120, 255, 0.7); }
"""


def write_viewer(folder: str | Path, *, strict: bool = False) -> Path:
    """Write ``index.html`` into ``folder`` for the episodes there; its path. A malformed episode is
    left out with a warning, or (``strict``) is a ValueError; ValueError too when the folder holds no
    episode."""
    folder = Path(folder)
    episodes = raw_episodes(folder, strict=strict)
    by_task: collections.Counter[str] = collections.Counter()
    won: collections.Counter[str] = collections.Counter()
    for _, head, _ in episodes:
        by_task[head["task"]["goal"]] += 1
        won[head["task"]["goal"]] += bool(head["success"])
    total_won = sum(won.values())
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>distrl episodes</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{len(episodes)} episodes, {total_won} successes</h1>",
        f"<details class='tasks'><summary>by task ({len(by_task)})</summary>",
        "<table><tr><th>goal</th><th>episodes</th><th>successes</th></tr>",
        *(
            f"<tr><td>{html.escape(goal)}</td><td>{count}</td><td>{won[goal]}</td></tr>"
            for goal, count in by_task.most_common()
        ),
        "</table></details>",
        _filters(episodes),
        *(_episode(name, head, steps, first=i == 0) for i, (name, head, steps) in enumerate(episodes)),
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    page = folder / PAGE
    page.write_text("\n".join(parts), encoding="utf-8")
    return page


def _filters(episodes: list[tuple[str, dict[str, Any], list[dict[str, Any]]]]) -> str:
    """The filter bar: outcome, task and policy version (the page's address keeps the choice:
    ``index.html#outcome=failure&version=3``)."""
    goals = sorted({head["task"]["goal"] for _, head, _ in episodes})
    versions = sorted({int(step["policy_version"]) for _, _, steps in episodes for step in steps})

    def select(key: str, label: str, options: list[str]) -> str:
        choices = "".join(f"<option>{html.escape(o)}</option>" for o in options)
        return f"<label>{label} <select id='{key}'><option value=''>all</option>{choices}</select></label> "

    return (
        "<p class='filters'>"
        + select("outcome", "outcome", ["success", "failure", "unscored"])
        + select("task", "task", goals)
        + select("version", "policy version", [str(v) for v in versions])
        + "<span id='shown'></span></p>"
    )


def _episode(name: str, head: dict[str, object], steps: list[dict[str, object]], *, first: bool) -> str:
    success = head["success"]
    outcome = {True: "success", False: "failure", None: "unscored"}[success]  # type: ignore[index]
    task = head["task"]
    assert isinstance(task, dict)
    verdict = f" · judge: {html.escape(str(head['verdict']))}" if head.get("verdict") else ""
    figures = [_step(name, step) for step in steps]
    versions = " ".join(sorted({str(step["policy_version"]) for step in steps}))
    data = (
        f" data-outcome='{outcome}' data-task='{html.escape(str(task['goal']), quote=True)}'"
        f" data-versions=' {versions} '"
    )
    if head.get("final_screen"):
        source = html.escape(f"{name}/{head['final_screen']}", quote=True)
        figures.append(
            f"<figure><div class='screen'><img src='{source}' alt='final screen'></div>"
            "<figcaption>the final screen</figcaption></figure>"
        )
    return (
        f"<details id='{html.escape(name, quote=True)}'{data}{' open' if first else ''}>"
        f"<summary><b>{html.escape(str(task['goal']))}</b> "
        f"<span class='{outcome}'>{outcome}</span> · {len(steps)} steps"
        f" · {html.escape(str(head['end_reason']))}"
        f" · {html.escape(str(head['device']))} on {html.escape(str(head['host']))}{verdict}</summary>"
        f"<div class='steps'>{''.join(figures)}</div></details>"
    )


def _step(name: str, step: dict[str, object]) -> str:
    action = step["action"]
    assert isinstance(action, dict)
    marks = ""
    if action.get("touch") is not None:  # normalised (y, x), as AitW writes them
        (ty, tx), (ly, lx) = action["touch"], action["lift"]
        marks = f"<span class='mark' style='top:{100 * ty:.1f}%;left:{100 * tx:.1f}%'></span>"
        if (ty, tx) != (ly, lx):
            marks += f"<span class='mark lift' style='top:{100 * ly:.1f}%;left:{100 * lx:.1f}%'></span>"
    what = f"invalid: {action['invalid']}" if "invalid" in action else str(action.get("type"))
    if action.get("text"):
        what += f" “{action['text']}”"
    source = html.escape(f"{name}/{step['screen']}", quote=True)
    return (
        f"<figure><div class='screen'><img src='{source}' alt='step {step['index']}'>{marks}</div>"
        f"<figcaption>{step['index']}. {html.escape(what)} · reward {step['reward']}<br>"
        f"<code>{html.escape(str(step['output'])[:300])}</code></figcaption></figure>"
    )
