"""A host of the inventory as its transport: ``host_for`` and ``open_host``."""

from __future__ import annotations

import contextlib

from distrl import config
from distrl.config import Timeouts
from distrl.transport.local import LocalHost
from distrl.transport.protocol import Host, HostLink
from distrl.transport.ssh import SshHost


def host_for(entry: config.HostEntry, timeouts: Timeouts) -> Host:
    """The ``Host`` that reaches ``entry``: ``LocalHost`` for a local one, else ``SshHost``."""
    return LocalHost(entry, timeouts) if entry.is_local else SshHost(entry, timeouts)


def open_host(
    entry: config.HostEntry, timeouts: Timeouts
) -> contextlib.AbstractAsyncContextManager[HostLink]:
    """Start the worker on ``entry`` and yield the link; on exit, stop it within ``cleanup_s`` steps."""
    return host_for(entry, timeouts).open()
