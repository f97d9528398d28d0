"""A host of the inventory as its transport: ``host_for`` and ``open_host``; ``HostOpener`` is the shape
of ``open_host``, which the fleet takes in its place (``lambda entry, timeouts: MemoryHost(entry,
timeouts, agent).open()`` runs the agent in memory)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from distrl import config
from distrl.config import Timeouts
from distrl.transport.local import LocalHost
from distrl.transport.protocol import Host, HostLink
from distrl.transport.ssh import SshHost

HostOpener = Callable[[config.HostEntry, Timeouts], contextlib.AbstractAsyncContextManager[HostLink]]
"""Opens an inventory entry's worker and yields its link: ``open_host``, or one in its place."""


def host_for(entry: config.HostEntry, timeouts: Timeouts) -> Host:
    """The ``Host`` that reaches ``entry``: ``LocalHost`` for a local one, else ``SshHost``."""
    return LocalHost(entry, timeouts) if entry.is_local else SshHost(entry, timeouts)


def open_host(
    entry: config.HostEntry, timeouts: Timeouts
) -> contextlib.AbstractAsyncContextManager[HostLink]:
    """Start the worker on ``entry`` and yield the link; on exit, stop it within ``cleanup_s`` steps."""
    return host_for(entry, timeouts).open()
