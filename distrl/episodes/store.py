"""Episodes on disk: one folder per episode, the trajectory in the records' JSON form and its screens as
JPEG files.

The format (``FORMAT_VERSION`` 2)::

    <folder>/
      <episode id, '/' as '~'>/
        episode.json     {"format": 2, "trajectory": {...}, "screens": ["000.jpg", "001.jpg", "final.jpg"]}
        000.jpg ...      the screen each step saw; final.jpg, the screen after the last action

``trajectory`` is the trajectory's JSON form, the one the wire and the replay buffer use
(``distrl.records.forms``: the same fields, types and checks): the task (params and checks included),
host, device, the steps (index, observation, output, action, policy_version, behaviour_logprob, reward,
duration_s), the final observation (or null), end reason, success (true, false or null: unscored), the
judge's verdict, start time, duration, temperature (null: not said) and task group ("" outside one). An
observation's ``screenshot`` is the index of its screen in ``screens``, as it is the index of a frame's
attachment on the wire: the wire's JSON is followed by the screens' bytes (``att``: their lengths), an
episode's by the files of its folder (``screens``: their names).

Screens are stored as JPEG (a PNG from ``screencap`` is re-encoded at ``quality``; the observation then
says ``jpeg``), so an episode of 10 steps of a 1080×2400 phone takes about 1 MB. ``EpisodeWriter`` writes
them (all of them, or a share chosen by the episode id's hash, up to a byte budget); ``read_episodes``
gives them back as ``Trajectory`` records; ``stored_episodes`` gives the viewer and the export each
episode with its screens' files; ``distrl.episodes.export`` turns a folder into a dataset.

Folders of format 1 (their own field names, steps in ``steps.jsonl``) are read too, converted on read
(``distrl.episodes.legacy``); a format newer than this one is refused in one line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import operator
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from PIL import Image

from distrl.episodes.legacy import file_errors, read_format_1, why_unreadable
from distrl.records import Document, DocumentError, Observation, Trajectory
from distrl.records.forms import Attachments, Outbox, trajectory_from_json, trajectory_to_json

__all__ = [
    "FORMAT_VERSION",
    "EpisodeWriter",
    "StoredEpisode",
    "episode_folder_name",
    "read_episode",
    "read_episodes",
    "read_stored",
    "stored_episodes",
]

log = logging.getLogger(__name__)

FORMAT_VERSION = 2
"""The format ``EpisodeWriter`` writes; the reader reads it and format 1, and refuses newer ones."""
EPISODE_FILE = "episode.json"
FINAL_SCREEN = "final.jpg"
JPEG_START = b"\xff\xd8\xff"
"""The first bytes of every JPEG file: the start-of-image marker and the next marker's lead byte."""
JPEG_END = b"\xff\xd9"
"""The last bytes of a whole JPEG file: the end-of-image marker."""


def episode_folder_name(episode_id: str) -> str:
    """The folder an episode is written to: its id, with ``/`` as ``~`` (ids are ``run/xxxx/0000042``).
    ``ValueError`` for an id that names no folder of its own in the episodes' folder (empty, ``.``,
    ``..``, with a NUL) or one the reader passes over (``….partial``): writing it would replace the folder
    itself, or its parent, or be lost."""
    name = episode_id.replace("/", "~")
    if name in ("", ".", "..") or "\0" in name or name.endswith(".partial"):
        raise ValueError(f"trajectory.id {episode_id!r} names no episode folder of its own: not written")
    return name


class EpisodeWriter:
    """Writes episodes into ``folder``: a ``share`` of them (0 to 1, chosen by a hash of the id, so
    the same episodes on every run), until the folder holds ``budget_bytes`` (0: no limit). Blocking:
    run it in a thread."""

    def __init__(
        self, folder: str | Path, *, share: float = 1.0, budget_bytes: int = 0, quality: int = 85
    ) -> None:
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"share must be between 0 and 1, not {share}")
        given: object = budget_bytes
        try:  # a whole number (numpy's too), or a float that is one: 5e9
            budget = int(given) if isinstance(given, float) and given.is_integer() else operator.index(given)  # type: ignore[arg-type]
        except TypeError:
            budget = -1
        if budget < 0 or isinstance(given, bool):
            raise ValueError(
                f"budget_bytes must be a whole number of bytes ≥ 0 (0: none), not {budget_bytes!r}"
            )
        if not (isinstance(quality, int) and 1 <= quality <= 95):
            raise ValueError(f"quality must be a JPEG quality from 1 to 95, not {quality!r}")
        self.folder = Path(folder)
        self.share = share
        self.budget_bytes = budget
        self.quality = quality
        self.written = 0
        """Episodes written by this writer."""
        self.unscored = 0
        """Of ``written``, those with no score (``success`` null and not cut short)."""
        self.skipped = 0
        """Episodes not written: outside the share, or past the budget."""
        self.bytes = _size(self.folder)
        """Bytes the folder holds (what an earlier run wrote included)."""
        self._full_warned = False

    def wanted(self, episode_id: str) -> bool:
        """Whether ``episode_id`` is in the share."""
        if self.share >= 1.0:
            return True
        draw = int(hashlib.sha256(episode_id.encode()).hexdigest()[:8], 16) / 2**32
        return draw < self.share

    def write(self, trajectory: Trajectory) -> Path | None:
        """Write one episode; its folder, or None when it is outside the share or past the budget. An
        episode written before is written again (the same id: the same folder). ``DocumentError`` (a
        ``ValueError``) naming the field when a value has no JSON form (a non-finite reward)."""
        if not self.wanted(trajectory.id):
            self.skipped += 1
            return None
        if self.budget_bytes and self.bytes >= self.budget_bytes:
            self.skipped += 1
            if not self._full_warned:
                self._full_warned = True
                log.warning(
                    "episodes: %s holds %.0f MB, its budget: no more episodes are written",
                    self.folder,
                    self.bytes / 1e6,
                )
            return None
        target = self.folder / episode_folder_name(trajectory.id)  # before anything is written or removed
        outbox = Outbox()
        form = trajectory_to_json(self._in_jpeg(trajectory), "trajectory", outbox)
        screens = _screen_names(form, len(outbox.blobs))
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for name, data in zip(screens, outbox.blobs, strict=True):
            (partial / name).write_bytes(data)
        document = {"format": FORMAT_VERSION, "trajectory": form, "screens": screens}
        (partial / EPISODE_FILE).write_text(json.dumps(document, indent=1, allow_nan=False), "utf-8")
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        self.written += 1
        self.unscored += trajectory.success is None and not trajectory.cut_short
        self.bytes += _size(target)
        return target

    def _in_jpeg(self, trajectory: Trajectory) -> Trajectory:
        """``trajectory`` with every screen a JPEG (PNG re-encoded at ``quality``, JPEG kept as it is)."""
        final = trajectory.final_observation
        return dataclasses.replace(
            trajectory,
            steps=tuple(
                dataclasses.replace(step, observation=self._jpeg(step.observation))
                for step in trajectory.steps
            ),
            final_observation=None if final is None else self._jpeg(final),
        )

    def _jpeg(self, observation: Observation) -> Observation:
        if observation.image_format == "jpeg":
            return observation
        out = io.BytesIO()
        with Image.open(io.BytesIO(observation.screenshot)) as image:
            image.convert("RGB").save(out, "JPEG", quality=self.quality)
        return dataclasses.replace(observation, screenshot=out.getvalue(), image_format="jpeg")


def _screen_names(form: dict[str, Any], count: int) -> list[str]:
    """The file of each of the ``count`` attachments of a trajectory's form: ``NNN.jpg`` the screen step
    NNN saw, ``final.jpg`` the final one."""
    names = [""] * count
    for place, step in enumerate(form["steps"]):
        names[step["observation"]["screenshot"]] = f"{place:03d}.jpg"
    if form["final_observation"] is not None:
        names[form["final_observation"]["screenshot"]] = FINAL_SCREEN
    return names


class StoredEpisode(NamedTuple):
    """An episode as its folder holds it: the trajectory, and the files of its screens."""

    folder: Path
    trajectory: Trajectory
    """Its screenshots are empty (``b""``) when read without them (``load_screens=False``)."""
    screens: tuple[str, ...]
    """The file of each step's screen, in the order of the steps (names in ``folder``)."""
    final_screen: str | None
    """The file of the final screen; None when the trajectory has none."""


class _ScreenFiles(Attachments):
    """The screens of an episode's folder as its document's attachments: attachment k is the file
    ``names[k]`` (each checked to be a file of the folder), read only when ``load``."""

    def __init__(self, folder: Path, names: tuple[str, ...], *, load: bool) -> None:
        super().__init__(len(names), "the episode")
        for index, name in enumerate(names):
            if name in names[:index]:
                raise DocumentError(
                    f"screens[{index}]", f"names {name}, which screens[{names.index(name)}] names already"
                )
            _check_screen(name, folder, f"screens[{index}]")
        self._folder = folder
        self._names = names
        self._load = load

    def fetch(self, index: int, where: str) -> bytes:
        if not self._load:
            return b""
        name = self._names[index]
        try:
            return (self._folder / name).read_bytes()
        except OSError as exc:
            raise DocumentError(where, f"is {name}, which cannot be read ({exc.strerror})") from None


def _check_screen(name: str, folder: Path, where: str) -> None:
    """A screen is a file of the episode's own folder, named plainly (no path, no '..', no link out)."""
    plain = name and "/" not in name and "\\" not in name and name not in (".", "..") and "\0" not in name
    try:
        if not plain or (folder / name).resolve().parent != folder.resolve():
            raise DocumentError(where, f"names {name!r}, not a file of the episode's folder")
        if not (folder / name).is_file():
            raise DocumentError(where, f"names {name}, which is missing")
    except (OSError, RuntimeError) as exc:  # a name too long for the file system; a loop of links (3.11)
        shown = repr(name) if len(name) <= 40 else f"{name[:40]!r}..."
        why = getattr(exc, "strerror", None) or exc
        raise DocumentError(where, f"names {shown}, which cannot be read ({why})") from None
    problem = _not_jpeg(folder / name)
    if problem:
        raise DocumentError(where, f"names {name}, which {problem}")


def _not_jpeg(path: Path) -> str:
    """Why the file ``path`` is not a whole JPEG (its start and end markers read, nothing decoded); ""
    when it is one."""
    try:
        with path.open("rb") as file:
            head = file.read(3)
            if head != JPEG_START:
                return "is not a JPEG (no JPEG start marker)"
            file.seek(-2, io.SEEK_END)
            if file.read(2) != JPEG_END:
                return "is not a whole JPEG (no end marker: cut short?)"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return ""


def episode_folders(folder: str | Path) -> list[Path]:
    """The episodes' folders in ``folder``, in the order of their ids (half-written ones skipped: without
    their episode.json yet, or still named ``.partial``, as a stop before ``write`` renamed it leaves one:
    the episode, written again, is in the folder of its own name)."""
    return [
        path
        for path in sorted(Path(folder).iterdir())
        if not path.name.endswith(".partial") and path.is_dir() and (path / EPISODE_FILE).is_file()
    ]


def read_stored(path: str | Path, *, load_screens: bool = True) -> StoredEpisode:
    """The episode in the folder ``path``, of format 2 or 1; without its screens' bytes unless
    ``load_screens`` (their files are checked all the same: each in the folder, named once, a whole
    JPEG by its start and end markers). ``ValueError`` in one line naming the file
    (and the field) when it is not an episode, or one of a newer format."""
    path = Path(path)
    head_file = path / EPISODE_FILE
    try:
        head = json.loads(head_file.read_text(encoding="utf-8"))
        json.dumps(head, ensure_ascii=False).encode("utf-8")  # "\\ud800" is JSON, but no text to show
    except (OSError, ValueError, RecursionError) as exc:
        raise ValueError(f"{head_file}: {why_unreadable(exc)}") from None
    document = Document(head, "", fail=file_errors(head_file))
    if not document.has("format"):
        raise ValueError(f"{head_file}: has no format field: not an episode (formats 1 to {FORMAT_VERSION})")
    version = document.take("format")
    source = str(head_file)
    if type(version) is not int or not 1 <= version <= FORMAT_VERSION:
        if type(version) is int and version > FORMAT_VERSION:
            raise ValueError(
                f"{head_file}: format {version}, newer than this distrl's {FORMAT_VERSION}: read it with "
                "the distrl that wrote it, or a newer one"
            )
        raise ValueError(f"{head_file}: format {version!r}, not an episode format (1 to {FORMAT_VERSION})")
    form: Any  # checked by the forms' reader, then read for the screens' files
    if version == 1:
        form, names = read_format_1(path, document)
        screens, source = tuple(names), f"{path} (format 1)"
    else:
        form, screens = document.take("trajectory"), document.strings("screens")
        document.close()
    try:
        files = _ScreenFiles(path, screens, load=load_screens)
        trajectory = trajectory_from_json(form, "trajectory", files)
        files.close("screens")
    except DocumentError as exc:
        raise ValueError(f"{source}: {exc}") from None
    for place, step in enumerate(trajectory.steps):
        if step.index != place:
            raise ValueError(f"{source}: trajectory.steps[{place}].index is {step.index}, not {place}")
    final = form["final_observation"]
    return StoredEpisode(
        folder=path,
        trajectory=trajectory,
        screens=tuple(screens[step["observation"]["screenshot"]] for step in form["steps"]),
        final_screen=None if final is None else screens[final["screenshot"]],
    )


def stored_episodes(
    folder: str | Path, *, strict: bool = False, load_screens: bool = False
) -> list[StoredEpisode]:
    """Each episode in ``folder`` (``read_stored``), in the order of their ids, for the viewer and the
    export: a malformed one is skipped with a warning naming its file, or (``strict``) is a
    ``ValueError``; ``ValueError`` too when the folder does not exist, is a file, or holds no good one."""
    if not Path(folder).exists():
        raise ValueError(f"{folder} does not exist")
    if not Path(folder).is_dir():
        raise ValueError(f"{folder} is a file, not a folder")
    found = []
    skipped = 0
    for path in episode_folders(folder):
        try:
            found.append(read_stored(path, load_screens=load_screens))
        except ValueError as exc:
            if strict:
                raise
            skipped += 1
            log.warning("skipping the episode in %s: %s", shown_path(path), exc)
    if not found:
        bad = f" ({skipped} malformed, skipped)" if skipped else ""
        raise ValueError(f"{folder} holds no episodes (folders with {EPISODE_FILE}){bad}")
    return found


def shown_path(path: str | Path) -> str:
    """``path`` as text any stream can print: a byte of its name that is no UTF-8 as ``\\xff`` (as Python
    holds it, a surrogate escape, it cannot be encoded, and a message naming it would be lost)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def read_episodes(folder: str | Path) -> Iterator[Trajectory]:
    """Every episode of ``folder``, in the order of their ids (half-written ones skipped); ``ValueError``
    naming the file of the first malformed one."""
    for path in episode_folders(folder):
        yield read_episode(path)


def read_episode(path: str | Path) -> Trajectory:
    """The episode in ``path``; ValueError naming the file when it is not one."""
    return read_stored(path).trajectory


def _size(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
