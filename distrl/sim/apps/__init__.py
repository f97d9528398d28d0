"""The apps installed on every simulated phone, in launcher order."""

from __future__ import annotations

from distrl.sim.app import App

__all__ = ["installed_apps"]


def installed_apps() -> list[App]:
    """A fresh instance of every installed app (the launcher first)."""
    from distrl.sim.apps.basic import basic_apps
    from distrl.sim.apps.chrome import Chrome
    from distrl.sim.apps.clock import Clock
    from distrl.sim.apps.launcher import Launcher
    from distrl.sim.apps.settings import Settings

    return [Launcher(), Settings(), Clock(), Chrome(), *basic_apps()]
