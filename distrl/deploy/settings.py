"""How ``deploy`` installs distrl on one host: ``DISTRL_*`` variables in the host's ``env`` table.

They live in ``[hosts.env]`` (or ``[defaults.env]``, merged key by key) rather than as inventory keys,
so that a fleet-wide choice (a CPU-only torch index, a wheelhouse) is one line of ``[defaults.env]``
and a host overrides it in its own table. The worker sees them too and ignores them. A misspelt
``DISTRL_`` name is refused with its TOML path, since it would silently install the wrong torch.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass

from distrl.config import HostEntry
from distrl.errors import DeployError

__all__ = ["DeploySettings", "deploy_settings"]

_NAMES = {
    "DISTRL_BASE_PYTHON": "base_python",
    "DISTRL_TORCH": "torch",
    "DISTRL_TORCH_INDEX": "torch_index",
    "DISTRL_INDEX_URL": "index_url",
    "DISTRL_WHEELHOUSE": "wheelhouse",
    "DISTRL_UV": "uv",
    "DISTRL_VENV_SYSTEM_SITE": "system_site",
}


@dataclass(frozen=True, kw_only=True)
class DeploySettings:
    """One host's install choices; every field from its ``DISTRL_*`` variable."""

    base_python: str = "python3"
    """``DISTRL_BASE_PYTHON``: the Python (3.11 or newer) the virtualenv is made from; ``~/`` is home."""
    torch: str = ""
    """``DISTRL_TORCH``: a requirement installed first, e.g. ``torch==2.5.1``; empty: the default build
    comes as a dependency of distrl (``torch`` when only ``DISTRL_TORCH_INDEX`` is set)."""
    torch_index: str = ""
    """``DISTRL_TORCH_INDEX``: the index torch comes from, e.g. https://download.pytorch.org/whl/cpu."""
    index_url: str = ""
    """``DISTRL_INDEX_URL``: the index everything else comes from (a mirror); empty for PyPI."""
    wheelhouse: str = ""
    """``DISTRL_WHEELHOUSE``: a folder of wheels on the host; installs from it alone (no index)."""
    uv: str = ""
    """``DISTRL_UV``: empty to use ``uv`` where the host has it, ``off`` for venv and pip, or its path."""
    system_site: bool = False
    """``DISTRL_VENV_SYSTEM_SITE=1``: the virtualenv sees the base Python's packages (an image that
    ships torch and CUDA keeps them; pip installs only what is missing)."""

    @property
    def torch_requirement(self) -> str:
        """What to install before distrl; empty for nothing."""
        return self.torch or ("torch" if self.torch_index else "")

    def fingerprint(self) -> dict[str, str | bool]:
        """The settings as JSON-able data, kept in a host's marker: other settings are not up to date
        (and get a fresh virtualenv)."""
        return asdict(self)


def deploy_settings(host: HostEntry, where: str) -> DeploySettings:
    """``host``'s deploy settings; ``where`` is its TOML path (``hosts[2]``) for errors."""
    values: dict[str, str | bool] = {}
    for name, value in host.env.items():
        if name in _NAMES:
            values[_NAMES[name]] = value.strip()
        elif name.startswith("DISTRL_"):
            close = difflib.get_close_matches(name, _NAMES, n=1)
            hint = f" (did you mean {close[0]}?)" if close else f" (deploy reads {', '.join(_NAMES)})"
            _refuse(host, f"{where}.env.{name}: not a deploy setting{hint}")
    system_site = values.pop("system_site", "")
    if system_site not in ("", "0", "1"):
        _refuse(host, f"{where}.env.DISTRL_VENV_SYSTEM_SITE: use 1 or 0, not {system_site!r}")
    settings = DeploySettings(**values, system_site=system_site == "1")  # type: ignore[arg-type]
    if settings.wheelhouse and (settings.index_url or settings.torch_index):
        _refuse(
            host,
            f"{where}.env: DISTRL_WHEELHOUSE installs from that folder alone; "
            "drop DISTRL_INDEX_URL and DISTRL_TORCH_INDEX, or the wheelhouse",
        )
    if not settings.base_python:
        _refuse(host, f"{where}.env.DISTRL_BASE_PYTHON: empty; name a Python 3.11+ or leave it out")
    return settings


def _refuse(host: HostEntry, problem: str) -> None:
    raise DeployError(f"host {host.name!r}: {problem}", host=host.name, stage="settings")
