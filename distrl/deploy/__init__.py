"""``python -m distrl deploy``: install this machine's distrl on every SSH host of an inventory.

For each SSH host, over the connection ``run`` makes (``distrl.transport.connect_ssh``: host keys
checked, jump host, identity file or agent), in parallel:

- ``wheel``: this machine's distrl built once as a wheel, the same bytes for the same code, keyed by
  its SHA-256, pushed by SFTP into ``~/.distrl/wheels/``;
- ``venv``: a private virtualenv, ``~/.distrl/venv``, made from a Python 3.11+ (``python3``, or
  ``DISTRL_BASE_PYTHON``) with uv where the host has it, else ``python -m venv``;
- ``install``: torch first where the host asks for a build (``DISTRL_TORCH``, ``DISTRL_TORCH_INDEX``),
  then the wheel and its dependencies, from the index (``DISTRL_INDEX_URL``) or a wheelhouse on the
  host (``DISTRL_WHEELHOUSE``); the installed distrl must report this machine's build;
- ``done``: the marker ``~/.distrl/installed.json``; a host whose marker matches is skipped next time.

An SSH host whose inventory leaves ``python`` empty then runs its worker with that virtualenv's python
(``distrl.transport.DEPLOYED_PYTHON``). Nothing is written outside ``~/.distrl``, no sudo, and the
system Python is never changed. The parts: ``settings`` (the ``DISTRL_*`` variables), ``wheel``
(building it), ``host`` (one host's steps), ``fleet`` (all hosts at once).
"""

from distrl.deploy.fleet import deploy_fleet
from distrl.deploy.host import Outcome, deploy_host
from distrl.deploy.settings import DeploySettings, deploy_settings
from distrl.deploy.wheel import Wheel, build_wheel, repack

__all__ = [
    "DeploySettings",
    "Outcome",
    "Wheel",
    "build_wheel",
    "deploy_fleet",
    "deploy_host",
    "deploy_settings",
    "repack",
]
