"""General tasks done in the Clock's other tabs: timers, the stopwatch and world clocks (``clock_tasks``
holds the alarms, and lists these templates in its ``TRAIN`` and ``UNSEEN``).

``TIMER`` holds out, for the ``test`` split, timers of 6, 9, 18, 25, 35, 50, 75 and 90 minutes;
``STOPWATCH`` the wording "Open the clock and start the stopwatch"; ``WORLD_CLOCK`` is an ``unseen``
template. Success is read from the Clock's data (``state["apps"]["com.google.android.deskclock"]``).
"""

from __future__ import annotations

import random

from distrl.records import Action
from distrl.sim.app import Json
from distrl.sim.apps.clock import timer_seconds
from distrl.sim.suites import Params, held_out
from distrl.sim.suites import expert as ex
from distrl.sim.suites.system_expert import CLOCK, Screen, clock_tab, draw_phrase, phrased, template

__all__ = ["STOPWATCH", "TIMER", "WORLD_CLOCK", "typed_timer"]


_TIMER_PHRASES = ("Set a timer for {n}", "start a {n} timer", "Set a {n} timer")


_HELD_OUT_TIMERS = (6, 9, 18, 35, 50, 75)
"""Timer lengths (minutes) of the ``test`` split only, with 25 and 90."""


def _timer_params() -> list[Params]:
    minutes_each = (1, 2, 3, 4, 5, 7, 8, 10, 12, 15, 20, 25, 30, 40, 45, 60, 90, 120, *_HELD_OUT_TIMERS)
    return [{"minutes": minutes, "phrase": i % 3} for i, minutes in enumerate(minutes_each)]


def _timer_draw(rng: random.Random) -> Params:
    """A timer of 1 to 99 minutes or of 1 to 4 hours, never a ``test`` length."""
    held = {25, 90, *_HELD_OUT_TIMERS}
    while True:
        minutes = rng.choice((rng.randint(1, 99), 60 * rng.randint(1, 4)))
        if minutes not in held:
            return {"minutes": minutes, "phrase": rng.randrange(len(_TIMER_PHRASES))}


def _timer_goal(p: Params) -> str:
    minutes = int(p["minutes"])
    if minutes % 60 == 0:
        hours = minutes // 60
        n = f"{hours} hour" if int(p["phrase"]) else f"{hours} hour{'s' * (hours > 1)}"
    else:
        n = f"{minutes} minute" if int(p["phrase"]) else f"{minutes} minute{'s' * (minutes > 1)}"
    return _TIMER_PHRASES[int(p["phrase"])].format(n=n)


def _timer_check(p: Params, state: Json) -> bool:
    timer = state["apps"].get(CLOCK, {}).get("timer")
    return bool(timer) and bool(timer["running"]) and int(timer["duration_s"]) == int(p["minutes"]) * 60


def typed_timer(p: Params) -> str:
    """What the expert types on the timer keypad: the goal's number, then ``00`` per unit below it
    (``1500`` for 15 minutes, ``9000`` for 90 minutes, ``20000`` for 2 hours; the keypad reads ``hhmmss``
    from the right and takes 90 minutes as ``00h 90m 00s``)."""
    minutes = int(p["minutes"])
    if minutes % 60 == 0:
        return f"{minutes // 60}0000"
    return f"{minutes}00"


def _timer_plan(p: Params, screen: Screen) -> Action:
    """Timer tab; the length typed (typed digits press the keypad's keys); Start."""
    step = clock_tab(screen, "timer")
    if step is not None:
        return step
    phone = screen.phone
    timer = phone.data["apps"][CLOCK].get("timer")
    if timer:
        if int(timer["duration_s"]) == int(p["minutes"]) * 60 and not timer["running"]:
            return screen.tap_or_scroll("clock/timer/pause")
        return screen.tap_or_scroll("clock/timer/delete")
    digits = str(phone.top_frame["args"].get("digits", ""))
    if digits and timer_seconds(digits) == int(p["minutes"]) * 60:
        return screen.tap_or_scroll("clock/timer/start")
    text = typed_timer(p)
    if not text.startswith(digits):
        return screen.tap_or_scroll("clock/timer/key/del")
    return ex.type_text(text[len(digits) :])


_STOPWATCH_GOALS = ("Start the stopwatch", "start a stopwatch", "Open the clock and start the stopwatch")

_DRAWN_STOPWATCH_GOALS = ("Please start the stopwatch", "Start timing with the stopwatch",
                          "Use the Clock's stopwatch to time me", "I want to time something with a stopwatch",
                          "Go to the stopwatch and press start", "Begin the stopwatch",
                          "In the Clock app, start the stopwatch", "stopwatch on, please")  # fmt: skip
"""Wordings only drawn stopwatch tasks use (phrase indices after ``_STOPWATCH_GOALS``')."""

_HELD_OUT_STOPWATCH_PHRASE = 2
"""``Open the clock and start the stopwatch`` is a ``test`` wording."""


def _stopwatch_draw(rng: random.Random) -> Params:
    """Any wording of starting the stopwatch but the held-out one."""
    count = len(_STOPWATCH_GOALS) + len(_DRAWN_STOPWATCH_GOALS)
    return {"phrase": draw_phrase(rng, count, {_HELD_OUT_STOPWATCH_PHRASE})}


def _stopwatch_check(p: Params, state: Json) -> bool:
    return bool(state["apps"].get(CLOCK, {}).get("stopwatch", {}).get("running"))


def _stopwatch_plan(p: Params, screen: Screen) -> Action:
    return clock_tab(screen, "stopwatch") or screen.tap_or_scroll("clock/stopwatch/start")


_WORLD_CITIES = ("Tokyo", "Paris", "Sydney", "Dubai", "Mumbai", "Berlin", "Singapore", "Los Angeles",
                 "Toronto", "Sao Paulo", "Seoul", "Moscow")  # fmt: skip

_WORLD_PHRASES = (
    "Add {city} to the world clock",
    "add a clock for {city}",
    "Show the time in {city} in the Clock app",
)


def _world_goal(p: Params) -> str:
    return _WORLD_PHRASES[int(p["phrase"])].format(city=p["city"])


def _world_check(p: Params, state: Json) -> bool:
    return p["city"] in state["apps"].get(CLOCK, {}).get("cities", [])


def _world_plan(p: Params, screen: Screen) -> Action:
    phone = screen.phone
    if phone.top_package == CLOCK and phone.top_frame["screen"] == "cities":
        return screen.tap_or_scroll(f"clock/cities/{str(p['city']).lower().replace(' ', '_')}")
    return clock_tab(screen, "clock") or screen.tap_or_scroll("clock/add_city")


TIMER = template(
    "timer",
    "train",
    _timer_params,
    _timer_goal,
    _timer_check,
    _timer_plan,
    held_out=held_out("minutes", (25, 90, *_HELD_OUT_TIMERS)),
    draw=_timer_draw,
)
"""Set a timer of so many minutes or hours (typed on the keypad), and start it."""

STOPWATCH = template(
    "stopwatch",
    "train",
    lambda: [{"phrase": i} for i in range(len(_STOPWATCH_GOALS))],
    phrased((*_STOPWATCH_GOALS, *_DRAWN_STOPWATCH_GOALS)),
    _stopwatch_check,
    _stopwatch_plan,
    held_out=held_out(phrases=(_HELD_OUT_STOPWATCH_PHRASE,)),
    draw=_stopwatch_draw,
)
"""Start the stopwatch."""

WORLD_CLOCK = template(
    "world_clock",
    "unseen",
    lambda: [{"city": city, "phrase": i % 3} for i, city in enumerate(_WORLD_CITIES)],
    _world_goal,
    _world_check,
    _world_plan,
)
"""Add a city to the world clock (the ``unseen`` split)."""
