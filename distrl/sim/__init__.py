"""The simulated phone: apps, screens, task suites with success checks, an expert, latency and faults,
and servers that make it an emulator the real adb server lists.

- ``Phone`` / ``PhoneConfig`` (``distrl.sim.phone``): the phone itself.
- ``distrl.sim.suites``: the ``general`` and ``web_shopping`` task suites.
- ``distrl.sim.latency``: calibrated latency and fault injection.
- ``distrl.sim.server``: ``serve_phones`` (``python -m distrl sim``): adbd and emulator console per phone.
"""

from distrl.sim.phone import Phone, PhoneConfig

__all__ = ["Phone", "PhoneConfig"]
