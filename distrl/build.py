"""Which distrl this is, exactly: its version and a hash of its code, compared at every handshake.

Two processes that run different code misread each other's frames in the worst case, so the learner
refuses a worker whose ``build_id`` differs from its own, with one clear error, before anything else.
The hash covers every file of the package (its Python modules and shipped data, such as the built-in
policy's weights), in a stable order, as installed: an edited checkout and a stale install differ.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__all__ = ["build_id"]

_PACKAGE = Path(__file__).resolve().parent
_KINDS = (".py", ".safetensors", ".toml", ".jinja", ".json")


@functools.cache
def build_id() -> str:
    """The first 16 hex digits of the SHA-256 over the package's files (relative path and content)."""
    digest = hashlib.sha256()
    wanted = (p for p in _PACKAGE.rglob("*") if p.suffix in _KINDS and "__pycache__" not in p.parts)
    for path in sorted(p for p in wanted if p.is_file()):  # a link to nothing is no file
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
