"""The simulated shell's system services: ``dumpsys``, ``am``, ``monkey``, ``pm``, ``getprop``,
``settings``.

What each prints and returns is Android's (``distrl.sim.shell`` runs the line and says which commands
exist). ``dumpsys distrl`` prints the phone's ``state()`` as JSON: the sim-only hook success checks read.
"""

from __future__ import annotations

import contextlib
import json
import zlib
from collections.abc import Callable

from distrl.sim.phone import Phone
from distrl.sim.shell_result import Command, ShellResult, lines, out
from distrl.sim.shell_screen import DISPLAY_ID, density

__all__ = ["SYSTEM_COMMANDS"]


def _dumpsys(phone: Phone, args: list[str]) -> ShellResult:
    if not args:
        return lines(["Currently running services:", *(f"  {name}" for name in sorted(_SERVICES))])
    service = _SERVICES.get(args[0])
    if service is None:
        return out(f"Can't find service: {args[0]}\n")
    return out(service(phone, args[1:]))


def _dump_display(phone: Phone, args: list[str]) -> str:
    w, h, dpi = phone.width, phone.height, density(phone)
    frame = f"Rect(0, 0 - {w}, {h})"
    return (
        "DISPLAY MANAGER (dumpsys display)\n"
        "  mOnlyCore=false\n  mSafeMode=false\n"
        f"  mViewports=[DisplayViewport{{type=INTERNAL, valid=true, isActive=true, displayId=0, "
        f"uniqueId='local:{DISPLAY_ID}', physicalPort=0, orientation=0, logicalFrame={frame}, "
        f"physicalFrame={frame}, deviceWidth={w}, deviceHeight={h}}}]\n\n"
        "Display Devices: size=1\n"
        f'  DisplayDeviceInfo{{"Built-in Screen": uniqueId="local:{DISPLAY_ID}", {w} x {h}, modeId 1, '
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
        return out("")
    if args[:1] == ["start"]:
        return _am_start(phone, args[1:])
    return out(
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
                return out(
                    f"Exception occurred while executing 'start':\n"
                    f'java.lang.IllegalArgumentException: Argument expected after "{arg}"\n',
                    255,
                )
            options[arg] = value
        elif arg in _AM_FLAGS:
            options[arg] = ""
        elif arg.startswith("-"):
            return out(f"Error: Unknown option: {arg}\n", 255)
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
            return out(f"Error: Bad component name: {component}\n", 255)
        full = _full_class(package, activity)
        if full != _full_class(package, phone.activities.get(package, "")):
            return out(
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
    return out(f"Starting: {intent}\n{waited}")


def _full_class(package: str, activity: str) -> str:
    """``.Settings`` of ``com.android.settings`` is ``com.android.settings.Settings``."""
    return package + activity if activity.startswith(".") else activity


def _unresolved(intent: str) -> ShellResult:
    return out(f"Starting: {intent}\nError: Activity not started, unable to resolve {intent}\n", 1)


def _monkey(phone: Phone, args: list[str]) -> ShellResult:
    echo = "".join(f"  bash arg: {arg}\n" for arg in args)
    packages = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "-p"]
    if not args or not (args[-1].isascii() and args[-1].isdigit()):
        return out(
            f"{echo}** Error: Count not specified\n"
            "usage: monkey [-p ALLOWED_PACKAGE [-p ALLOWED_PACKAGE] ...]\n"
            "              [-c MAIN_CATEGORY [-c MAIN_CATEGORY] ...] COUNT\n",
            1,
        )
    installed = [package for package in packages if package in phone.packages]
    if not installed:
        return out(f"{echo}** No activities found to run, monkey aborted.\n", 252)
    phone.launch(installed[0])
    return out(
        f"{echo}Events injected: {args[-1]}\n"
        "## Network stats: elapsed time=7ms (0ms mobile, 0ms wifi, 7ms not connected)\n"
    )


def _pm(phone: Phone, args: list[str]) -> ShellResult:
    if not phone.booted:
        return out("Error: Could not access the Package Manager.  Is the system running?\n", 1)
    if args == ["path", "android"]:  # the framework: how boot checks ask whether the system is up
        return out("package:/system/framework/framework-res.apk\n")
    if args[:1] == ["clear"] and len(args) == 2:
        try:
            phone.clear_data(args[1])
        except KeyError:
            return out("Failed\n", 1)
        return out("Success\n")
    if args[:2] == ["list", "packages"]:
        words = [arg for arg in args[2:] if not arg.startswith("-")]
        paths = "-f" in args
        return lines(
            f"package:{_apk(name) + '=' if paths else ''}{name}"
            for name in sorted(phone.packages)
            if not words or words[-1] in name
        )
    if args[:1] == ["path"] and len(args) == 2:
        found = args[1] in phone.packages
        return out(f"package:{_apk(args[1])}\n" if found else "", 0 if found else 1)
    return out(
        "Package manager (package) commands:\n  list packages [-f] [FILTER]\n  path PACKAGE\n"
        "  clear PACKAGE\n",
        255,
    )


def _apk(package: str) -> str:
    return f"/data/app/{package}-1/base.apk"


def _getprop(phone: Phone, args: list[str]) -> ShellResult:
    props = phone.props
    if not args:
        return lines(f"[{key}]: [{props[key]}]" for key in sorted(props))
    return out(props.get(args[0], args[1] if len(args) > 1 else "") + "\n")


_NAMESPACES = ("system", "secure", "global")


def _settings(phone: Phone, args: list[str]) -> ShellResult:
    args = [*args[:1], *(arg.lower() for arg in args[1:2]), *args[2:]]
    if len(args) == 3 and args[0] == "get" and args[1] in _NAMESPACES:
        value = phone.get_setting(args[1], args[2])
        return out(f"{'null' if value is None else value}\n")
    if len(args) == 4 and args[0] == "put" and args[1] in _NAMESPACES:
        phone.put_setting(args[1], args[2], args[3])
        return out("")
    return out(
        "usage:  settings [--user <USER_ID> | current] get namespace key\n"
        "        settings [--user <USER_ID> | current] put namespace key value\n\n"
        "'namespace' is one of {system, secure, global}, case-insensitive\n",
        255,
    )


SYSTEM_COMMANDS: dict[str, Command] = {
    "dumpsys": _dumpsys,
    "am": _am,
    "monkey": _monkey,
    "pm": _pm,
    "getprop": _getprop,
    "settings": _settings,
}
"""This family's commands by name, for ``distrl.sim.shell``."""
