"""``python -m distrl export DIR``: the episodes in ``DIR`` as a dataset that Hugging Face ``datasets``
reads, one row a step, with its screen::

    datasets.load_dataset("imagefolder", data_dir="DIR", split="train")

It writes ``DIR/metadata.jsonl`` (the ``imagefolder`` builder's metadata file): a line per step, its
``file_name`` the step's screen, beside the episode id, the step's index, the goal, the model's output,
the parsed action (as JSON), the log-prob, the policy version, the reward, the episode's success (null:
unscored), the judge's verdict, the task id and split. Nothing is copied: the rows point at the screens.
"""

from __future__ import annotations

import json
from pathlib import Path

from distrl.episodes.store import raw_episodes

__all__ = ["METADATA", "write_metadata"]

METADATA = "metadata.jsonl"


def write_metadata(folder: str | Path, *, strict: bool = False) -> tuple[Path, int]:
    """Write ``folder/metadata.jsonl`` for its episodes; the file and its number of rows. A malformed
    episode is left out with a warning, or (``strict``) is a ValueError; ValueError too when the folder
    holds no episode."""
    folder = Path(folder)
    rows = [
        {
            "file_name": f"{name}/{step['screen']}",
            "episode_id": head["id"],
            "step": step["index"],
            "goal": step["goal"],
            "output": step["output"],
            "action": json.dumps(step["action"]),
            "logprob": step["logprob"],
            "policy_version": step["policy_version"],
            "reward": step["reward"],
            "success": head["success"],
            "verdict": head["verdict"],
            "task_id": head["task"]["id"],
            "split": head["task"]["split"],
        }
        for name, head, steps in raw_episodes(folder, strict=strict)
        for step in steps
    ]
    target = folder / METADATA
    target.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return target, len(rows)
