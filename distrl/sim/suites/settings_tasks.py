"""General tasks done in Settings: switches, sliders, choices, pages to open, renaming the phone.

``TRAIN`` templates hold out, for the ``test`` split, one wording of each switch ("Can you turn on the
Wi-Fi?"), brightness levels 25% and 90% and three brightness wordings, the 2-minute screen timeout and
the wording "Make the screen turn off after ...", three wordings of settings pages and two of About
phone. ``UNSEEN`` templates (Bluetooth, location, Battery Saver, volumes, font size, renaming the phone)
make the ``unseen`` split.

The switches (Wi-Fi, airplane mode, ..., Battery Saver) are ``settings_switch_tasks``'; ``TRAIN`` and
``UNSEEN`` hold every Settings template, in the order that fixes their tasks' ids.

Success is read from the phone's Android settings (``state["settings"]``), or, for "open" and "check"
tasks, from the page in front. Setups force only the start state a goal needs (Wi-Fi on before "turn
off Wi-Fi", brightness low before "set the brightness to max"). The expert reaches About phone through
Settings' search (it types "About phone" and taps the result): the row is the last of a long list, and
the scrolls down to it look alike on a small screen. Drawn tasks (``Template.draw``, for pretraining)
add wordings of their own to the brightness, screen timeout and About phone templates.
"""

from __future__ import annotations

import random

from distrl.records import Action
from distrl.sim.app import Json
from distrl.sim.apps.settings import FONT_SIZES, SCREEN_TIMEOUTS, VOLUME_MAX
from distrl.sim.suites import Params, Template, held_out, settings_switch_tasks
from distrl.sim.suites.system_expert import (
    SETTINGS,
    Screen,
    draw_phrase,
    indexed,
    int_setting,
    setting,
    settings_at,
    template,
    top,
)

__all__ = ["TRAIN", "UNSEEN"]


_BRIGHTNESS_GOALS: tuple[tuple[str, str], ...] = (
    ("max", "Set the brightness to max"), ("max", "Turn the brightness all the way up"),
    ("max", "make the screen as bright as possible"), ("max", "Set screen brightness to maximum"),
    ("max", "increase the brightness to 100%"),
    ("min", "Set the brightness to min"), ("min", "Turn the brightness all the way down"),
    ("min", "make the screen as dim as possible"), ("min", "Set screen brightness to minimum"),
    ("min", "decrease the brightness to 0%"),
    ("50", "Set the brightness to 50%"), ("50", "set brightness to half"),
    ("50", "Put the screen brightness in the middle"), ("50", "Change the brightness to 50 percent"),
    ("25", "Set the brightness to 25%"), ("25", "set screen brightness to a quarter"),
    ("75", "Set the brightness to 75%"), ("75", "set screen brightness to three quarters"),
    ("10", "Set the brightness to 10%"), ("90", "Set the brightness to 90%"),
)  # fmt: skip


def _level_fraction(level: str) -> float:
    return {"max": 1.0, "min": 0.0}.get(level, int(level) / 100 if level.isdigit() else 0.5)


def _level_ok(level: str, value: int, top: int) -> bool:
    if level == "max":
        return value == top
    if level in ("min", "mute"):
        return value == 0
    return abs(value - _level_fraction(level) * top) <= max(0.05 * top, 0.5) + 1e-9


def _brightness_params() -> list[Params]:
    return [{"level": level, "phrase": i} for i, (level, _) in enumerate(_BRIGHTNESS_GOALS)]


_HELD_OUT_LEVELS = ("25", "90")

_DRAWN_BRIGHTNESS = "Set the brightness to {level}%"
"""The wording of drawn brightness levels (phrase ``len(_BRIGHTNESS_GOALS)``; a train wording)."""


def _brightness_goal(p: Params) -> str:
    if int(p["phrase"]) == len(_BRIGHTNESS_GOALS):
        return _DRAWN_BRIGHTNESS.format(level=p["level"])
    return _BRIGHTNESS_GOALS[int(p["phrase"])][1]


def _brightness_draw(rng: random.Random) -> Params:
    """A level from 5% to 95% in steps of 5, never a ``test`` level, in the train wording "Set the
    brightness to N%"."""
    levels = [str(n) for n in range(5, 100, 5) if str(n) not in _HELD_OUT_LEVELS]
    return {"level": rng.choice(levels), "phrase": len(_BRIGHTNESS_GOALS)}


def _brightness_setup(p: Params) -> list[str]:
    """Far from the goal: dim before a bright goal (half or more), bright before a dim one."""
    start = 40 if _level_fraction(str(p["level"])) >= 0.5 else 200
    return [f"settings put system screen_brightness {start}"]


def _brightness_check(p: Params, state: Json) -> bool:
    return _level_ok(str(p["level"]), int_setting(state, "system", "screen_brightness", 128), 255)


def _brightness_plan(p: Params, screen: Screen) -> Action:
    return settings_at(screen, "display") or screen.slide(
        "settings/brightness", _level_fraction(str(p["level"]))
    )


_VOLUME_GOALS: tuple[tuple[str, str, str], ...] = (
    ("volume_music", "max", "Turn the media volume all the way up"),
    ("volume_music", "max", "Set media volume to max"),
    ("volume_music", "mute", "Mute the media volume"),
    ("volume_music", "mute", "turn media volume down to zero"),
    ("volume_music", "50", "Set the media volume to 50%"),
    ("volume_ring", "max", "Turn the ringer volume all the way up"),
    ("volume_ring", "mute", "Set the ring volume to 0"),
    ("volume_alarm", "max", "Set the alarm volume to max"),
    ("volume_alarm", "max", "make my alarms as loud as possible"),
    ("volume_alarm", "50", "Set the alarm volume to half"),
)


def _volume_params() -> list[Params]:
    return [{"key": key, "level": level, "phrase": i} for i, (key, level, _) in enumerate(_VOLUME_GOALS)]


def _volume_setup(p: Params) -> list[str]:
    top = VOLUME_MAX[str(p["key"])]
    start = 1 if p["level"] in ("max", "50") else top - 1
    return [f"settings put system {p['key']} {start}"]


def _volume_check(p: Params, state: Json) -> bool:
    key = str(p["key"])
    top = VOLUME_MAX[key]
    return _level_ok(str(p["level"]), int_setting(state, "system", key, top // 2), top)


def _volume_plan(p: Params, screen: Screen) -> Action:
    level = str(p["level"])
    fraction = 0.0 if level == "mute" else _level_fraction(level)
    return settings_at(screen, "sound") or screen.slide(f"settings/{p['key']}", fraction)


_TIMEOUT_PHRASES = (
    "Set the screen timeout to {label}",
    "change screen timeout to {label}",
    "Make the screen turn off after {label} of inactivity",
)

_DRAWN_TIMEOUT_PHRASES = (
    "Please set the screen timeout to {label}",
    "Let the screen sleep after {label}",
    "Turn the display off after {label} without use",
    "screen timeout {label}",
    "I want my screen to go dark after {label}",
    "Change how long the screen stays on to {label}",
    "Set the display timeout to {label}",
    "Keep the screen on for {label}",
)
"""Wordings only drawn timeouts use (phrase indices after ``_TIMEOUT_PHRASES``')."""

_HELD_OUT_TIMEOUT = (120000, 2)
"""The ``test`` split's timeout (2 minutes) and wording (``Make the screen turn off after ...``)."""


def _timeout_params() -> list[Params]:
    return [
        {"ms": ms, "label": label, "phrase": i}
        for ms, label in SCREEN_TIMEOUTS
        if ms != 60000
        for i in range(len(_TIMEOUT_PHRASES))
    ]


def _timeout_goal(p: Params) -> str:
    return (*_TIMEOUT_PHRASES, *_DRAWN_TIMEOUT_PHRASES)[int(p["phrase"])].format(label=p["label"])


def _timeout_draw(rng: random.Random) -> Params:
    """Any timeout but the held-out one and the default, in any wording but the held-out one."""
    ms, label = rng.choice(
        [(ms, label) for ms, label in SCREEN_TIMEOUTS if ms not in (60000, _HELD_OUT_TIMEOUT[0])]
    )
    count = len(_TIMEOUT_PHRASES) + len(_DRAWN_TIMEOUT_PHRASES)
    return {
        "ms": ms,
        "label": label,
        "phrase": draw_phrase(rng, count, {_HELD_OUT_TIMEOUT[1]}),
    }


def _timeout_check(p: Params, state: Json) -> bool:
    return int_setting(state, "system", "screen_off_timeout", 60000) == p["ms"]


def _timeout_plan(p: Params, screen: Screen) -> Action:
    return settings_at(screen, "timeout") or screen.tap_or_scroll(f"settings/timeout/{p['ms']}")


_FONT_PHRASES = ("Set the font size to {label}", "make the text size {lower}")


def _font_params() -> list[Params]:
    return [
        {"scale": scale, "label": label, "phrase": i}
        for scale, label in FONT_SIZES
        if label != "Default"
        for i in range(len(_FONT_PHRASES))
    ]


def _font_check(p: Params, state: Json) -> bool:
    try:
        return float(setting(state, "system", "font_scale", "1.0")) == float(str(p["scale"]))
    except ValueError:
        return False


def _font_plan(p: Params, screen: Screen) -> Action:
    return settings_at(screen, "font_size") or screen.tap_or_scroll(
        f"settings/font_size/{str(p['label']).lower()}"
    )


_PAGE_GOALS: tuple[tuple[str, str], ...] = (
    ("display", "Open the display settings"), ("display", "go to display settings"),
    ("sound", "Open sound settings"), ("sound", "show me the sound and vibration settings"),
    ("battery", "Open the battery settings"), ("battery", "check the battery level in settings"),
    ("network", "Open network settings"), ("network", "go to the Wi-Fi settings"),
    ("location", "Open location settings"), ("apps", "Open the apps page in settings"),
    ("apps_all", "Show me all the apps in settings"), ("timeout", "open the screen timeout settings"),
)  # fmt: skip

_ABOUT_GOALS = (
    "What Android version is this phone running?",
    "Check the Android version",
    "What is the model of this phone?",
    "Find the build number of this phone",
    "what's my phone number?",
    "What is this device's name?",
    "Open About phone in settings",
    "show me the phone's IP address",
)


_DRAWN_ABOUT_GOALS = (
    "Check the model of this phone",
    "Which build number does this phone have?",
    "Show me the device name",
    "Open the About phone page",
    "find the IP address of this phone",
    "What model is this phone?",
    "Look up the build number in settings",
    "Show the About phone screen",
)
"""Wordings only drawn About phone tasks use (phrase indices after ``_ABOUT_GOALS``')."""

_HELD_OUT_ABOUT = (1, 4)
"""``Check the Android version`` and ``what's my phone number?`` are ``test`` wordings."""

_ABOUT_QUERY = "About phone"


def _page_params() -> list[Params]:
    return [{"screen": screen, "phrase": i} for i, (screen, _) in enumerate(_PAGE_GOALS)]


def _about_params() -> list[Params]:
    return [{"screen": "about", "phrase": i} for i in range(len(_ABOUT_GOALS))]


def _page_check(p: Params, state: Json) -> bool:
    return top(state) == (SETTINGS, p["screen"])


def _page_plan(p: Params, screen: Screen) -> Action:
    return settings_at(screen, str(p["screen"])) or screen.wait()


def _about_draw(rng: random.Random) -> Params:
    """Any wording of opening About phone but the held-out ones."""
    count = len(_ABOUT_GOALS) + len(_DRAWN_ABOUT_GOALS)
    return {"screen": "about", "phrase": draw_phrase(rng, count, _HELD_OUT_ABOUT)}


def _about_plan(p: Params, screen: Screen) -> Action:
    """Settings' search for "About phone", then its result: the page is the last row of a long list, which
    a small screen shows only after scrolls that look alike."""
    phone = screen.phone
    if phone.top_package == SETTINGS:
        frame = phone.top_frame
        if frame["screen"] == "about":
            return screen.wait()
        if frame["screen"] == "search":
            return screen.fill("settings/search/query", _ABOUT_QUERY) or screen.tap_or_scroll(
                "settings/result/about_phone"
            )
    return settings_at(screen, "main") or screen.tap_or_scroll("settings/search")


_NAMES = ("Alex's Pixel", "Work Phone", "My Pixel", "Kitchen Phone", "Pixel of Sam", "Travel Phone")

_RENAME_PHRASES = ("Rename this phone to {name}", "Change the device name to {name}")


def _rename_params() -> list[Params]:
    return [{"name": name, "phrase": i % 2} for i, name in enumerate(_NAMES)]


def _rename_check(p: Params, state: Json) -> bool:
    return setting(state, "global", "device_name", "") == p["name"]


def _rename_plan(p: Params, screen: Screen) -> Action:
    return (
        settings_at(screen, "device_name")
        or screen.fill("settings/device_name/field", str(p["name"]))
        or screen.tap_or_scroll("settings/device_name/rename")
    )


TRAIN: tuple[Template, ...] = (
    *settings_switch_tasks.TRAIN,
    template(
        "brightness",
        "train",
        _brightness_params,
        _brightness_goal,
        _brightness_check,
        _brightness_plan,
        _brightness_setup,
        held_out("level", _HELD_OUT_LEVELS, phrases=(3, 8, 13)),
        draw=_brightness_draw,
    ),
    template(
        "screen_timeout",
        "train",
        _timeout_params,
        _timeout_goal,
        _timeout_check,
        _timeout_plan,
        held_out=held_out("ms", (_HELD_OUT_TIMEOUT[0],), phrases=(_HELD_OUT_TIMEOUT[1],)),
        draw=_timeout_draw,
    ),
    template(
        "settings_page",
        "train",
        _page_params,
        indexed(_PAGE_GOALS),
        _page_check,
        _page_plan,
        held_out=held_out(phrases=(1, 3, 7)),
    ),
    template(
        "about_phone",
        "train",
        _about_params,
        lambda p: (*_ABOUT_GOALS, *_DRAWN_ABOUT_GOALS)[int(p["phrase"])],
        _page_check,
        _about_plan,
        held_out=held_out(phrases=_HELD_OUT_ABOUT),
        draw=_about_draw,
    ),
)
"""Settings templates of the ``train`` split, their held-out values and wordings the ``test`` split."""

UNSEEN: tuple[Template, ...] = (
    *settings_switch_tasks.UNSEEN,
    template(
        "volume", "unseen", _volume_params, indexed(_VOLUME_GOALS), _volume_check, _volume_plan, _volume_setup
    ),
    template(
        "font_size",
        "unseen",
        _font_params,
        lambda p: _FONT_PHRASES[int(p["phrase"])].format(label=p["label"], lower=str(p["label"]).lower()),
        _font_check,
        _font_plan,
    ),
    template(
        "rename_phone",
        "unseen",
        _rename_params,
        lambda p: _RENAME_PHRASES[int(p["phrase"])].format(name=p["name"]),
        _rename_check,
        _rename_plan,
    ),
)
"""Held-out Settings templates (the ``unseen`` split)."""
