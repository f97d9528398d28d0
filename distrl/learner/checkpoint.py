"""A learner's checkpoints: what one holds (``save_learner`` / ``load_learner``), and the folder of them
(``Checkpoints``), without pickle (``distrl.learner.tensor_files``).

- ``save_learner`` / ``load_learner``: the adapter (PEFT layout, ``adapter/``), and in
  ``learner.safetensors`` the algorithm's networks (its critics), both optimisers, the RNG states, the
  update count and the run's progress counters; the replay buffer with its priorities and sampler state
  in ``replay.bin``. ``load`` then ``update()`` gives bitwise the update an uninterrupted run would have
  made. A checkpoint that does
  not load (missing, damaged, of another algorithm or model) leaves the learner as it was.
- ``Checkpoints``: a folder of checkpoints ``step-000000050/`` …, each written in a ``.tmp-*`` folder,
  sealed with a ``manifest.json`` (size and SHA-256 of every file), fsynced and renamed into place; then
  the text file ``latest`` is replaced atomically. A crash at any point leaves ``latest`` naming a
  complete checkpoint, and ``verify`` tells a damaged one from a good one.

Everything here blocks on disk: the learner calls it from a worker thread. One writer per folder.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch
from safetensors.torch import load_file

from distrl.errors import CheckpointError, PolicyError
from distrl.learner.replay import ReplayBuffer
from distrl.learner.tensor_files import (
    META_KEY,
    load_optimizer_state,
    load_tensors,
    optimizer_state,
    restore_rng_state,
    rng_state,
    save_tensors,
)

if TYPE_CHECKING:  # read through the learner; importing the policy here would cost every importer
    from distrl.config import LearnerSettings
    from distrl.policy import Policy

__all__ = [
    "LATEST",
    "MANIFEST",
    "META_KEY",
    "Checkpoints",
    "load_learner",
    "load_optimizer_state",
    "load_tensors",
    "optimizer_state",
    "restore_rng_state",
    "restore_training_state",
    "rng_state",
    "save_learner",
    "save_tensors",
    "training_state",
    "unsealed",
]

MANIFEST = "manifest.json"
"""The file in every checkpoint folder that lists the others with their size and SHA-256."""
LATEST = "latest"
"""The text file in the root naming the newest checkpoint folder."""
_STEP_NAME = re.compile(r"step-(\d{9,})")
_TMP = ".tmp-"
_READ_BYTES = 1 << 20
_STATE_FILE = "learner.safetensors"
_FORMAT = 2
"""2: the algorithm's own networks (1, before: every algorithm's three critics)."""
_REPLAY_FILE = "replay.bin"
_ADAPTER_DIR = "adapter"

# --- a learner's state ----------------------------------------------------------------------------------


class Learner(Protocol):
    """What a checkpoint holds of a learner (``distrl.learner.core.Learner``): its adapter, its replay
    buffer, and what its ``state_dict`` gives."""

    replay: ReplayBuffer

    @property
    def policy(self) -> Policy: ...
    @property
    def settings(self) -> LearnerSettings: ...
    def state_dict(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]: ...
    def load_state_dict(self, tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None: ...


def training_state(
    networks: torch.nn.Module | None,
    actor: torch.optim.Optimizer,
    critic: torch.optim.Optimizer | None,
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """An algorithm's ``networks`` and the two optimisers as named tensors (``critics.*``,
    ``optimiser.actor.*``, ``optimiser.critic.*``; no networks, no critic optimiser), and the optimisers'
    structure: what ``Learner.state_dict`` holds of them, and what the learner's ranks copy from rank 0
    (``restore_training_state``)."""
    tensors: dict[str, torch.Tensor] = (
        {f"critics.{name}": value.detach().cpu() for name, value in networks.state_dict().items()}
        if networks is not None
        else {}
    )
    actor_tensors, actor_meta = optimizer_state(actor, "optimiser.actor")
    tensors.update(actor_tensors)
    meta: dict[str, Any] = {"actor_optimiser": actor_meta, "critic_optimiser": None}
    if critic is not None:
        critic_tensors, meta["critic_optimiser"] = optimizer_state(critic, "optimiser.critic")
        tensors.update(critic_tensors)
    return tensors, meta


def restore_training_state(
    networks: torch.nn.Module | None,
    actor: torch.optim.Optimizer,
    critic: torch.optim.Optimizer | None,
    tensors: dict[str, torch.Tensor],
    meta: dict[str, Any],
) -> None:
    """Put back what ``training_state`` gave (other tensors in ``tensors`` are ignored); ``KeyError`` for
    a network's tensor that is not there."""
    if networks is not None:
        own = networks.state_dict()
        absent = [name for name in own if f"critics.{name}" not in tensors]
        if absent:
            raise KeyError(f"the networks' {', '.join(absent[:3])} are not in it")
        networks.load_state_dict({name: tensors[f"critics.{name}"] for name in own})
    load_optimizer_state(actor, tensors, meta["actor_optimiser"], "optimiser.actor")
    if critic is not None:
        load_optimizer_state(critic, tensors, meta["critic_optimiser"], "optimiser.critic")


def save_learner(learner: Learner, folder: str | Path) -> None:
    """Write everything ``load_learner`` needs into ``folder`` (which must exist; see ``Checkpoints``): the
    adapter, ``learner.state_dict()`` and the replay buffer."""
    folder = Path(folder)
    learner.policy.adapter.save(folder / _ADAPTER_DIR)
    tensors, meta = learner.state_dict()
    save_tensors(folder / _STATE_FILE, tensors, {"format": _FORMAT, **meta})
    learner.replay.save(folder / _REPLAY_FILE)


def load_learner(learner: Learner, folder: str | Path) -> None:
    """Restore what ``save_learner`` wrote into ``learner`` (same policy model and settings).

    Raises ``CheckpointError`` for a missing or damaged checkpoint, or one of another algorithm or
    model; the learner is then left as it was.
    """
    tensors, meta = learner.state_dict()
    before = (
        {name: t.clone() for name, t in tensors.items()},
        copy.deepcopy(meta),
        learner.policy.adapter.state(),
        learner.replay,
    )
    try:
        _load(learner, Path(folder))
    except BaseException:
        tensors, meta, adapter, learner.replay = before
        learner.load_state_dict(tensors, meta)
        learner.policy.adapter.load_state(adapter)
        raise


def _load(learner: Learner, folder: Path) -> None:
    state_file = folder / _STATE_FILE
    tensors, meta = load_tensors(state_file)
    if meta.get("format") != _FORMAT:
        raise CheckpointError(
            f"the checkpoint in {str(folder)!r} is of format {meta.get('format')!r}, from a distrl before"
            f" algorithms held their own networks (this one reads {_FORMAT}); start a new run from its"
            " adapter: [policy] adapter = the checkpoint's adapter/ folder",
            path=str(folder),
            reason="mismatch",
        )
    algorithm = learner.settings.algorithm
    if meta.get("algorithm") != algorithm:
        raise CheckpointError(
            f"the checkpoint in {str(folder)!r} was trained with {meta.get('algorithm')!r},"
            f" this run uses {algorithm!r}",
            path=str(folder),
            reason="mismatch",
        )
    with _refusing(f"the learner state in {str(state_file)!r} is incomplete", state_file, "corrupt"):
        updates = int(meta["updates"])
        absent = [key for key in ("actor_optimiser", "critic_optimiser", "rng") if key not in meta]
        if absent:
            raise KeyError(absent[0])
    if not 0 <= updates < 2**53:  # JSON's exact integers; a learner makes some thousands of updates
        raise CheckpointError(
            f"the learner state in {str(state_file)!r} counts {updates} updates, not a count a run makes",
            path=str(state_file),
            reason="corrupt",
        )
    adapter_file = folder / _ADAPTER_DIR / "adapter_model.safetensors"
    with _refusing(f"the adapter in {str(adapter_file)!r} cannot be read", adapter_file, "corrupt"):
        adapter = load_file(str(adapter_file))
    replay = ReplayBuffer.load(folder / _REPLAY_FILE)
    with _refusing(
        f"the adapter in {str(adapter_file)!r} does not fit this policy", adapter_file, "mismatch"
    ):
        learner.policy.adapter.load_state(adapter)
    with _refusing(f"the learner state in {str(folder)!r} does not fit this learner", folder, "mismatch"):
        learner.load_state_dict(tensors, meta)
    learner.replay = replay


@contextmanager
def _refusing(problem: str, path: Path, reason: str) -> Iterator[None]:
    """Turn a failure to read or fit a checkpoint's part into a ``CheckpointError``: ``problem (detail)``."""
    try:
        yield
    except (OSError, KeyError, TypeError, ValueError, RuntimeError, PolicyError) as exc:
        raise CheckpointError(f"{problem} ({exc})", path=str(path), reason=reason) from exc


# --- checkpoint folders ---------------------------------------------------------------------------------


def unsealed(folder: Path) -> bool:
    """Whether ``folder`` is a checkpoint's folder whose save never completed: named as one being written
    (``.tmp-*``) or as one written (``step-*``), without its manifest."""
    named = folder.name.startswith(_TMP) or _STEP_NAME.fullmatch(folder.name) is not None
    return named and not (folder / MANIFEST).is_file()


class Checkpoints:
    """A folder of checkpoints: ``root/step-000000050/``, …, and ``root/latest`` naming the newest.

    Only complete checkpoints are ever named ``step-*``: each is written under a ``.tmp-*`` name, sealed
    with its manifest, fsynced and then renamed. ``keep`` (>= 1) is how many complete ones to keep.
    """

    def __init__(self, root: str | Path, *, keep: int = 3) -> None:
        if keep < 1:
            raise ValueError(f"keep must be at least 1, not {keep}")
        self.root = Path(root)
        self.keep = keep

    def write(self, step: int, fill: Callable[[Path], None]) -> Path:
        """Write checkpoint ``step``: ``fill(folder)`` writes the caller's files into a fresh folder.

        Returns the final folder. If ``fill`` raises, its folder is removed, the exception propagates and
        ``latest`` still names the previous checkpoint. ``CheckpointError`` (``io``) if the step is taken or
        the disk fails. Afterwards the oldest checkpoints past ``keep`` and stale temporary folders go.
        """
        if step < 0:
            raise ValueError(f"step must be >= 0, not {step}")
        final = self.root / f"step-{step:09d}"
        with _io_errors(self.root, "create a checkpoint in"):
            self.root.mkdir(parents=True, exist_ok=True)
            temp = Path(tempfile.mkdtemp(prefix=_TMP, dir=self.root))
        try:
            fill(temp)
            _install(temp, final, step)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
        with _io_errors(self.root / LATEST, "update"):
            with tempfile.NamedTemporaryFile("w", dir=self.root, prefix=_TMP, delete=False) as file:
                file.write(final.name + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(file.name, self.root / LATEST)
            _fsync_folder(self.root)
        self._prune(final)
        return final

    def latest(self) -> Path | None:
        """The folder ``latest`` names; if that is gone, the newest complete one; None if there is none."""
        return self.latest_and_why()[0]

    def latest_and_why(self) -> tuple[Path | None, str]:
        """``latest()``, and why the ``latest`` file did not give it, in words ("" when it named it)."""
        file = self.root / LATEST
        try:
            name = file.read_text().strip()
        except FileNotFoundError:
            why = f"{file} is missing"
        except OSError as exc:
            why = f"{file} cannot be read ({exc.strerror or exc})"
        else:
            if _STEP_NAME.fullmatch(name) and (self.root / name / MANIFEST).is_file():
                return self.root / name, ""
            why = f"{file} names {name!r}, which is no complete checkpoint" if name else f"{file} is empty"
        found = self.list()
        return (found[-1] if found else None), why

    def list(self) -> list[Path]:
        """The complete checkpoint folders, oldest first."""
        if not self.root.is_dir():
            return []
        found = [
            (int(match[1]), path)
            for path in self.root.iterdir()
            if (match := _STEP_NAME.fullmatch(path.name)) and (path / MANIFEST).is_file()
        ]
        return [path for _, path in sorted(found)]

    def verify(self, folder: Path) -> None:
        """Check every file ``folder``'s manifest lists: present, of its size and SHA-256.

        ``CheckpointError`` naming the file: ``missing`` for a missing manifest or file, else ``corrupt``.
        """
        manifest = folder / MANIFEST
        try:
            files = json.loads(manifest.read_text())["files"]
            entries = [(str(f["path"]), int(f["size"]), str(f["sha256"])) for f in files]
        except FileNotFoundError as exc:
            raise CheckpointError(f"{manifest} does not exist", path=str(manifest), reason="missing") from exc
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{manifest} is unreadable", path=str(manifest), reason="corrupt") from exc
        for relative, size, digest in entries:
            path = folder / relative
            if Path(relative).is_absolute() or ".." in Path(relative).parts:
                raise CheckpointError(
                    f"{manifest} lists {relative!r}, outside the folder", path=str(manifest), reason="corrupt"
                )
            try:
                found_size, found_digest = _digest(path)
            except FileNotFoundError as exc:
                raise CheckpointError(f"{path} is missing", path=str(path), reason="missing") from exc
            except OSError as exc:
                raise CheckpointError(
                    f"cannot read {path}: {exc.strerror}", path=str(path), reason="io"
                ) from exc
            if found_size != size:
                raise CheckpointError(
                    f"{path} has {found_size} bytes, not {size}", path=str(path), reason="corrupt"
                )
            if found_digest != digest:
                raise CheckpointError(f"{path} does not match its SHA-256", path=str(path), reason="corrupt")

    def _prune(self, kept: Path) -> None:
        """Remove the oldest checkpoints beyond ``keep`` (never ``kept``) and stale temporary files."""
        others = [path for path in self.list() if path != kept]
        doomed = others[: max(0, len(others) - (self.keep - 1))]
        for path in doomed:
            # Renamed first, so a crash mid-delete never leaves a half-deleted step-* folder.
            trash = path.with_name(f"{_TMP}{path.name}")
            try:
                os.rename(path, trash)
            except OSError:
                continue
        for path in self.root.iterdir():
            if path.name.startswith(_TMP):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)


def _install(temp: Path, final: Path, step: int) -> None:
    """Seal ``temp`` and rename it to ``final``, which must not exist yet."""
    with _io_errors(temp, "seal"):
        _seal(temp, step)
    if final.exists():
        raise CheckpointError(f"{final} already exists", path=str(final), reason="io")
    with _io_errors(final, "create"):
        os.rename(temp, final)
        _fsync_folder(final.parent)


def _seal(folder: Path, step: int) -> None:
    """Write the manifest of every file in ``folder``, fsyncing them, the manifest and every folder."""
    files: list[dict[str, Any]] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            relative = path.relative_to(folder).as_posix()
            if relative == MANIFEST:
                raise ValueError(f"{MANIFEST} is the name Checkpoints keeps for the manifest")
            size, digest = _digest(path, fsync=True)
            files.append({"path": relative, "size": size, "sha256": digest})
        for dirname in dirnames:
            _fsync_folder(Path(dirpath) / dirname)
    manifest = {"format": "distrl.checkpoint", "step": step, "files": sorted(files, key=lambda f: f["path"])}
    with (folder / MANIFEST).open("w") as file:
        json.dump(manifest, file, indent=1)
        file.flush()
        os.fsync(file.fileno())
    _fsync_folder(folder)


def _digest(path: Path, *, fsync: bool = False) -> tuple[int, str]:
    """The size and SHA-256 (hex) of ``path``'s bytes; with ``fsync``, also flush them to disk."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as file:
        while chunk := file.read(_READ_BYTES):
            digest.update(chunk)
            size += len(chunk)
        if fsync:
            os.fsync(file.fileno())
    return size, digest.hexdigest()


def _fsync_folder(folder: Path) -> None:
    """Make a rename or new file in ``folder`` durable (POSIX; Windows cannot open folders)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _io_errors(path: Path, doing: str) -> Iterator[None]:
    """Turn an ``OSError`` into ``CheckpointError`` (``io``) that says what was being done where."""
    try:
        yield
    except OSError as exc:
        raise CheckpointError(
            f"cannot {doing} {path}: {exc.strerror or exc}", path=str(path), reason="io"
        ) from exc
