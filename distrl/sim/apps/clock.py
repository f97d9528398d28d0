"""Clock (``com.google.android.deskclock``): alarms, the time here and elsewhere, a timer, a stopwatch.

Data (``state["apps"]["com.google.android.deskclock"]``):

- ``alarms``: ``[{"id", "hour" (0-23), "minute", "label", "enabled", "days" (0 Sunday ... 6 Saturday)}]``;
  a fresh install has four (7:00 AM "Wake up" on weekdays, on; 8:30 AM weekdays, off; 9:00 AM at
  weekends, off; 10:00 PM "Medicine" every day, on), as a lived-in phone would;
- ``cities``: the world clocks; ``timer``: ``{"duration_s", "running", "end_at", "remaining_s"}`` or None;
  ``stopwatch``: ``{"running", "started_at", "elapsed_s"}``.

Screens: ``main`` (arg ``tab``: ``alarm``, ``clock``, ``timer`` or ``stopwatch``; ``digits`` entered on
the timer keypad, by taps on its keys or typed: ``input text 1500`` is 15 minutes, as a keyboard's digit
keys are on a Pixel), ``edit`` (the alarm editor, ``alarm_editor``: a time picker both a tapper and a
typer can drive), ``cities`` (the cities a world clock can show).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import partial

from distrl.sim.app import BaseApp, Context, Json
from distrl.sim.apps.alarm_editor import (
    DAY_NAMES,
    days_text,
    edit_view,
    format_time,
    minutes_now,
    open_editor,
    parse_time_text,
    picked_time,
    set_for_text,
)
from distrl.sim.apps.widgets import ACCENT_BG, BAR_H, ON_ACCENT, W, app_bar, launch_nuisance, list_row, spacer
from distrl.sim.ui import Box, Element, Palette, text_width_dp

__all__ = [
    "CITIES",
    "DAY_NAMES",
    "Clock",
    "days_text",
    "format_time",
    "parse_time_text",
    "picked_time",
    "stopwatch_elapsed",
    "timer_digits",
    "timer_remaining",
    "timer_seconds",
]

TAB_H = 72.0

TABS = (("alarm", "Alarm"), ("clock", "Clock"), ("timer", "Timer"), ("stopwatch", "Stopwatch"))

CITIES: tuple[tuple[str, float], ...] = (
    ("Amsterdam", 2),
    ("Beijing", 8),
    ("Berlin", 2),
    ("Cairo", 3),
    ("Chicago", -5),
    ("Dubai", 4),
    ("Hong Kong", 8),
    ("London", 1),
    ("Los Angeles", -7),
    ("Mexico City", -6),
    ("Moscow", 3),
    ("Mumbai", 5.5),
    ("New York", -4),
    ("Paris", 2),
    ("Rome", 2),
    ("Sao Paulo", -3),
    ("Seoul", 9),
    ("Singapore", 8),
    ("Sydney", 11),
    ("Tokyo", 9),
    ("Toronto", -4),
)
"""World-clock cities and their UTC offsets in hours on the phone's frozen date (15 October 2023)."""


def _default_alarms() -> list[Json]:
    weekdays = [1, 2, 3, 4, 5]
    return [
        {"id": 1, "hour": 7, "minute": 0, "label": "Wake up", "enabled": True, "days": weekdays},
        {"id": 2, "hour": 8, "minute": 30, "label": "", "enabled": False, "days": weekdays},
        {"id": 3, "hour": 9, "minute": 0, "label": "", "enabled": False, "days": [0, 6]},
        {
            "id": 4,
            "hour": 22,
            "minute": 0,
            "label": "Medicine",
            "enabled": True,
            "days": [0, 1, 2, 3, 4, 5, 6],
        },
    ]


class Clock(BaseApp):
    """The Clock app (see the module docstring)."""

    package = "com.google.android.deskclock"
    activity = "com.android.deskclock.DeskClock"
    label = "Clock"
    icon = "Cl"
    colour = (26, 115, 232)

    def defaults(self) -> Json:
        return {
            "alarms": _default_alarms(),
            "next_id": 5,
            "cities": ["London", "New York"],
            "timer": None,
            "stopwatch": {"running": False, "started_at": 0.0, "elapsed_s": 0.0},
        }

    def on_launch(self, ctx: Context) -> None:
        launch_nuisance(
            ctx,
            (
                "clock_notifications",
                "Allow Clock notifications?",
                "Allow Clock to send you notifications? Alarms and timers use them to alert you.",
                ("Don't allow", "Allow"),
            ),
            p_dialog=0.2,
        )

    def on_text(self, ctx: Context, text: str) -> None:
        """Typed digits press the timer keypad's keys while it shows; other screens drop typed text."""
        if ctx.screen != "main" or ctx.args.get("tab") != "timer" or ctx.data.get("timer"):
            return
        for ch in text:
            if ch.isdigit():
                _press_timer_key(ctx, ch)

    def view(self, ctx: Context) -> list[Element]:
        if ctx.screen == "edit":
            return edit_view(ctx)
        if ctx.screen == "cities":
            return _cities(ctx)
        tab = str(ctx.args.get("tab", "alarm"))
        body = {"alarm": _alarms, "clock": _world, "timer": _timer, "stopwatch": _stopwatch}.get(tab, _alarms)
        return body(ctx) + _tabs(ctx, tab)


def _tabs(ctx: Context, current: str) -> list[Element]:
    top = ctx.viewport_height - TAB_H
    out = [
        Element(
            id="clock/tabs", box=Box(0, top, W, ctx.viewport_height), kind="bar", fill=Palette.BAR, fixed=True
        )
    ]
    width = W / len(TABS)
    for i, (name, label) in enumerate(TABS):
        box = Box(i * width, top, (i + 1) * width, ctx.viewport_height)
        chosen = name == current
        cx = box.centre[0]
        out.append(
            Element(
                id=f"clock/tab/{name}/icon",
                box=Box(cx - 30, top + 10, cx + 30, top + 38),
                kind="icon",
                icon=label[0],
                fill=ACCENT_BG if chosen else Palette.BAR,
                colour=ON_ACCENT if chosen else Palette.MUTED,
                radius=14,
                fixed=True,
            )
        )
        out.append(
            Element(
                id=f"clock/tab/{name}/label",
                box=Box(box.x0, top + 40, box.x1, top + 64),
                text=label,
                size=13,
                bold=chosen,
                align="centre",
                fixed=True,
            )
        )

        def choose(name: str = name) -> None:
            ctx.frame["args"]["tab"] = name
            ctx.frame["scroll"] = 0.0

        out.append(Element(id=f"clock/tab/{name}", box=box, text="", fixed=True, on_tap=choose))
    return out


def _centre_fab(
    ctx: Context, fab_id: str, on_tap: Callable[[], None], *, icon: str = "plus", text: str = ""
) -> Element:
    y1 = ctx.viewport_height - TAB_H - 20
    if text:
        return Element(
            id=fab_id,
            box=Box(W / 2 - 64, y1 - 64, W / 2 + 64, y1),
            kind="button",
            text=text,
            size=18,
            bold=True,
            align="centre",
            fill=ACCENT_BG,
            colour=ON_ACCENT,
            radius=24,
            fixed=True,
            on_tap=on_tap,
        )
    return Element(
        id=fab_id,
        box=Box(W / 2 - 40, y1 - 72, W / 2 + 40, y1),
        kind="icon",
        icon=icon,
        fill=ACCENT_BG,
        colour=ON_ACCENT,
        radius=24,
        fixed=True,
        on_tap=on_tap,
    )


def _title(ctx: Context, text: str) -> list[Element]:
    return app_bar(ctx, "clock", text, back=False, size=26)


def _alarms(ctx: Context) -> list[Element]:
    out = _title(ctx, "Alarm")
    alarms = sorted(
        ctx.data.get("alarms", []), key=lambda a: (int(a["hour"]), int(a["minute"]), int(a["id"]))
    )
    y = BAR_H + 4
    if not alarms:
        out.append(
            Element(
                id="clock/alarms/empty",
                box=Box(24, 200, W - 24, 240),
                text="No alarms",
                colour=Palette.MUTED,
                align="centre",
                size=17,
            )
        )
    for alarm in alarms:
        out.extend(_alarm_card(ctx, alarm, y))
        y += 136
    out.append(_centre_fab(ctx, "clock/add_alarm", lambda: open_editor(ctx, None)))
    out.append(spacer("clock", y + TAB_H + 110))
    return out


def _alarm_card(ctx: Context, alarm: Json, y: float) -> list[Element]:
    alarm_id = int(alarm["id"])
    hour, minute = int(alarm["hour"]), int(alarm["minute"])
    enabled = bool(alarm["enabled"])
    prefix = f"clock/alarm/{alarm_id}"
    colour = Palette.TEXT if enabled else Palette.MUTED
    clock_text = f"{(hour % 12) or 12}:{minute:02d}"
    clock_w = text_width_dp(clock_text, 44)
    label = str(alarm.get("label", ""))
    days: list[int] = [int(d) for d in alarm.get("days", [])]
    if days:
        when = days_text(days)
    elif not enabled:
        when = "Not scheduled"
    else:
        when = "Today" if hour * 60 + minute > minutes_now(ctx) else "Tomorrow"

    def toggle() -> None:
        alarm["enabled"] = not bool(alarm["enabled"])
        if alarm["enabled"]:
            ctx.toast(set_for_text(ctx, hour, minute))

    def delete() -> None:
        ctx.data["alarms"] = [a for a in ctx.data["alarms"] if int(a["id"]) != alarm_id]
        ctx.toast("Alarm deleted")

    out = [
        Element(id=f"{prefix}/card", box=Box(12, y, W - 12, y + 124), kind="card", radius=24),
        Element(
            id=f"{prefix}/time",
            box=Box(28, y + 30, W - 120, y + 86),
            text=clock_text,
            size=44,
            colour=colour,
            on_tap=lambda: open_editor(ctx, alarm),
        ),
        Element(
            id=f"{prefix}/ampm",
            box=Box(34 + clock_w, y + 48, 34 + clock_w + 40, y + 80),
            text="PM" if hour >= 12 else "AM",
            size=20,
            colour=colour,
        ),
        Element(
            id=f"{prefix}/toggle",
            box=Box(W - 112, y + 28, W - 20, y + 88),
            kind="toggle",
            checked=enabled,
            on_tap=toggle,
        ),
        Element(
            id=f"{prefix}/days",
            box=Box(28, y + 90, W - 140, y + 116),
            text=when,
            size=14,
            colour=Palette.MUTED,
        ),
        Element(
            id=f"{prefix}/delete",
            box=Box(W - 124, y + 86, W - 24, y + 118),
            kind="button",
            text="Delete",
            fill=Palette.CARD,
            colour=Palette.PRIMARY,
            size=14,
            align="centre",
            on_tap=delete,
        ),
    ]
    if label:
        out.insert(
            1,
            Element(
                id=f"{prefix}/label",
                box=Box(28, y + 10, W - 120, y + 32),
                text=label,
                size=14,
                colour=Palette.MUTED,
            ),
        )
    return out


def _world(ctx: Context) -> list[Element]:
    out = _title(ctx, "Clock")
    now = ctx.phone.now
    big = f"{(now.hour % 12) or 12}:{now.minute:02d}"
    width = text_width_dp(big, 64)
    x0 = (W - width - 50) / 2
    out.append(Element(id="clock/now", box=Box(x0, 90, x0 + width + 4, 170), text=big, size=64))
    out.append(
        Element(
            id="clock/now_ampm",
            box=Box(x0 + width + 10, 120, x0 + width + 60, 160),
            text="PM" if now.hour >= 12 else "AM",
            size=24,
        )
    )
    out.append(
        Element(
            id="clock/date",
            box=Box(24, 172, W - 24, 200),
            text=now.strftime("%a, %b %-d"),
            size=17,
            colour=Palette.MUTED,
            align="centre",
        )
    )
    y = 220.0
    for city in ctx.data.get("cities", []):
        offset = dict(CITIES).get(str(city), 0.0)
        there = now + timedelta(hours=offset)
        day = (
            "Today"
            if there.date() == now.date()
            else ("Tomorrow" if there.date() > now.date() else "Yesterday")
        )
        diff = f"{abs(offset):g} hr {'ahead' if offset > 0 else 'behind'}" if offset else "Same time"
        rows, y = list_row(
            f"clock/city/{_slug(str(city))}",
            y,
            str(city),
            f"{day}, {diff}",
            on_tap=None,
            trailing=format_time(there.hour, there.minute),
        )
        out.extend(rows)
    out.append(_centre_fab(ctx, "clock/add_city", lambda: ctx.push("cities"), icon="plus"))
    out.append(spacer("clock", y + TAB_H + 110))
    return out


def _cities(ctx: Context) -> list[Element]:
    out = app_bar(ctx, "clock", "Add city")
    chosen = {str(c) for c in ctx.data.get("cities", [])}
    now = ctx.phone.now
    y = BAR_H
    for city, offset in CITIES:
        there = now + timedelta(hours=offset)

        def add(city: str = city) -> None:
            cities = ctx.data.setdefault("cities", [])
            if city not in cities:
                cities.append(city)
            ctx.back()

        rows, y = list_row(
            f"clock/cities/{_slug(city)}",
            y,
            city,
            "Added" if city in chosen else "",
            on_tap=add,
            trailing=format_time(there.hour, there.minute),
        )
        out.extend(rows)
    out.append(spacer("clock", y + 16))
    return out


def _slug(text: str) -> str:
    return text.lower().replace(" ", "_")


def timer_seconds(digits: str) -> int:
    """The length of a timer entered as keypad ``digits`` (``hhmmss`` from the right: ``130`` is 1:30)."""
    padded = digits.rjust(6, "0")[-6:]
    return int(padded[:2]) * 3600 + int(padded[2:4]) * 60 + int(padded[4:])


def timer_digits(minutes: int) -> str:
    """The keypad digits for a timer of ``minutes`` (``500`` for 5 minutes, ``13000`` for 90)."""
    hours, rest = divmod(minutes, 60)
    return f"{hours}{rest:02d}00" if hours else f"{rest}00"


def timer_remaining(ctx: Context) -> float:
    """Seconds left on the timer (0 when there is none or it rang)."""
    timer = ctx.data.get("timer")
    if not timer:
        return 0.0
    if timer.get("running"):
        return max(0.0, float(timer["end_at"]) - ctx.now)
    return max(0.0, float(timer.get("remaining_s", 0.0)))


def _timer(ctx: Context) -> list[Element]:
    out = _title(ctx, "Timer")
    timer = ctx.data.get("timer")
    if timer:
        return out + _timer_running(ctx, timer)
    digits = str(ctx.args.get("digits", ""))
    padded = digits.rjust(6, "0")
    colour = Palette.PRIMARY if digits else Palette.MUTED
    display = f"{padded[:2]}h {padded[2:4]}m {padded[4:]}s"
    out.append(
        Element(
            id="clock/timer/display",
            box=Box(16, 84, W - 16, 160),
            text=display,
            size=48,
            colour=colour,
            align="centre",
        )
    )
    keys = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "00", "0", "DEL")
    key_w, key_h = 96.0, 64.0
    x0 = (W - 3 * key_w - 2 * 20) / 2
    for i, key in enumerate(keys):
        row, col = divmod(i, 3)
        x = x0 + col * (key_w + 20)
        y = 180 + row * (key_h + 12)
        name = "del" if key == "DEL" else key
        out.append(
            Element(
                id=f"clock/timer/key/{name}",
                box=Box(x, y, x + key_w, y + key_h),
                kind="key",
                text=key,
                size=26 if key != "DEL" else 18,
                align="centre",
                radius=32,
                fill=Palette.CARD,
                on_tap=partial(_press_timer_key, ctx, key),
            )
        )
    if digits:
        out.append(_centre_fab(ctx, "clock/timer/start", lambda: _start_timer(ctx), text="Start"))
    return out


def _press_timer_key(ctx: Context, key: str) -> None:
    """A timer keypad key: a digit (or ``00``) goes on the right, six at most, no leading zeros."""
    current = str(ctx.args.get("digits", ""))
    if key == "DEL":
        current = current[:-1]
    elif current or key.strip("0"):
        current = (current + key)[:6]
    ctx.frame["args"]["digits"] = current


def _start_timer(ctx: Context) -> None:
    seconds = timer_seconds(str(ctx.args.get("digits", "")))
    if seconds <= 0:
        return
    ctx.data["timer"] = {
        "duration_s": seconds,
        "running": True,
        "end_at": ctx.now + seconds,
        "remaining_s": float(seconds),
    }
    ctx.frame["args"]["digits"] = ""


def _timer_running(ctx: Context, timer: Json) -> list[Element]:
    remaining = timer_remaining(ctx)
    duration = int(timer["duration_s"])
    whole = int(remaining + 0.999)
    hours, rest = divmod(whole, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
    if remaining <= 0:
        text = "Time's up"
    label = f"{duration // 60} min timer" if duration % 60 == 0 else f"{duration} s timer"
    out = [
        Element(
            id="clock/timer/label",
            box=Box(24, 90, W - 24, 120),
            text=label,
            size=17,
            colour=Palette.MUTED,
            align="centre",
        ),
        Element(
            id="clock/timer/remaining", box=Box(24, 140, W - 24, 240), text=text, size=64, align="centre"
        ),
        Element(
            id="clock/timer/progress",
            box=Box(48, 260, W - 48, 276),
            kind="progress",
            value=remaining / duration if duration else 0.0,
        ),
    ]
    running = bool(timer.get("running")) and remaining > 0

    def pause_resume() -> None:
        if timer.get("running"):
            timer["remaining_s"] = timer_remaining(ctx)
            timer["running"] = False
        else:
            timer["running"] = True
            timer["end_at"] = ctx.now + float(timer.get("remaining_s", 0.0))

    def delete() -> None:
        ctx.data["timer"] = None

    def add_minute() -> None:
        timer["duration_s"] = int(timer["duration_s"]) + 60
        if timer.get("running"):
            timer["end_at"] = float(timer["end_at"]) + 60
        else:
            timer["remaining_s"] = float(timer.get("remaining_s", 0.0)) + 60

    buttons = (
        ("delete", "Delete", delete),
        ("pause", "Pause" if running else "Resume", pause_resume),
        ("add_minute", "+1:00", add_minute),
    )
    for i, (name, text_, action) in enumerate(buttons):
        x = 24 + i * ((W - 48) / 3)
        out.append(
            Element(
                id=f"clock/timer/{name}",
                box=Box(x + 6, 320, x + (W - 48) / 3 - 6, 372),
                kind="button",
                text=text_,
                size=16,
                align="centre",
                fill=Palette.PRIMARY if name == "pause" else Palette.CARD,
                colour=Palette.ON_PRIMARY if name == "pause" else Palette.TEXT,
                on_tap=action,
            )
        )
    return out


def stopwatch_elapsed(ctx: Context) -> float:
    watch = ctx.data.get("stopwatch") or {}
    elapsed = float(watch.get("elapsed_s", 0.0))
    if watch.get("running"):
        elapsed += ctx.now - float(watch.get("started_at", ctx.now))
    return elapsed


def _stopwatch(ctx: Context) -> list[Element]:
    out = _title(ctx, "Stopwatch")
    watch: Json = ctx.data.setdefault("stopwatch", {"running": False, "started_at": 0.0, "elapsed_s": 0.0})
    elapsed = stopwatch_elapsed(ctx)
    minutes, seconds = divmod(elapsed, 60)
    out.append(
        Element(
            id="clock/stopwatch/time",
            box=Box(16, 160, W - 16, 260),
            text=f"{int(minutes):02d}:{seconds:05.2f}",
            size=64,
            align="centre",
        )
    )
    running = bool(watch.get("running"))

    def start_pause() -> None:
        if watch.get("running"):
            watch["elapsed_s"] = stopwatch_elapsed(ctx)
            watch["running"] = False
        else:
            watch["started_at"] = ctx.now
            watch["running"] = True

    def reset() -> None:
        watch.update({"running": False, "started_at": 0.0, "elapsed_s": 0.0})

    out.append(_centre_fab(ctx, "clock/stopwatch/start", start_pause, text="Pause" if running else "Start"))
    if elapsed > 0 and not running:
        y1 = ctx.viewport_height - TAB_H - 20
        out.append(
            Element(
                id="clock/stopwatch/reset",
                box=Box(40, y1 - 64, 136, y1 - 8),
                kind="button",
                text="Reset",
                fill=Palette.CARD,
                colour=Palette.TEXT,
                size=16,
                align="centre",
                fixed=True,
                on_tap=reset,
            )
        )
    return out
