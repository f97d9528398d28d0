"""``python -m distrl export DIR``: the episodes in ``DIR`` as a dataset that Hugging Face ``datasets``
reads, one row a step, with its screen::

    datasets.load_dataset("imagefolder", data_dir="DIR", split="train")

It writes ``DIR/metadata.jsonl`` (the ``imagefolder`` builder's metadata file): a line per step, its
``file_name`` the step's screen, beside the episode id, the task id, split and goal, the episode's
success (null: unscored) and the judge's verdict, then the step's own fields in the records' JSON form
(``distrl.records.forms``, as the episode holds them): index, output, action (its form, as JSON text),
policy_version, behaviour_logprob, reward and duration_s. Nothing is copied: the rows point at the
screens.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from distrl.episodes.store import shown_path, stored_episodes
from distrl.records.forms import Outbox, step_to_json

__all__ = ["METADATA", "write_metadata"]

METADATA = "metadata.jsonl"

log = logging.getLogger(__name__)


def write_metadata(folder: str | Path, *, strict: bool = False) -> tuple[Path, int]:
    """Write ``folder/metadata.jsonl`` for its episodes; the file and its number of rows. A malformed
    episode is left out with a warning, or (``strict``) is a ValueError; ValueError too when the folder
    holds no episode; ``OSError`` where the file cannot be written (``distrl export`` tells the two
    apart)."""
    folder = Path(folder)
    rows = []
    for episode in stored_episodes(folder, strict=strict):
        if problem := _unnamed(episode.folder.name):
            if strict:
                raise ValueError(f"{shown_path(episode.folder)}: {problem}")
            log.warning("leaving out the episode in %s: %s", shown_path(episode.folder), problem)
            continue
        trajectory = episode.trajectory
        for step, screen in zip(trajectory.steps, episode.screens, strict=True):
            form = step_to_json(step, "step", Outbox())
            del form["observation"]  # the row's image
            rows.append(
                {
                    "file_name": f"{episode.folder.name}/{screen}",
                    "episode_id": trajectory.id,
                    "task_id": trajectory.task.id,
                    "split": trajectory.task.split,
                    "goal": trajectory.task.goal,
                    "success": trajectory.success,
                    "verdict": trajectory.verdict,
                    **form,
                    "action": json.dumps(form["action"]),
                }
            )
    target = folder / METADATA
    target.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return target, len(rows)


def _unnamed(name: str) -> str:
    """Why a row cannot name a screen in the folder ``name`` (its bytes are no UTF-8, which the metadata's
    JSON cannot hold), or ""."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "its folder's name is not UTF-8, so metadata.jsonl cannot name its screens: rename the folder"
    return ""
