"""Three ways to reset an emulator, and the bytes of its screens before and after the worker re-encodes
them. Measured on the tests' fake ``emulator`` (``distrl.testing.fake_emulator``: the real command line, and
behind it a simulated phone whose latencies are calibrated from real emulators) through the real adb
server, with distrl's launcher (``distrl.device.emulator``):

- ``snapshot``: ``reset`` of a launched emulator, a console ``avd snapshot load`` (every episode's);
- ``reboot``: the same reset when the snapshot cannot be loaded: ``adb reboot``, then waiting for
  ``sys.boot_completed`` (the last resort of an emulator distrl only attaches to);
- ``relaunch``: the reset after the emulator was given up on (a failed reset): its process group
  stopped, 1 s of backoff, ``emulator`` started again, its boot waited for (the last resort of a
  launched emulator);
- ``screens``: bytes per screen of every app of the phone, as ``screencap -p`` gives them (PNG) and as
  the worker sends them (JPEG at ``[sim]``'s quality and size).

Times are the fake's, at ``--time-scale`` (1: a real emulator's calibrated durations; boot 15 s). Prints
one JSON line and saves ``benchmarks/figures/emulator_reset.png``. Bounded: about 3 minutes at time
scale 1. Run: ``python benchmarks/emulator_reset.py`` (``--time-scale 0.1 --repeats 3`` for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from adb_rig import free_ports, private_adb_server
from plotting import saved_figure

from distrl.config import Devices, ScreenSettings, SimSettings, Timeouts
from distrl.device.adb import AdbDevice
from distrl.device.emulator import Launcher
from distrl.device.screen import screen_options
from distrl.records import Task
from distrl.testing.fake_emulator import install, make_avd

ROOT = Path(__file__).resolve().parent.parent

FIGURE = ROOT / "benchmarks" / "figures" / "emulator_reset.png"
AVD = "Bench_Pixel"
BOOT_S = 15.0
"""A cold boot of the fake at time scale 1 (real emulators with KVM: 12.6-28 s, docs/reference/android.md)."""
TASK = Task(id="bench", suite="file", goal="nothing", max_steps=1, evaluator="adb")


async def _timed(runs: int, action: Callable[[], Awaitable[object]]) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await action()
        times.append(time.perf_counter() - started)
    return times


def _summary(times: list[float]) -> dict[str, float | int]:
    ordered = sorted(times)
    return {
        "runs": len(ordered),
        "p50_s": round(statistics.median(ordered), 3),
        "min_s": round(ordered[0], 3),
        "max_s": round(ordered[-1], 3),
    }


async def measure(time_scale: float, repeats: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder, private_adb_server():
        tmp = Path(folder)
        install(tmp / "sdk")
        make_avd(tmp / "avd", AVD)
        (tmp / "home").mkdir()
        token = tmp / "home" / ".emulator_console_auth_token"
        token.write_text("bench-token\n")
        os.environ.update(
            ANDROID_SDK_ROOT=str(tmp / "sdk"),
            ANDROID_AVD_HOME=str(tmp / "avd"),
            HOME=str(tmp / "home"),
            DISTRL_FAKE_KVM="present",
            DISTRL_FAKE_LATENCY="calibrated",
            DISTRL_FAKE_TIME_SCALE=str(time_scale),
            DISTRL_FAKE_BOOT_S=str(BOOT_S * time_scale),
        )
        devices = Devices(avd=AVD, first_port=free_ports(2, start=5600, stop=5682), snapshot="bench")
        (serial,) = devices.launched
        timeouts = Timeouts(device_boot_s=180, device_reset_s=60, device_observe_s=30, device_act_s=30)
        sim, screen = SimSettings(), ScreenSettings()
        launcher = Launcher(devices, timeouts, run_folder=tmp, device_options=screen_options(screen))
        async with anyio.create_task_group() as tg:
            started = time.perf_counter()
            await tg.start(launcher.run)
            device, instance = launcher.emulators[serial], launcher.instances[serial]
            await device.reset(TASK)
            first_s = time.perf_counter() - started  # a snapshot saved from a cold boot, then a boot
            snapshot = await _timed(repeats * 3, lambda: device.reset(TASK))
            attached = AdbDevice(
                serial, timeouts=timeouts, snapshot="none-such", console_token_file=str(token)
            )
            reboot = await _timed(repeats, lambda: attached.reset(TASK))

            async def relaunch() -> None:
                instance.go_down()
                await device.reset(TASK)

            relaunched = await _timed(repeats, relaunch)
            png, jpeg = [], []
            packages = (await device.shell("pm list packages")).output.split()
            for package in [line.removeprefix("package:") for line in packages]:
                await device.shell(f"monkey -p {package} 1")
                png.append(len((await attached.observe()).screenshot))
                jpeg.append(len((await device.observe()).screenshot))
            tg.cancel_scope.cancel()
    return {
        "first_launch_s": round(first_s, 2),
        "reset_s": {
            "snapshot": _summary(snapshot),
            "reboot": _summary(reboot),
            "relaunch": _summary(relaunched),
        },
        "screen_bytes": {
            "screens": len(png),
            "size": f"{sim.width}x{sim.height}",
            "png_mean": round(statistics.mean(png)),
            "jpeg_mean": round(statistics.mean(jpeg)),
            "jpeg_quality": screen.jpeg_quality,
            "ratio": round(statistics.mean(png) / statistics.mean(jpeg), 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--time-scale", type=float, default=1.0, help="the fake's latencies × this (default 1)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="reboots and relaunches (snapshots: 3×)")
    parser.add_argument("--figure", type=Path, default=FIGURE)
    args = parser.parse_args()
    result: dict[str, object] = {"benchmark": "emulator_reset", "time_scale": args.time_scale}
    result.update(anyio.run(measure, args.time_scale, args.repeats))
    resets = result["reset_s"]
    assert isinstance(resets, dict)
    with saved_figure(args.figure, size=(5.5, 3.0)) as axes:
        names = list(resets)
        axes.bar(names, [resets[name]["p50_s"] for name in names], color=["#4a7", "#c84", "#a55"])
        axes.set_ylabel("seconds (median)")
        axes.set_title(f"resetting an emulator (fake, time scale {args.time_scale:g})")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
