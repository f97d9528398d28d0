"""The Android SDK's side of launching emulators: what can be known before anything starts.

``preflight`` checks it, each problem one sentence (``EmulatorError``): the Android SDK (``sdk_root``,
else ``$ANDROID_SDK_ROOT``, else ``$ANDROID_HOME``) and its ``emulator/emulator``, the AVD among
``emulator -list-avds``, and hardware acceleration (``emulator -accel-check``; skipped when the flags
ask for ``-accel off``). ``avd_folder`` finds an AVD's files (its snapshots), as the emulator does.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import anyio

from distrl.config import Devices
from distrl.errors import EmulatorError

__all__ = ["avd_folder", "avd_home", "emulator_binary", "preflight"]

TOOL_TIMEOUT_S = 60.0
"""Limit on ``emulator -list-avds`` and ``emulator -accel-check``."""


def emulator_binary(devices: Devices, env: Mapping[str, str]) -> Path:
    """The SDK's ``emulator`` program; ``EmulatorError`` when there is no SDK or it has none."""
    root = devices.sdk_root or env.get("ANDROID_SDK_ROOT") or env.get("ANDROID_HOME") or ""
    if not root:
        raise EmulatorError(
            "no Android SDK: set ANDROID_SDK_ROOT (or ANDROID_HOME) in the host's env, or devices.sdk_root"
        )
    sdk = Path(root).expanduser()
    if not sdk.is_dir():
        raise EmulatorError(f"the Android SDK folder {sdk} does not exist")
    binary = sdk / "emulator" / "emulator"
    if not os.access(binary, os.X_OK):
        raise EmulatorError(
            f"the Android SDK at {sdk} has no emulator ({binary}): install it with `sdkmanager emulator`"
        )
    return binary


def avd_home(env: Mapping[str, str]) -> Path:
    """Where AVDs are: ``$ANDROID_AVD_HOME``, else ``$ANDROID_EMULATOR_HOME/avd``, else ``~/.android/avd``."""
    if env.get("ANDROID_AVD_HOME"):
        return Path(env["ANDROID_AVD_HOME"]).expanduser()
    if env.get("ANDROID_EMULATOR_HOME"):
        return Path(env["ANDROID_EMULATOR_HOME"]).expanduser() / "avd"
    return Path("~/.android/avd").expanduser()


def avd_folder(avd: str, env: Mapping[str, str]) -> Path:
    """The AVD's folder: the ``path=`` of ``<avd home>/<avd>.ini``, else ``<avd home>/<avd>.avd``."""
    home = avd_home(env)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in (home / f"{avd}.ini").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "path" and value.strip():
                return Path(value.strip())
    return home / f"{avd}.avd"


async def preflight(devices: Devices, env: Mapping[str, str] | None = None) -> Path:
    """Check that ``devices``' emulators can be launched here; returns the ``emulator`` program.

    Raises ``EmulatorError``: no SDK, no emulator in it, no AVD of that name, no acceleration."""
    env = os.environ if env is None else env
    binary = emulator_binary(devices, env)
    listed = await _tool(binary, "-list-avds", env=env)
    avds = [line.strip() for line in listed.stdout.splitlines() if line.strip() and " " not in line.strip()]
    if devices.avd not in avds:
        have = ", ".join(avds) if avds else "none"
        raise EmulatorError(
            f"no AVD named {devices.avd!r} (emulator -list-avds: {have});"
            " create it with `avdmanager create avd`"
        )
    if not _accel_off(devices.emulator_flags):
        checked = await _tool(binary, "-accel-check", env=env)
        if checked.returncode != 0:
            lines = (line.strip() for line in checked.stdout.splitlines())
            said = " ".join(line for line in lines if line not in ("accel", "accel:") and not line.isdigit())
            said = said.strip() or f"status {checked.returncode}"
            raise EmulatorError(
                f"no hardware acceleration for the emulator ({said})"
                ': enable KVM (/dev/kvm, and this user in the kvm group), or add "-accel", "off" to'
                " emulator_flags (many times slower)"
            )
    return binary


def _accel_off(flags: tuple[str, ...]) -> bool:
    return "-no-accel" in flags or any(pair == ("-accel", "off") for pair in itertools.pairwise(flags))


async def _tool(binary: Path, flag: str, *, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """``emulator <flag>``, its output as text; ``EmulatorError`` when it cannot run or hangs."""
    try:
        with anyio.fail_after(TOOL_TIMEOUT_S):
            done = await anyio.run_process(
                [str(binary), flag], env=dict(env), check=False, stderr=subprocess.STDOUT
            )
    except TimeoutError:
        raise EmulatorError(f"`emulator {flag}` did not answer within {TOOL_TIMEOUT_S:g} s") from None
    except OSError as exc:
        raise EmulatorError(f"cannot run {binary}: {exc}") from exc
    text = done.stdout.decode("utf-8", "replace")
    return subprocess.CompletedProcess(done.args, done.returncode, text, "")
