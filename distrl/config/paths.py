"""Where a folder is to be written: what stands in its way, in words, before any work is done."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cannot_create", "not_a_folder"]


def not_a_folder(folder: str | Path) -> str:
    """What keeps ``folder`` from being, or becoming, a folder: the first of it and its parents that exists
    and is not a folder, in words ("runs/x is a file, not a folder"; a symbolic link to nothing says so);
    "" when nothing does."""
    for path in (Path(folder), *Path(folder).parents):
        if os.path.lexists(path):
            if os.path.isdir(path):  # not Path.is_dir: under a folder that cannot be entered it raises
                return ""
            what = "a link to nothing" if os.path.islink(path) and not os.path.exists(path) else "a file"
            return f"{path} is {what}, not a folder"
    return ""


def cannot_create(folder: str | Path) -> str:
    """Why ``folder`` could not be written into (made first, with its missing parents, where it does not
    exist), in words: ``not_a_folder``'s answer, or the nearest folder that exists is not writable or cannot
    be entered; "" when it could be."""
    target = Path(folder).expanduser()
    if problem := not_a_folder(target):
        return f"cannot create {target}: {problem}"
    nearest = next((path for path in (target, *target.parents) if os.path.isdir(path)), None)
    if nearest is None:
        return ""
    if not os.access(nearest, os.X_OK):
        return f"cannot create {target}: the folder {nearest} cannot be entered"
    if not os.access(nearest, os.W_OK):
        return f"cannot create {target}: the folder {nearest} is not writable"
    return ""
