"""Which distrl this is, exactly: its version and a hash of its code, compared at every handshake.

Two processes that run different code misread each other's frames in the worst case, so the learner
refuses a worker whose ``build_id`` differs from its own, with one clear error, before anything else.
The hash covers every file of the package (its Python modules and shipped data, such as the built-in
policy's weights), in a stable order, as installed: an edited checkout and a stale install differ.
``digest`` computes the same hash over files given by name, such as a wheel's (``distrl.deploy``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

__all__ = ["build_id", "digest", "is_package_file"]

_PACKAGE = Path(__file__).resolve().parent
_KINDS = (".py", ".safetensors", ".toml", ".jinja", ".json")


@functools.cache
def build_id() -> str:
    """The first 16 hex digits of the SHA-256 over the package's files (relative path and content)."""
    paths = (p for p in _PACKAGE.rglob("*") if p.is_file())  # a link to nothing is no file
    files = ((p.relative_to(_PACKAGE).as_posix(), p) for p in paths)
    return digest((name, path.read_bytes()) for name, path in files if is_package_file(name))


def is_package_file(name: str) -> bool:
    """Whether the file ``name`` (a path relative to the package, with ``/``) counts in the build."""
    return name.endswith(_KINDS) and "__pycache__" not in name.split("/")


def digest(files: Iterable[tuple[str, bytes]]) -> str:
    """``build_id`` of the package files given as (path relative to the package, content)."""
    hasher = hashlib.sha256()
    for name, data in sorted(files, key=lambda file: file[0].split("/")):
        hasher.update(name.encode() + b"\0")
        hasher.update(data)
        hasher.update(b"\0")
    return hasher.hexdigest()[:16]
