"""A fake Android ``emulator`` program: the real command line, and one simulated phone behind it.

``install(sdk_root)`` puts it where the SDK keeps the real one (``<sdk>/emulator/emulator``);
``make_avd(home, name)`` creates an AVD as ``avdmanager`` lays it out (``<home>/<name>.ini`` with
``path=``, and the ``<name>.avd`` folder). What it answers:

- ``-list-avds``: the AVDs in ``$ANDROID_AVD_HOME`` (else ``$ANDROID_EMULATOR_HOME/avd``, else
  ``~/.android/avd``), one name a line.
- ``-accel-check``: the real output and exit status, for KVM present (0) or absent (8).
  ``$DISTRL_FAKE_KVM`` says which (``present``/``absent``); unset, whether ``/dev/kvm`` opens.
- ``-avd NAME -port P`` (or ``-ports C,A``), with ``-read-only``, ``-no-snapshot-save``,
  ``-no-snapshot-load``, ``-snapshot NAME``, ``-no-window``, ``-no-audio``, ``-no-boot-anim``, ``-gpu
  MODE``, ``-memory MB``, ``-cores N``, ``-accel MODE``, ``-no-accel``, ``-wipe-data``, ``-verbose``:
  the process becomes the phone (``exec``, as the real launcher execs qemu): ``python -m distrl sim``
  on console port P and adbd P+1, announced to the adb server of ``$ANDROID_ADB_SERVER_PORT``, with its
  snapshots in the AVD's ``snapshots/`` folder (read-only instances save none, as with the real flag),
  booting for ``$DISTRL_FAKE_BOOT_S`` seconds (default 1), with the sim's latencies
  ``$DISTRL_FAKE_LATENCY`` (``calibrated``: a real emulator's) scaled by ``$DISTRL_FAKE_TIME_SCALE``.
  ``-snapshot NAME`` boots into that snapshot unless ``-no-snapshot-load``.
- An unknown AVD: the real ``PANIC: Unknown AVD name`` and exit status 1; an unknown flag: the real
  ``unknown option`` error. ``$DISTRL_FAKE_EMULATOR_CRASH=1`` makes every launch exit at once (a broken
  system image).

Each call appends its arguments as one JSON line to ``$DISTRL_FAKE_EMULATOR_LOG`` when set.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

VALUED = {"-avd", "-port", "-ports", "-snapshot", "-gpu", "-memory", "-cores", "-accel"}
SWITCHES = {
    "-read-only",
    "-no-snapshot-save",
    "-no-snapshot-load",
    "-no-window",
    "-no-audio",
    "-no-boot-anim",
    "-no-accel",
    "-wipe-data",
    "-verbose",
}


def install(sdk_root: Path) -> Path:
    """Put this fake at ``<sdk_root>/emulator/emulator``; returns its path."""
    binary = sdk_root / "emulator" / "emulator"
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n')
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return binary


def make_avd(home: Path, name: str) -> Path:
    """An AVD called ``name`` in the AVD home ``home``, as avdmanager writes one; returns its folder."""
    folder = home / f"{name}.avd"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.ini").write_text("hw.lcd.width=1080\nhw.lcd.height=2400\n")
    (home / f"{name}.ini").write_text(f"avd.ini.encoding=UTF-8\npath={folder}\npath.rel=avd/{name}.avd\n")
    return folder


def _avd_home() -> Path:
    if os.environ.get("ANDROID_AVD_HOME"):
        return Path(os.environ["ANDROID_AVD_HOME"])
    if os.environ.get("ANDROID_EMULATOR_HOME"):
        return Path(os.environ["ANDROID_EMULATOR_HOME"]) / "avd"
    return Path.home() / ".android" / "avd"


def _avd_folder(name: str) -> Path | None:
    ini = _avd_home() / f"{name}.ini"
    if not ini.is_file():
        return None
    for line in ini.read_text().splitlines():
        if line.startswith("path="):
            return Path(line.removeprefix("path="))
    return _avd_home() / f"{name}.avd"


def _kvm() -> bool:
    said = os.environ.get("DISTRL_FAKE_KVM", "")
    if said:
        return said == "present"
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError:
        return False
    return True


def main(argv: list[str]) -> int:
    if log := os.environ.get("DISTRL_FAKE_EMULATOR_LOG"):
        with open(log, "a") as out:
            out.write(json.dumps({"pid": os.getpid(), "argv": argv}) + "\n")
    if argv == ["-list-avds"]:
        home = _avd_home()
        for ini in sorted(home.glob("*.ini")) if home.is_dir() else []:
            print(ini.stem)
        return 0
    if argv == ["-accel-check"]:
        if _kvm():
            print("accel:\n0\nKVM (version 12) is installed and usable.\naccel")
            return 0
        print("accel:\n8\n/dev/kvm is not found: VT disabled in BIOS or KVM kernel module not loaded\naccel")
        return 8
    options: dict[str, str] = {}
    switches: set[str] = set()
    args = iter(argv)
    for arg in args:
        if arg in VALUED:
            value = next(args, None)
            if value is None:
                print(f"ERROR   | {arg} option needs an argument", file=sys.stderr)
                return 1
            options[arg] = value
        elif arg in SWITCHES:
            switches.add(arg)
        else:
            print(f"ERROR   | unknown option: {arg}", file=sys.stderr)
            return 1
    name = options.get("-avd", "")
    folder = _avd_folder(name) if name else None
    if folder is None:
        print(f"PANIC: Unknown AVD name [{name}], use -list-avds to see valid list.", file=sys.stderr)
        return 1
    console = (
        int(options["-ports"].split(",")[0]) if "-ports" in options else int(options.get("-port", "5554"))
    )
    if os.environ.get("DISTRL_FAKE_EMULATOR_CRASH") == "1":
        print("FATAL   | the system image is corrupt", file=sys.stderr)
        return 1
    print(f"INFO    | Android emulator version 35.1.4.0 (fake), AVD {name} on port {console}", flush=True)
    command = [sys.executable, "-m", "distrl", "sim", "--devices", "1", "--base-port", str(console)]
    command += [
        "--snapshots",
        str(folder / "snapshots"),
        "--boot-s",
        os.environ.get("DISTRL_FAKE_BOOT_S", "1"),
    ]
    if latency := os.environ.get("DISTRL_FAKE_LATENCY"):
        command += ["--latency", latency, "--time-scale", os.environ.get("DISTRL_FAKE_TIME_SCALE", "1")]
    if "-read-only" in switches:
        command.append("--read-only")
    if "-snapshot" in options and "-no-snapshot-load" not in switches:
        command += ["--snapshot", options["-snapshot"]]
    os.execv(sys.executable, command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
