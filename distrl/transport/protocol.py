"""The ``Host`` protocol: where one worker agent runs, and the framed stream to it."""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass
from typing import Protocol

from distrl import config
from distrl.config import Timeouts
from distrl.wire import FrameStream

log = logging.getLogger(__name__)

DEPLOYED_PYTHON = "~/.distrl/venv/bin/python"
"""The interpreter ``python -m distrl deploy`` installs on an SSH host (``~/`` is the remote home)."""


@dataclass(frozen=True, kw_only=True)
class HostLink:
    """A running worker on a host, and the framed stream to it."""

    host: config.HostEntry
    stream: FrameStream


class Host(Protocol):
    """Where one worker agent runs. ``open`` starts it and yields the link; leaving stops it the same way
    for every transport, within ``cleanup_s`` steps: end of input first (the worker exits by itself),
    then SIGTERM and SIGKILL to its process group, ``cleanup_s`` apart."""

    @property
    def entry(self) -> config.HostEntry:
        """The host as the inventory names it."""
        ...

    def open(self) -> contextlib.AbstractAsyncContextManager[HostLink]:
        """Start the worker and yield the link to it; stop it on exit."""
        ...


def worker_command(host: config.HostEntry, timeouts: Timeouts) -> list[str]:
    """The argv that starts the worker agent on ``host`` (no shell: values are never interpreted).

    The worker logs as verbosely as this process does, waits for the learner's hello as long as
    ``timeouts.handshake_s``, and leaves a learner silent past ``timeouts.heartbeat_timeout_s``. An
    empty ``host.python`` is this interpreter locally; over SSH, ``DEPLOYED_PYTHON`` where ``deploy``
    made it, else ``python3`` (``remote_command`` decides on the host)."""
    verbosity = (
        ["-vv"] if log.isEnabledFor(logging.DEBUG) else ["-v"] if log.isEnabledFor(logging.INFO) else []
    )
    handshake = [
        "--silence-timeout",
        f"{timeouts.heartbeat_timeout_s:g}",
        "--handshake-timeout",
        f"{timeouts.handshake_s:g}",
    ]
    python = host.python or (sys.executable if host.is_local else DEPLOYED_PYTHON)
    return [python, "-m", "distrl", *verbosity, "worker", "--host", host.name, *handshake]
