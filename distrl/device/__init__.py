"""Devices: the phones agents drive, behind one ``Device`` protocol.

- ``AdbDevice``: an Android emulator (or phone) through an adb server, with adbutils in worker
  threads; reset by emulator snapshot, reboot as the last resort.
- ``play_episode`` (``distrl.device.episode``): the one episode loop, on any ``Device``.

The simulated phone's ``SimDevice`` lives with the sim (``distrl.sim.device``): nothing here imports
the sim. Both pass the same contract tests (``tests/test_device.py``), including the sim served as an
emulator and driven by ``AdbDevice`` through the real adb server.
"""

from distrl.device.adb import AdbDevice
from distrl.device.episode import play_episode
from distrl.device.protocol import Device

__all__ = ["AdbDevice", "Device", "play_episode"]
