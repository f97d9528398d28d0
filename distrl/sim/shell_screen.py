"""The simulated shell's screen and touch commands: ``screencap``, ``input``, ``wm``.

What each prints and returns is Android's (``distrl.sim.shell`` runs the line and says which commands
exist); ``DISPLAY_ID`` and ``density`` are the display as ``dumpsys display`` tells it too.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

from distrl.sim.latency import Op
from distrl.sim.phone import KEYCODES, Phone
from distrl.sim.shell_result import Command, ShellResult, out

__all__ = ["DISPLAY_ID", "INPUT_OPS", "SCREEN_COMMANDS", "density"]

DISPLAY_ID = "4619827259835644672"
"""The built-in display's physical id, as ``dumpsys display`` and ``screencap -d`` know it."""


def _screencap(phone: Phone, args: list[str]) -> ShellResult:
    usage = "usage: screencap [-hp] [-d display-id] [FILENAME]\n   -h: this message\n   -p: save as a png\n"
    png = False
    rest = iter(args)
    for arg in rest:
        if arg == "-p":
            png = True
        elif arg == "-d":
            display = next(rest, "")
            if display not in ("0", DISPLAY_ID):
                return out(f"Display Id '{display}' is not valid.\n", 1)
        elif arg.startswith("-"):
            return out(usage, 1)
        else:
            return out("screencap: the simulated phone has no file system; use stdout\n", 1)
    if png:
        return ShellResult(phone.screenshot("png"), 0)
    rgba = phone.capture().convert("RGBA")  # the clock moves as for -p
    header = struct.pack("<3I", rgba.width, rgba.height, 1)
    return ShellResult(header + rgba.tobytes(), 0)


_INPUT_SOURCES = {"dpad", "keyboard", "mouse", "touchpad", "gamepad", "touchnavigation", "joystick"}
_INPUT_SOURCES |= {"touchscreen", "stylus", "trackball"}
INPUT_OPS = {"tap": Op.TAP, "swipe": Op.SWIPE, "draganddrop": Op.SWIPE, "text": Op.TEXT, "keyevent": Op.KEY}
_INPUT_USAGE = """\
Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]

The sources are:
      {sources}

-d: specify the display ID.
The commands and default sources are:
      text <string> (Default: touchscreen)
      keyevent [--longpress|--doubletap] <key code number or name> ... (Default: keyboard)
      tap <x> <y> (Default: touchscreen)
      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
""".format(sources="\n      ".join(sorted(_INPUT_SOURCES)))


def _input(phone: Phone, args: list[str]) -> ShellResult:
    if args[:1] and args[0] in _INPUT_SOURCES:
        args = args[1:]
    if args[:1] == ["-d"]:
        args = args[2:]
    if not args or args[0] not in INPUT_OPS:
        return out(_INPUT_USAGE, 1)
    verb, params = args[0], args[1:]
    try:
        if verb == "tap" and len(params) == 2:
            phone.tap(*_coordinates(params))
        elif verb in ("swipe", "draganddrop") and len(params) in (4, 5):
            x0, y0, x1, y1 = _coordinates(params[:4])
            phone.swipe(x0, y0, x1, y1, int(params[4]) if len(params) == 5 else 300)
        elif verb == "text" and params:
            phone.type_text(params[0].replace("%s", " "))
        elif verb == "keyevent" and [p for p in params if not p.startswith("--")]:
            for code in (_keycode(p) for p in params if p not in ("--longpress", "--doubletap")):
                phone.key(code)
        else:
            return _bad_input(verb)
    except ValueError:
        return _bad_input(verb)
    return out("")


def _bad_input(verb: str) -> ShellResult:
    return out(
        f"Exception occurred while executing '{verb}':\n"
        f"java.lang.IllegalArgumentException: Error: Invalid arguments for command: {verb}\n",
        255,
    )


def _coordinates(texts: Sequence[str]) -> list[float]:
    values = [float(text) for text in texts]
    if not all(math.isfinite(value) for value in values):
        raise ValueError(texts)
    return values


def _keycode(text: str) -> int:
    """An Android key code from ``66``, ``KEYCODE_ENTER`` or ``ENTER``; 0 (unknown) otherwise."""
    if text.isascii() and text.isdigit():
        return int(text)
    name = text.upper().removeprefix("KEYCODE_")
    return KEYCODES.get(f"KEYCODE_{name}", KEYCODES.get(name, 0))


def _wm(phone: Phone, args: list[str]) -> ShellResult:
    if args == ["size"]:
        return out(f"Physical size: {phone.width}x{phone.height}\n")
    if args == ["density"]:
        return out(f"Physical density: {density(phone)}\n")
    return out("Window manager (window) commands:\n  size [reset|WxH]\n  density [reset|DENSITY]\n", 255)


def density(phone: Phone) -> str:
    return phone.props.get("ro.sf.lcd_density", "420")


SCREEN_COMMANDS: dict[str, Command] = {"screencap": _screencap, "input": _input, "wm": _wm}
"""This family's commands by name, for ``distrl.sim.shell``."""
