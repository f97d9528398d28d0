"""General tasks done in the Clock: alarms (at many times, labelled, on given days), switching and
deleting the alarms a fresh Clock has, timers, the stopwatch and world clocks.

``TRAIN`` templates hold out, for the ``test`` split, alarm times no train alarm has
(``HELD_OUT_ALARM_TIMES``, e.g. 7:50 or 6:37 PM) and the wording "Can you set an alarm for ...?", the
third wording of switching an alarm on or off, timers of 6, 9, 18, 25, 35, 50, 75 and 90 minutes, and
the wording "Open the clock and start the stopwatch". ``UNSEEN`` templates (labelled alarms, alarms on
given days, deleting alarms, world clocks) make the ``unseen`` split. Drawn tasks (``Template.draw``, for
pretraining) add wordings of their own to alarms, switching alarms and the stopwatch, never a held-out one.

Success is read from the Clock's data (``state["apps"]["com.google.android.deskclock"]``): an alarm task
succeeds when an alarm at exactly that time is on (with that label, on exactly those days, when the
goal says so); the fresh Clock's own alarms (7:00 AM, 8:30 AM, 9:00 AM, 10:00 PM) are the ones the
"turn off", "turn on" and "delete" goals name, so no setup is needed. The timer, stopwatch and world-clock
templates are ``clock_timer_tasks``'; ``TRAIN`` and ``UNSEEN`` hold every Clock template, in the order
that fixes their tasks' ids.
"""

from __future__ import annotations

import random
import re

from distrl.records import Action
from distrl.sim.app import Json
from distrl.sim.apps.clock import picked_time
from distrl.sim.suites import Params, Template, held_out
from distrl.sim.suites import expert as ex
from distrl.sim.suites.clock_timer_tasks import STOPWATCH, TIMER, WORLD_CLOCK, typed_timer
from distrl.sim.suites.system_expert import (
    CLOCK,
    Screen,
    clock_tab,
    draw_phrase,
    norm,
    open_app,
    template,
)

__all__ = ["HELD_OUT_ALARM_TIMES", "TRAIN", "UNSEEN", "typed_time", "typed_timer"]


def _alarms(state: Json) -> list[Json]:
    alarms: list[Json] = state["apps"].get(CLOCK, {}).get("alarms", [])
    return alarms


def _say_time(hour: int, minute: int, style: int) -> str:
    """A time as people write it: ``6:30am``, ``6:30 AM``, ``6 pm``, ``18:30``, ``6:30 in the morning``."""
    h12 = hour % 12 or 12
    half = "am" if hour < 12 else "pm"
    hm = f"{h12}:{minute:02d}"
    short = str(h12) if minute == 0 else hm
    style %= 6
    if style == 0:
        return f"{short}{half}"
    if style == 1:
        return f"{short} {half.upper()}"
    if style == 2:
        return f"{hm} {half.upper()}"
    if style == 3:
        return f"{short} {half[0]}.m."
    if style == 4 and hour >= 13:
        return f"{hour}:{minute:02d}"
    if 5 <= hour < 12:
        return f"{short} in the morning"
    if 12 < hour < 17:
        return f"{short} in the afternoon"
    if 17 <= hour < 21:
        return f"{short} in the evening"
    return f"{hm} {half.upper()}"


_ALARM_PHRASES = (
    "Set an alarm for {t}",
    "set an alarm for {t}",
    "Create an alarm at {t}",
    "Wake me up at {t}",
    "Add an alarm for {t}",
    "Can you set an alarm for {t}?",
    "set my alarm for {t}",
    "Set alarm {t}",
)

_DRAWN_ALARM_PHRASES = (
    "Please set an alarm for {t}",
    "I need an alarm at {t}",
    "Alarm for {t}",
    "Set up an alarm at {t}",
    "Make an alarm for {t}",
    "wake me at {t}",
)
"""Wordings only drawn alarms use (phrase indices after ``_ALARM_PHRASES``'s)."""

_DEFAULT_ALARM_TIMES = {(7, 0), (8, 30), (9, 0), (22, 0)}


def _train_alarm_times() -> list[tuple[int, int]]:
    times = [(h, m) for h in range(24) for m in (0, 30)]
    times += [(h, m) for h in (5, 6, 8, 9, 10, 13, 14, 16, 17, 19, 20, 23) for m in (15, 45)]
    times += [(4, 50), (6, 10), (6, 20), (7, 5), (7, 25), (7, 35), (11, 55), (18, 40)]
    times += [(5, 52), (6, 12), (6, 48), (7, 17), (8, 3), (15, 27), (21, 11), (23, 59)]
    return [t for t in times if t not in _DEFAULT_ALARM_TIMES]


HELD_OUT_ALARM_TIMES: tuple[tuple[int, int], ...] = (
    (5, 5), (5, 40), (6, 25), (6, 55), (7, 10), (7, 50), (8, 20), (8, 55), (9, 10), (9, 40), (10, 20),
    (10, 50), (11, 5), (11, 40), (12, 15), (12, 50), (13, 20), (14, 40), (15, 10), (15, 35), (16, 20),
    (17, 10), (17, 50), (18, 25), (19, 5), (19, 40), (20, 10), (21, 50), (22, 40), (23, 25),
    (6, 37), (9, 13), (14, 22), (20, 44),
)  # fmt: skip
"""Alarm times of the ``test`` split only (hours and minutes each occur in train, never together)."""

_HELD_OUT_ALARM_PHRASE = 5
"""``Can you set an alarm for {t}?`` is a ``test`` wording."""


def _alarm_params() -> list[Params]:
    times = [*_train_alarm_times(), *HELD_OUT_ALARM_TIMES]
    return [
        {"hour": h, "minute": m, "label": "", "days": "", "phrase": i % len(_ALARM_PHRASES), "style": i % 7}
        for i, (h, m) in enumerate(times)
    ]


_LABELS = ("Gym", "Work", "Take medicine", "Meeting", "Pick up kids", "Yoga", "Call mom", "Laundry",
           "Dentist", "Walk the dog", "Study", "Lunch")  # fmt: skip

_LABEL_PHRASES = (
    "Set an alarm for {t} labeled {label}",
    "set an alarm at {t} called {label}",
    "Create an alarm for {t} with the label {label}",
    "Add a {label} alarm at {t}",
)


def _labelled_params() -> list[Params]:
    times = [(6, 15), (6, 45), (7, 30), (8, 0), (9, 15), (10, 30), (12, 0), (13, 30), (15, 0), (16, 45),
             (17, 30), (18, 0), (19, 15), (20, 30), (21, 45), (5, 30), (11, 0), (14, 15), (16, 0), (18, 45),
             (19, 0), (21, 0), (22, 30), (23, 15)]  # fmt: skip
    return [
        {
            "hour": h,
            "minute": m,
            "label": _LABELS[i % len(_LABELS)],
            "days": "",
            "phrase": i % 4,
            "style": i % 6,
        }
        for i, (h, m) in enumerate(times)
    ]


_DAY_WORDS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")

_DAY_PHRASES = ("Set an alarm for {t} every {day}", "set a repeating alarm at {t} on {day}s")


def _days_params() -> list[Params]:
    times = [(6, 0), (6, 30), (7, 15), (7, 45), (8, 15), (9, 30), (10, 0), (5, 45), (6, 5), (8, 40), (11, 30),
             (17, 0), (18, 30), (20, 0)]  # fmt: skip
    return [
        {"hour": h, "minute": m, "label": "", "days": str((i * 3 + 1) % 7), "phrase": i % 2, "style": i % 6}
        for i, (h, m) in enumerate(times)
    ]


def _alarm_goal(p: Params) -> str:
    t = _say_time(int(p["hour"]), int(p["minute"]), int(p["style"]))
    if p["label"]:
        return _LABEL_PHRASES[int(p["phrase"])].format(t=t, label=p["label"])
    if p["days"]:
        return _DAY_PHRASES[int(p["phrase"])].format(t=t, day=_DAY_WORDS[int(str(p["days"]))])
    return (*_ALARM_PHRASES, *_DRAWN_ALARM_PHRASES)[int(p["phrase"])].format(t=t)


def _alarm_draw(rng: random.Random) -> Params:
    """An alarm at any minute of the day but the ``test`` split's times and the fresh Clock's own, in
    any way of writing the time and any wording but the held-out one."""
    held = {*HELD_OUT_ALARM_TIMES, *_DEFAULT_ALARM_TIMES}
    while True:
        hour, minute = rng.randrange(24), rng.choice((rng.randrange(60), 5 * rng.randrange(12)))
        if (hour, minute) not in held:
            break
    return {
        "hour": hour,
        "minute": minute,
        "label": "",
        "days": "",
        "phrase": draw_phrase(rng, len(_ALARM_PHRASES) + len(_DRAWN_ALARM_PHRASES), {_HELD_OUT_ALARM_PHRASE}),
        "style": rng.randrange(6),
    }


def _alarm_check(p: Params, state: Json) -> bool:
    want_days = {int(d) for d in str(p["days"])}
    for alarm in _alarms(state):
        if int(alarm["hour"]) != p["hour"] or int(alarm["minute"]) != p["minute"] or not alarm["enabled"]:
            continue
        if p["label"] and norm(str(alarm.get("label", ""))) != norm(str(p["label"])):
            continue
        if want_days and {int(d) for d in alarm.get("days", [])} != want_days:
            continue
        return True
    return False


_HOUR_FIELD = "clock/edit/hour"

_LABEL_FIELD = "clock/edit/label"


def typed_time(p: Params, *, with_minutes: bool = False) -> str:
    """What the expert types into the alarm editor's hour field: the goal's time as the goal writes it
    (``6:30am``, ``6:30 AM``, ``6 p.m.``, ``18:30``), with "in the morning" as ``am`` and "in the
    afternoon" or "in the evening" as ``pm`` (the field takes a whole time, ``parse_time_text``).

    A time on the hour the goal writes without minutes (``6 p.m.``) keeps the picker's minutes; when
    they are not ``00`` (a stray tap moved them) ``with_minutes`` writes them out: ``6:00 p.m.``.
    """
    said = _say_time(int(p["hour"]), int(p["minute"]), int(p["style"]))
    for words, half in ((" in the morning", " am"), (" in the afternoon", " pm"), (" in the evening", " pm")):
        said = said.replace(words, half)
    if with_minutes:
        said = re.sub(r"^(\d+)(?![\d:])", rf"\g<1>:{int(p['minute']):02d}", said)
    return said


def _alarm_plan(p: Params, screen: Screen) -> Action:
    """New alarm; its repeat days (taps, before a keyboard covers them); the label typed; the time typed
    into the hour field (at the top, never under the keyboard; a tap selects it, which clears it); Save."""
    phone = screen.phone
    step = open_app(screen, CLOCK)
    if step is not None:
        return step
    frame = phone.top_frame
    if frame["screen"] != "edit" or int(frame["args"].get("alarm_id", -1)) >= 0:
        return clock_tab(screen, "alarm") or screen.tap_or_scroll("clock/add_alarm")
    fields = frame["fields"]
    want_days = {int(d) for d in str(p["days"])}
    days = {int(d) for d in frame["args"].get("days", [])}
    if days != want_days:
        return screen.tap_or_scroll(f"clock/edit/day/{min(days ^ want_days)}")
    label = str(p["label"])
    text = str(fields.get(_LABEL_FIELD, ""))
    if label and norm(text) != norm(label):
        if frame["focus"] != _LABEL_FIELD:
            return screen.tap_or_scroll(_LABEL_FIELD)
        if label.startswith(text):
            return ex.type_text(label[len(text) :])
        return screen.tap_or_scroll("keyboard/delete")
    if picked_time(phone.context(CLOCK)) != (int(p["hour"]), int(p["minute"])):
        minutes_shown = int(frame["args"]["minute"]) == int(p["minute"])
        time_text = typed_time(p, with_minutes=not minutes_shown)
        typed = str(fields.get(_HOUR_FIELD, ""))
        if frame["focus"] == _HOUR_FIELD and typed != time_text and time_text.startswith(typed):
            return ex.type_text(time_text[len(typed) :])
        return screen.tap_or_scroll(_HOUR_FIELD)
    return screen.tap_or_scroll("clock/edit/save")


_EXISTING = ((1, 7, 0, True), (2, 8, 30, False), (3, 9, 0, False), (4, 22, 0, True))
"""The alarms of a fresh Clock: id, hour, minute, enabled."""

_TOGGLE_PHRASES = {
    "off": ("Turn off the {t} alarm", "disable my {t} alarm", "Switch off the alarm at {t}"),
    "on": ("Turn on the {t} alarm", "enable my {t} alarm", "Switch on the alarm at {t}"),
}

_DRAWN_TOGGLE_PHRASES = {
    "off": ("Please turn the {t} alarm off", "I don't need the {t} alarm", "Deactivate my alarm for {t}",
            "Turn the alarm for {t} off", "Stop the {t} alarm from ringing", "disable the alarm set for {t}"),
    "on": ("Please turn the {t} alarm on", "I need the {t} alarm again", "Activate my alarm for {t}",
           "Turn the alarm for {t} on", "Make the {t} alarm ring again", "enable the alarm set for {t}"),
}  # fmt: skip
"""Wordings only drawn toggles use (phrase indices after ``_TOGGLE_PHRASES``')."""

_HELD_OUT_TOGGLE_PHRASE = 2
"""``Switch off the alarm at {t}`` (and ``on``) is a ``test`` wording."""

_DELETE_PHRASES = ("Delete the {t} alarm", "remove my alarm for {t}")


def _toggle_alarm_params() -> list[Params]:
    out: list[Params] = []
    for alarm_id, hour, minute, enabled in _EXISTING:
        want = "off" if enabled else "on"
        for i in range(3):
            out.append(
                {"id": alarm_id, "hour": hour, "minute": minute, "state": want, "phrase": i, "style": i}
            )
    return out


def _toggle_alarm_goal(p: Params) -> str:
    t = _say_time(int(p["hour"]), int(p["minute"]), int(p["style"]))
    state = str(p["state"])
    return (*_TOGGLE_PHRASES[state], *_DRAWN_TOGGLE_PHRASES[state])[int(p["phrase"])].format(t=t)


def _toggle_alarm_draw(rng: random.Random) -> Params:
    """One of the fresh Clock's alarms switched the other way, its time written any way, in any wording
    but the held-out one."""
    alarm_id, hour, minute, enabled = rng.choice(_EXISTING)
    count = len(_TOGGLE_PHRASES["on"]) + len(_DRAWN_TOGGLE_PHRASES["on"])
    phrase = draw_phrase(rng, count, {_HELD_OUT_TOGGLE_PHRASE})
    state = "off" if enabled else "on"
    return {
        "id": alarm_id,
        "hour": hour,
        "minute": minute,
        "state": state,
        "phrase": phrase,
        "style": rng.randrange(6),
    }


def _toggle_alarm_check(p: Params, state: Json) -> bool:
    for alarm in _alarms(state):
        if alarm["id"] == p["id"]:
            same_time = (int(alarm["hour"]), int(alarm["minute"])) == (p["hour"], p["minute"])
            return same_time and bool(alarm["enabled"]) == (p["state"] == "on")
    return False


def _toggle_alarm_plan(p: Params, screen: Screen) -> Action:
    return clock_tab(screen, "alarm") or screen.tap_or_scroll(f"clock/alarm/{p['id']}/toggle")


def _delete_alarm_params() -> list[Params]:
    return [
        {"id": alarm_id, "hour": hour, "minute": minute, "phrase": i, "style": i + alarm_id}
        for alarm_id, hour, minute, _ in _EXISTING
        for i in range(len(_DELETE_PHRASES))
    ]


def _delete_alarm_goal(p: Params) -> str:
    t = _say_time(int(p["hour"]), int(p["minute"]), int(p["style"]))
    return _DELETE_PHRASES[int(p["phrase"])].format(t=t)


def _delete_alarm_check(p: Params, state: Json) -> bool:
    ids = {int(alarm["id"]) for alarm in _alarms(state)}
    others = {alarm_id for alarm_id, *_ in _EXISTING} - {int(p["id"])}
    return int(p["id"]) not in ids and others <= ids


def _delete_alarm_plan(p: Params, screen: Screen) -> Action:
    return clock_tab(screen, "alarm") or screen.tap_or_scroll(f"clock/alarm/{p['id']}/delete")


TRAIN: tuple[Template, ...] = (
    template(
        "alarm",
        "train",
        _alarm_params,
        _alarm_goal,
        _alarm_check,
        _alarm_plan,
        held_out=held_out(("hour", "minute"), HELD_OUT_ALARM_TIMES, phrases=(_HELD_OUT_ALARM_PHRASE,)),
        draw=_alarm_draw,
    ),
    template(
        "alarm_toggle",
        "train",
        _toggle_alarm_params,
        _toggle_alarm_goal,
        _toggle_alarm_check,
        _toggle_alarm_plan,
        held_out=held_out(phrases=(_HELD_OUT_TOGGLE_PHRASE,)),
        draw=_toggle_alarm_draw,
    ),
    TIMER,
    STOPWATCH,
)
"""Clock templates of the ``train`` split, their held-out values and wordings the ``test`` split."""

UNSEEN: tuple[Template, ...] = (
    template("alarm_labelled", "unseen", _labelled_params, _alarm_goal, _alarm_check, _alarm_plan),
    template("alarm_days", "unseen", _days_params, _alarm_goal, _alarm_check, _alarm_plan),
    template(
        "alarm_delete",
        "unseen",
        _delete_alarm_params,
        _delete_alarm_goal,
        _delete_alarm_check,
        _delete_alarm_plan,
    ),
    WORLD_CLOCK,
)
"""Held-out Clock templates (the ``unseen`` split)."""
