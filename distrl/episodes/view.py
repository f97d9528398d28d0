"""``python -m distrl view DIR``: a static HTML page of the episodes in ``DIR``, to look at what the
policy did, with nothing but a browser.

One ``index.html`` beside the episode folders: a summary (episodes, successes, by task), then each
episode (goal, outcome, the judge's verdict, why it ended) with its steps in order: the screen the step
saw, where a tap or swipe went (a mark over the screen), the model's answer and the reward. Screens are
linked, not copied: the page and the folder travel together; no server, no network. Filters (outcome,
task, policy version; a few lines of script) narrow the list, a size control shows the screens small,
large or at the phone's own resolution (pixel for pixel, its text as legible as on the phone), and the
page's address keeps them; a click on a screen shows that one at full resolution, or small again. The
first episode shown is open; the others open with a click.
"""

from __future__ import annotations

import collections
import html
import os
import urllib.parse
from pathlib import Path

from distrl.episodes.store import StoredEpisode, shown_path, stored_episodes
from distrl.records import Action, InvalidAction, Step

__all__ = ["write_viewer"]

PAGE = "index.html"

_SCRIPT = """
const keys = ["outcome", "task", "version"];
function apply() {
  const want = Object.fromEntries(keys.map(k => [k, document.getElementById(k).value]));
  const size = document.getElementById("size").value;
  document.body.dataset.size = size;
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
  const kept = Object.entries(want).filter(([, v]) => v);
  if (size !== "small") kept.push(["size", size]);
  location.hash = new URLSearchParams(kept).toString();
}
const asked = new URLSearchParams(location.hash.slice(1));
for (const k of [...keys, "size"]) {
  const select = document.getElementById(k);
  if (asked.get(k)) select.value = asked.get(k);
  select.addEventListener("change", apply);
}
for (const screen of document.querySelectorAll(".screen")) {
  screen.addEventListener("click", () => screen.closest("figure").classList.toggle("full"));
}
apply();
"""

_STYLE = """
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } table { border-collapse: collapse; } td, th { padding: 2px 10px; text-align: left; }
details { border-top: 1px solid #ddd; padding: 6px 0; } summary { cursor: pointer; }
.success { color: #197a3c; } .failure { color: #b3261e; } .unscored { color: #777; }
.ended { color: #555; }
.steps { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 12px; margin-top: 8px; }
body { --screen: 180px; } body[data-size=large] { --screen: 360px; }
figure { margin: 0; width: var(--screen); }
figcaption { font-size: 12px; overflow-wrap: anywhere; width: 0; min-width: 100%; }
.screen { position: relative; width: var(--screen); cursor: zoom-in; }
.screen img { width: 100%; display: block; box-sizing: border-box; border: 1px solid #ccc; }
body[data-size=full] figure, body[data-size=full] .screen { width: max-content; }
figure.full, figure.full .screen { width: max-content; }
body[data-size=full] .screen img, figure.full .screen img { width: auto; }
figure.full .screen { cursor: zoom-out; }
body[data-size=full] .mark, figure.full .mark { width: 36px; height: 36px; margin: -22px 0 0 -22px;
  border-width: 4px; }
.mark { position: absolute; width: 12px; height: 12px; margin: -8px 0 0 -8px; border-radius: 50%;
        background: rgba(255, 0, 80, 0.7); border: 2px solid white; }
.lift { background: rgba(0, 120, 255, 0.7); }
"""


_SCREEN = "<div class='screen' title=\"a click: the phone's resolution, or small again\">"
"""A screen's frame (its image and marks inside)."""

_ENDED = {
    "complete": "the policy said the task was complete",
    "impossible": "the policy said the task was impossible",
    "step_limit": "the step limit was reached",
    "device_error": "the device failed",
    "policy_error": "the policy failed or did not answer in time",
    "cancelled": "the run stopped",
}
"""Why an episode ended (``EndReason``), in words: what the policy said is not the outcome."""


def write_viewer(folder: str | Path, *, strict: bool = False) -> Path:
    """Write ``index.html`` into ``folder`` for the episodes there; its path. A malformed episode is
    left out with a warning, or (``strict``) is a ValueError; ValueError too when the folder holds no
    episode; ``OSError`` where the page cannot be written (``distrl view`` tells the two apart)."""
    folder = Path(folder)
    episodes = stored_episodes(folder, strict=strict)
    by_task: collections.Counter[str] = collections.Counter()
    won: collections.Counter[str] = collections.Counter()
    for episode in episodes:
        by_task[episode.trajectory.task.goal] += 1
        won[episode.trajectory.task.goal] += bool(episode.trajectory.success)
    total_won = sum(won.values())
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>distrl episodes</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{_count(len(episodes), 'episode')}, {_count(total_won, 'success', 'successes')}</h1>",
        f"<details class='tasks'><summary>by task ({len(by_task)})</summary>",
        "<table><tr><th>goal</th><th>episodes</th><th>successes</th></tr>",
        *(
            f"<tr><td>{html.escape(goal)}</td><td>{count}</td><td>{won[goal]}</td></tr>"
            for goal, count in by_task.most_common()
        ),
        "</table></details>",
        _filters(episodes),
        *(_episode(episode, first=i == 0) for i, episode in enumerate(episodes)),
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    page = folder / PAGE
    page.write_text("\n".join(parts), encoding="utf-8")
    return page


def _filters(episodes: list[StoredEpisode]) -> str:
    """The filter bar: outcome, task and policy version (the page's address keeps the choice:
    ``index.html#outcome=failure&version=3``)."""
    goals = sorted({episode.trajectory.task.goal for episode in episodes})
    versions = sorted({step.policy_version for episode in episodes for step in episode.trajectory.steps})

    def select(key: str, label: str, options: list[str]) -> str:
        choices = "".join(f"<option>{html.escape(o)}</option>" for o in options)
        return f"<label>{label} <select id='{key}'><option value=''>all</option>{choices}</select></label> "

    return (
        "<p class='filters'>"
        + select("outcome", "outcome", ["success", "failure", "unscored"])
        + select("task", "task", goals)
        + select("version", "policy version", [str(v) for v in versions])
        + "<label>screens <select id='size'><option value='small'>small</option>"
        "<option value='large'>large</option><option value='full'>the phone's resolution</option>"
        "</select></label> <span id='shown'></span></p>"
    )


def _episode(episode: StoredEpisode, *, first: bool) -> str:
    name, trajectory = episode.folder.name, episode.trajectory
    outcome = {True: "success", False: "failure", None: "unscored"}[trajectory.success]
    end = trajectory.end_reason.value
    goal = trajectory.task.goal
    verdict = f" · judge: {html.escape(trajectory.verdict)}" if trajectory.verdict else ""
    figures = [
        _step(name, step, screen) for step, screen in zip(trajectory.steps, episode.screens, strict=True)
    ]
    versions = " ".join(sorted({str(step.policy_version) for step in trajectory.steps}))
    data = (
        f" data-outcome='{outcome}' data-task='{html.escape(goal, quote=True)}' data-versions=' {versions} '"
    )
    if episode.final_screen:
        source = _link(f"{name}/{episode.final_screen}")
        figures.append(
            f"<figure>{_SCREEN}<img src='{source}' alt='final screen'></div>"
            "<figcaption>the final screen</figcaption></figure>"
        )
    return (
        f"<details id='{html.escape(shown_path(name), quote=True)}'"
        f"{data}{' open' if first else ''}>"
        f"<summary><b>{html.escape(goal)}</b> "
        f"<span class='{outcome}'>{outcome}</span> · {_count(len(trajectory.steps), 'step')}"
        f" · <span class='ended'>ended: {html.escape(_ENDED.get(end, end))}</span>"
        f" · {html.escape(trajectory.device)} on {html.escape(trajectory.host)}{verdict}</summary>"
        f"<div class='steps'>{''.join(figures)}</div></details>"
    )


def _count(number: int, noun: str, plural: str = "") -> str:
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def _step(name: str, step: Step, screen: str) -> str:
    action = step.action
    marks = ""
    if isinstance(action, Action) and action.touch is not None and action.lift is not None:
        (ty, tx), (ly, lx) = action.touch, action.lift  # normalised (y, x), as AitW writes them
        marks = f"<span class='mark' style='top:{100 * ty:.1f}%;left:{100 * tx:.1f}%'></span>"
        if (ty, tx) != (ly, lx):
            marks += f"<span class='mark lift' style='top:{100 * ly:.1f}%;left:{100 * lx:.1f}%'></span>"
    if isinstance(action, InvalidAction):
        what = f"invalid: {action.reason}"
    else:
        what = action.type.name + (f" “{action.text}”" if action.text else "")
    source = _link(f"{name}/{screen}")
    return (
        f"<figure>{_SCREEN}<img src='{source}' alt='step {step.index}'>{marks}</div>"
        f"<figcaption>{step.index}. {html.escape(what)} · reward {step.reward}<br>"
        f"<code>{html.escape(step.output[:300])}</code></figcaption></figure>"
    )


def _link(path: str) -> str:
    """``path`` (relative to the page) as an ``src``: its bytes on disk percent-encoded, so that a '#', a
    '?', a space or a name in no UTF-8 still leads to its file."""
    return html.escape(urllib.parse.quote(os.fsencode(path)), quote=True)
