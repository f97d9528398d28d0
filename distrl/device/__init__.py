"""Devices: the phones agents drive, behind one ``Device`` protocol.

- ``AdbDevice``: an Android emulator (or phone) through an adb server, with adbutils in worker
  threads; reset by emulator snapshot, reboot as the last resort.
- ``SimDevice``: the simulated phone in this process, with a calibrated latency model and fault
  injection; cheap enough for hundreds per process.

Both pass the same contract tests (``tests/test_device.py``), including the sim served as an emulator
and driven by ``AdbDevice`` through the real adb server.
"""

from distrl.device.adb import AdbDevice
from distrl.device.protocol import Device
from distrl.device.sim import SimDevice, sim_device

__all__ = ["AdbDevice", "Device", "SimDevice", "sim_device"]
