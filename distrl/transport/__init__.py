"""Hosts: where worker agents run, and the framed stream to each.

A ``Host`` (``protocol.py``) starts ``<python> -m distrl worker`` for one inventory entry and yields a
``HostLink``: the host and a ``FrameStream`` over the worker's stdin/stdout. On exit it stops the worker
the same way for every transport: end of input first (the worker exits by itself), then SIGTERM and
SIGKILL to its process group, ``cleanup_s`` apart.

- ``LocalHost`` (``local.py``): a child process in its own session; its stderr goes to ours.
- ``SshHost`` (``ssh.py``, asyncssh): one connection per host (``connection.py``: through
  ``proxy_jump`` when set, keepalives every ``heartbeat_interval_s``, the link lost after
  ``heartbeat_timeout_s`` of silence; TCP connect and key exchange within ``ssh_connect_s``,
  authentication within ``ssh_login_s``). Host keys are checked against ``known_hosts_file``
  (``~/.ssh/known_hosts``) and never added; ``known_hosts = "ignore"`` skips the check, with a warning.
  The client key is ``identity_file`` alone, or the SSH agent's and the default keys. ``~/.ssh/config``
  is not read: the inventory alone says how to reach a host. A jump host is checked and logged in to the
  same way (its user defaults to ``user``), and the connection to the host is tunnelled through it. The
  worker runs without a PTY (frames are binary) under a POSIX shell command line,
  ``cd <workdir> && env K=V ... <python> -m distrl worker ...``, every value quoted (``~/`` at the
  start of ``workdir`` or ``python`` means the remote home); an empty ``python`` is
  ``~/.distrl/venv/bin/python`` where ``python -m distrl deploy`` made it, else ``python3``. Its
  stderr arrives here line by line, each prefixed with the host's name. ``connect_ssh`` makes the same
  connection for others (``distrl.deploy``).

- ``MemoryHost`` (``memory.py``, for tests): a worker agent coroutine in this process over in-memory
  streams (``frame_pipe``), speaking the same frames; the agent is handed in, as httpx's
  ``MockTransport`` takes its handler. On exit: end of input, then the agent is cancelled past
  ``cleanup_s``.

``host_for`` picks the one for an inventory entry, and ``open_host`` opens it (``hosts.py``); the fleet
takes any ``HostOpener`` in its place.

No worker outlives its learner: a worker exits when its stdin closes, and a dead learner or a dropped
link closes it (the kernel closes a local pipe; sshd closes the session's pipes when the connection
goes). Over SSH the command line then signals the worker's own process group (sshd made it a session
of its own), so whatever the worker started goes too. Failures are ``TransportError`` (or
``TransportTimeout``) with a ``phase``: ``connect``, ``host_key``, ``login`` or ``start``.
"""

from distrl.transport.connection import connect_ssh
from distrl.transport.hosts import HostOpener, host_for, open_host
from distrl.transport.local import LocalHost
from distrl.transport.memory import Agent, MemoryHost, frame_pipe
from distrl.transport.protocol import DEPLOYED_PYTHON, Host, HostLink, worker_command
from distrl.transport.ssh import SshHost, remote_command, remote_path

__all__ = [
    "DEPLOYED_PYTHON",
    "Agent",
    "Host",
    "HostLink",
    "HostOpener",
    "LocalHost",
    "MemoryHost",
    "SshHost",
    "connect_ssh",
    "frame_pipe",
    "host_for",
    "open_host",
    "remote_command",
    "remote_path",
    "worker_command",
]
