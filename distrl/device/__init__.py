"""Devices: the phones agents drive, behind one ``Device`` protocol.

- ``AdbDevice``: an Android emulator (or phone) through an adb server, with adbutils in worker
  threads; reset by emulator snapshot, reboot as the last resort.
- ``play_episode`` (``distrl.device.episode``): the one episode loop, on any ``Device``.
- ``open_device`` (``distrl.device.registry``): a device by its adb serial, console port or kind.
- ``DeviceError``: what every device operation raises when it fails (``distrl.errors`` has the tree).

The simulated phone's ``SimDevice`` lives with the sim (``distrl.sim.device``): nothing here imports
the sim. Both pass the same contract tests (``tests/test_device.py``), including the sim served as an
emulator and driven by ``AdbDevice`` through the real adb server.
"""

from distrl.device.adb import AdbDevice
from distrl.device.episode import play_episode
from distrl.device.protocol import Device
from distrl.device.registry import open_device
from distrl.errors import DeviceError

__all__ = ["AdbDevice", "Device", "DeviceError", "open_device", "play_episode"]
