"""The Android shell of the simulated phone: ``run_shell(phone, "input tap 540 1200")``.

What adbd runs for ``shell:``, ``shell,v2:`` and ``exec:``. A command line is split
(``distrl.sim.shell_syntax``) into words as ``sh`` would (single and double quotes, backslashes, an
unquoted ``#`` starting a word begins a comment), into commands joined by unquoted ``;``, ``&&``, ``||``
and newlines; a quoted operator is just text (``input text ';'`` types a semicolon), and the unquoted
``|`` and ``&`` the simulated shell does not run are syntax errors. ``$?`` outside single quotes is the
last exit status, which is what adbutils' ``shell2`` appends (``; echo X4EXIT:$?``); no other expansion
is done. The commands are the ones phone-control clients send, answering with the text and exit status
Android gives:

- ``echo``, ``true``, ``false``, ``exit [n]``;
- ``screencap -p`` (PNG) and ``screencap`` (12-byte header: width, height, format 1 as little-endian
  u32, then RGBA pixels);
- ``input [source] tap|swipe|draganddrop|text|keyevent ...`` (``%s`` in text is a space, as in
  Android's ``input``);
- ``wm size|density``, ``dumpsys display|window|activity|distrl`` (``dumpsys distrl`` prints the
  phone's ``state()`` as JSON: the sim-only hook success checks read);
- ``am start|force-stop``, ``monkey -p PKG ... 1``, ``pm clear|list packages|path``;
- ``getprop [key]``, ``settings get|put NAMESPACE KEY [VALUE]``.

Anything else is ``/system/bin/sh: X: inaccessible or not found`` with status 127. Wrong arguments
give the command's usage text and its Android status; no Python exception escapes ``run_shell``.
``shell_ops`` names the timed operations (``latency.Op``) a command line performs, so adbd can draw
latencies and faults before it runs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import struct
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from distrl.sim.latency import Op
from distrl.sim.phone import KEYCODES, Phone
from distrl.sim.shell_syntax import STATUS, ShellSyntaxError, split_line

__all__ = ["ShellResult", "run_shell", "shell_ops"]

logger = logging.getLogger(__name__)

_SH = "/system/bin/sh"


@dataclass(frozen=True, slots=True)
class ShellResult:
    """What a command line printed (stdout and stderr merged, as ``shell:`` does) and its exit status."""

    output: bytes
    exit_code: int


Command = Callable[[Phone, list[str]], ShellResult]


def run_shell(phone: Phone, command: str) -> ShellResult:
    """Run ``command`` on ``phone`` like Android's ``sh -c``; never raises."""
    try:
        chain = split_line(command)
    except ShellSyntaxError as exc:
        return ShellResult(f"{_SH}: syntax error: {exc}\n".encode(), 2)
    output = bytearray()
    status = 0
    for operator, words in chain:
        if (operator == "&&" and status != 0) or (operator == "||" and status == 0):
            continue
        words = [word.replace(STATUS, str(status)) for word in words]
        if words[0] == "exit":
            return ShellResult(bytes(output), _exit_status(words))
        result = _run_one(phone, words)
        output += result.output
        status = result.exit_code
    return ShellResult(bytes(output), status)


def shell_ops(command: str) -> tuple[Op, ...]:
    """The timed operations ``command`` performs, in order (none for a line that does not parse)."""
    try:
        chain = split_line(command)
    except ShellSyntaxError:
        return ()
    ops: list[Op] = []
    for _, words in chain:
        name, args = _program(words[0]), words[1:]
        if name == "screencap":
            ops.append(Op.SCREENSHOT)
        elif name == "input":
            verb = next((a for a in args if a in _INPUT_OPS), None)
            ops.extend([_INPUT_OPS[verb]] if verb else [])
        elif name == "monkey" or (name == "am" and args[:1] == ["start"]):
            ops.append(Op.PAGE_LOAD if "-d" in args else Op.LAUNCH)
    return tuple(ops)


def _program(word: str) -> str:
    return word.removeprefix("/system/bin/")


def _exit_status(words: Sequence[str]) -> int:
    try:
        return int(words[1]) & 0xFF if len(words) > 1 else 0
    except ValueError:
        return 2


def _run_one(phone: Phone, words: list[str]) -> ShellResult:
    name = _program(words[0])
    command = _COMMANDS.get(name)
    if command is None:
        return ShellResult(f"{_SH}: {words[0]}: inaccessible or not found\n".encode(), 127)
    try:
        return command(phone, words[1:])
    except Exception as exc:  # a bug in the phone must not kill the connection that asked
        logger.exception("sim shell: %r failed", words)
        return ShellResult(f"{name}: java.lang.RuntimeException: {exc}\n".encode(), 255)


# -- commands -----------------------------------------------------------------------------------------


def _out(text: str, status: int = 0) -> ShellResult:
    return ShellResult(text.encode(), status)


def _lines(lines: Iterable[str], status: int = 0) -> ShellResult:
    return _out("".join(f"{line}\n" for line in lines), status)


def _echo(phone: Phone, args: list[str]) -> ShellResult:
    newline = args[:1] != ["-n"]
    return _out(" ".join(args[0 if newline else 1 :]) + "\n" * newline)


def _screencap(phone: Phone, args: list[str]) -> ShellResult:
    usage = "usage: screencap [-hp] [-d display-id] [FILENAME]\n   -h: this message\n   -p: save as a png\n"
    png = False
    rest = iter(args)
    for arg in rest:
        if arg == "-p":
            png = True
        elif arg == "-d":
            display = next(rest, "")
            if display not in ("0", _DISPLAY_ID):
                return _out(f"Display Id '{display}' is not valid.\n", 1)
        elif arg.startswith("-"):
            return _out(usage, 1)
        else:
            return _out("screencap: the simulated phone has no file system; use stdout\n", 1)
    if png:
        return ShellResult(phone.screenshot("png"), 0)
    rgba = phone.capture().convert("RGBA")  # the clock moves as for -p
    header = struct.pack("<3I", rgba.width, rgba.height, 1)
    return ShellResult(header + rgba.tobytes(), 0)


_INPUT_SOURCES = {"dpad", "keyboard", "mouse", "touchpad", "gamepad", "touchnavigation", "joystick"}
_INPUT_SOURCES |= {"touchscreen", "stylus", "trackball"}
_INPUT_OPS = {"tap": Op.TAP, "swipe": Op.SWIPE, "draganddrop": Op.SWIPE, "text": Op.TEXT, "keyevent": Op.KEY}
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
    if not args or args[0] not in _INPUT_OPS:
        return _out(_INPUT_USAGE, 1)
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
    return _out("")


def _bad_input(verb: str) -> ShellResult:
    return _out(
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
        return _out(f"Physical size: {phone.width}x{phone.height}\n")
    if args == ["density"]:
        return _out(f"Physical density: {_density(phone)}\n")
    return _out("Window manager (window) commands:\n  size [reset|WxH]\n  density [reset|DENSITY]\n", 255)


def _density(phone: Phone) -> str:
    return phone.props.get("ro.sf.lcd_density", "420")


_DISPLAY_ID = "4619827259835644672"


def _dumpsys(phone: Phone, args: list[str]) -> ShellResult:
    if not args:
        return _lines(["Currently running services:", *(f"  {name}" for name in sorted(_SERVICES))])
    service = _SERVICES.get(args[0])
    if service is None:
        return _out(f"Can't find service: {args[0]}\n")
    return _out(service(phone, args[1:]))


def _dump_display(phone: Phone, args: list[str]) -> str:
    w, h, dpi = phone.width, phone.height, _density(phone)
    frame = f"Rect(0, 0 - {w}, {h})"
    return (
        "DISPLAY MANAGER (dumpsys display)\n"
        "  mOnlyCore=false\n  mSafeMode=false\n"
        f"  mViewports=[DisplayViewport{{type=INTERNAL, valid=true, isActive=true, displayId=0, "
        f"uniqueId='local:{_DISPLAY_ID}', physicalPort=0, orientation=0, logicalFrame={frame}, "
        f"physicalFrame={frame}, deviceWidth={w}, deviceHeight={h}}}]\n\n"
        "Display Devices: size=1\n"
        f'  DisplayDeviceInfo{{"Built-in Screen": uniqueId="local:{_DISPLAY_ID}", {w} x {h}, modeId 1, '
        f"defaultModeId 1, density {dpi}, {dpi}.0 x {dpi}.0 dpi, touch INTERNAL, rotation 0, "
        "type INTERNAL, state ON, FLAG_DEFAULT_DISPLAY}\n\n"
        "Logical Displays: size=1\n  Display 0:\n    mDisplayId=0\n"
        f'    mBaseDisplayInfo=DisplayInfo{{"Built-in Screen", displayId 0, real {w} x {h}, '
        f"largest app {w} x {h}, smallest app {w} x {h}, rotation 0, density {dpi}, state ON}}\n"
    )


def _focus(phone: Phone) -> tuple[str, str]:
    """``(window title, hash)`` of the focused window, the activity spelt out as dumpsys does."""
    focus = phone.focus()
    package, slash, activity = focus.partition("/")
    title = f"{package}/{_full_class(package, activity)}" if slash else focus
    return title, f"{zlib.crc32(title.encode()):08x}"[:7]


def _dump_window(phone: Phone, args: list[str]) -> str:
    title, token = _focus(phone)
    return (
        "WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
        f"  Window #0 Window{{{token} u0 {title}}}:\n"
        f"    mDisplayId=0 rootTaskId=1 mSession=Session{{{token[::-1]} 1234:u0a10123}}\n"
        "  mHasPermanentDpad=false\n  mTopFocusedDisplayId=0\n"
        f"  mCurrentFocus=Window{{{token} u0 {title}}}\n"
        f"  mFocusedApp=ActivityRecord{{{token[::-1]} u0 {phone.focus()} t1}}\n"
    )


def _dump_activity(phone: Phone, args: list[str]) -> str:
    focus = phone.focus()
    pid = 1000 + zlib.crc32(focus.encode()) % 9000
    return (
        "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n"
        f"  mResumedActivity: ActivityRecord{{{_focus(phone)[1]} u0 {focus} t1}}\n"
        "TASK 1:\n"
        f"  ACTIVITY {focus} {pid:x} pid={pid}\n"
    )


def _dump_distrl(phone: Phone, args: list[str]) -> str:
    return json.dumps(phone.state()) + "\n"


_SERVICES: dict[str, Callable[[Phone, list[str]], str]] = {
    "display": _dump_display,
    "window": _dump_window,
    "activity": _dump_activity,
    "distrl": _dump_distrl,
}


def _am(phone: Phone, args: list[str]) -> ShellResult:
    if args[:1] == ["force-stop"] and len(args) == 2:
        with contextlib.suppress(KeyError):  # Android says nothing about unknown packages either
            phone.force_stop(args[1])
        return _out("")
    if args[:1] == ["start"]:
        return _am_start(phone, args[1:])
    return _out(
        "Activity manager (activity) commands:\n  start [-W] [-n <COMPONENT>] [-a <ACTION>] [-d <DATA_URI>]\n"
        "  force-stop <PACKAGE>\n",
        255,
    )


_AM_FLAGS = {"-W", "-S", "--activity-clear-task", "--activity-new-task", "--activity-clear-top"}
_AM_OPTIONS = {"-n", "-a", "-d", "-c", "-t", "-f", "--user", "-p"}
_AM_EXTRAS = {"--es", "--ez", "--ei", "--el", "--ef", "--eu"}


def _am_start(phone: Phone, args: list[str]) -> ShellResult:
    options: dict[str, str] = {}
    rest = iter(args)
    for arg in rest:
        if arg in _AM_OPTIONS or arg in _AM_EXTRAS:
            value = next(rest, None)
            if arg in _AM_EXTRAS:
                value = value and next(rest, None)
            if value is None:
                return _out(
                    f"Exception occurred while executing 'start':\n"
                    f'java.lang.IllegalArgumentException: Argument expected after "{arg}"\n',
                    255,
                )
            options[arg] = value
        elif arg in _AM_FLAGS:
            options[arg] = ""
        elif arg.startswith("-"):
            return _out(f"Error: Unknown option: {arg}\n", 255)
        else:
            options["-n" if "/" in arg and "://" not in arg else "-d"] = arg
    component, action, data = options.get("-n"), options.get("-a"), options.get("-d")
    parts = (
        [f"act={action}"] * bool(action)
        + [f"dat={data}"] * bool(data)
        + [f"cmp={component}"] * bool(component)
    )
    intent = f"Intent {{ {' '.join(parts)} }}"
    if component:
        package, _, activity = component.partition("/")
        if package.startswith(".") or not activity:
            return _out(f"Error: Bad component name: {component}\n", 255)
        full = _full_class(package, activity)
        if full != _full_class(package, phone.activities.get(package, "")):
            return _out(
                f"Starting: {intent}\nError type 3\n"
                f"Error: Activity class {{{package}/{full}}} does not exist.\n",
                1,
            )
        phone.launch(package, activity)
    elif data and action in (None, "android.intent.action.VIEW"):
        try:
            phone.open_url(data)
        except KeyError:
            return _unresolved(intent)
    else:
        return _unresolved(intent)
    waited = "Status: ok\nLaunchState: COLD\nTotalTime: 0\nWaitTime: 0\nComplete\n" if "-W" in options else ""
    return _out(f"Starting: {intent}\n{waited}")


def _full_class(package: str, activity: str) -> str:
    """``.Settings`` of ``com.android.settings`` is ``com.android.settings.Settings``."""
    return package + activity if activity.startswith(".") else activity


def _unresolved(intent: str) -> ShellResult:
    return _out(f"Starting: {intent}\nError: Activity not started, unable to resolve {intent}\n", 1)


def _monkey(phone: Phone, args: list[str]) -> ShellResult:
    echo = "".join(f"  bash arg: {arg}\n" for arg in args)
    packages = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "-p"]
    if not args or not (args[-1].isascii() and args[-1].isdigit()):
        return _out(
            f"{echo}** Error: Count not specified\n"
            "usage: monkey [-p ALLOWED_PACKAGE [-p ALLOWED_PACKAGE] ...]\n"
            "              [-c MAIN_CATEGORY [-c MAIN_CATEGORY] ...] COUNT\n",
            1,
        )
    installed = [package for package in packages if package in phone.packages]
    if not installed:
        return _out(f"{echo}** No activities found to run, monkey aborted.\n", 252)
    phone.launch(installed[0])
    return _out(
        f"{echo}Events injected: {args[-1]}\n"
        "## Network stats: elapsed time=7ms (0ms mobile, 0ms wifi, 7ms not connected)\n"
    )


def _pm(phone: Phone, args: list[str]) -> ShellResult:
    if not phone.booted:
        return _out("Error: Could not access the Package Manager.  Is the system running?\n", 1)
    if args == ["path", "android"]:  # the framework: how boot checks ask whether the system is up
        return _out("package:/system/framework/framework-res.apk\n")
    if args[:1] == ["clear"] and len(args) == 2:
        try:
            phone.clear_data(args[1])
        except KeyError:
            return _out("Failed\n", 1)
        return _out("Success\n")
    if args[:2] == ["list", "packages"]:
        words = [arg for arg in args[2:] if not arg.startswith("-")]
        paths = "-f" in args
        return _lines(
            f"package:{_apk(name) + '=' if paths else ''}{name}"
            for name in sorted(phone.packages)
            if not words or words[-1] in name
        )
    if args[:1] == ["path"] and len(args) == 2:
        found = args[1] in phone.packages
        return _out(f"package:{_apk(args[1])}\n" if found else "", 0 if found else 1)
    return _out(
        "Package manager (package) commands:\n  list packages [-f] [FILTER]\n  path PACKAGE\n"
        "  clear PACKAGE\n",
        255,
    )


def _apk(package: str) -> str:
    return f"/data/app/{package}-1/base.apk"


def _getprop(phone: Phone, args: list[str]) -> ShellResult:
    props = phone.props
    if not args:
        return _lines(f"[{key}]: [{props[key]}]" for key in sorted(props))
    return _out(props.get(args[0], args[1] if len(args) > 1 else "") + "\n")


_NAMESPACES = ("system", "secure", "global")


def _settings(phone: Phone, args: list[str]) -> ShellResult:
    args = [*args[:1], *(arg.lower() for arg in args[1:2]), *args[2:]]
    if len(args) == 3 and args[0] == "get" and args[1] in _NAMESPACES:
        value = phone.get_setting(args[1], args[2])
        return _out(f"{'null' if value is None else value}\n")
    if len(args) == 4 and args[0] == "put" and args[1] in _NAMESPACES:
        phone.put_setting(args[1], args[2], args[3])
        return _out("")
    return _out(
        "usage:  settings [--user <USER_ID> | current] get namespace key\n"
        "        settings [--user <USER_ID> | current] put namespace key value\n\n"
        "'namespace' is one of {system, secure, global}, case-insensitive\n",
        255,
    )


_COMMANDS: dict[str, Command] = {
    "echo": _echo,
    "true": lambda phone, args: _out(""),
    "false": lambda phone, args: _out("", 1),
    "screencap": _screencap,
    "input": _input,
    "wm": _wm,
    "dumpsys": _dumpsys,
    "am": _am,
    "monkey": _monkey,
    "pm": _pm,
    "getprop": _getprop,
    "settings": _settings,
}
