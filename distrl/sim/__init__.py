"""The simulated phone: apps, screens, task suites with success checks, an expert, latency and faults,
and servers that make it an emulator the real adb server lists.

- ``Phone`` / ``PhoneConfig`` (``distrl.sim.phone``): the phone itself.
- ``distrl.sim.suites``: the ``general`` and ``web_shopping`` task suites.
- ``distrl.sim.latency``: calibrated latency and fault injection.
- ``distrl.sim.server``: ``serve_phones`` (``python -m distrl sim``): adbd and emulator console per phone.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from distrl.sim.phone import Phone, PhoneConfig

__all__ = ["Phone", "PhoneConfig"]


def __getattr__(name: str) -> object:
    # The phone pulls in Pillow and every app; ``distrl.sim.latency`` (the CLI, the worker) needs neither.
    if name in __all__:
        from distrl.sim import phone

        return getattr(phone, name)
    raise AttributeError(f"module 'distrl.sim' has no attribute {name!r}")
