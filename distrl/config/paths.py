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
            if path.is_dir():
                return ""
            what = "a link to nothing" if path.is_symlink() and not path.exists() else "a file"
            return f"{path} is {what}, not a folder"
    return ""


def cannot_create(folder: str | Path) -> str:
    """Why ``folder`` could not be written into (made first, with its missing parents, where it does not
    exist), in words: ``not_a_folder``'s answer, or the nearest folder that exists is not writable; ""
    when it could be."""
    target = Path(folder).expanduser()
    if problem := not_a_folder(target):
        return f"cannot create {target}: {problem}"
    nearest = next((path for path in (target, *target.parents) if path.is_dir()), None)
    if nearest is not None and not os.access(nearest, os.W_OK | os.X_OK):
        return f"cannot create {target}: the folder {nearest} is not writable"
    return ""
