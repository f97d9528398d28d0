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
typer can drive), ``cities`` (the cities a world clock can show). The timer and stopwatch tabs, and what
every tab shares, are ``clock_tabs``.
"""

from __future__ import annotations

from datetime import timedelta

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
from distrl.sim.apps.clock_tabs import (
    TAB_H,
    centre_fab,
    press_timer_key,
    stopwatch_elapsed,
    stopwatch_view,
    timer_digits,
    timer_remaining,
    timer_seconds,
    timer_view,
    title,
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
                press_timer_key(ctx, ch)

    def view(self, ctx: Context) -> list[Element]:
        if ctx.screen == "edit":
            return edit_view(ctx)
        if ctx.screen == "cities":
            return _cities(ctx)
        tab = str(ctx.args.get("tab", "alarm"))
        body = {"alarm": _alarms, "clock": _world, "timer": timer_view, "stopwatch": stopwatch_view}.get(
            tab, _alarms
        )
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


def _alarms(ctx: Context) -> list[Element]:
    out = title(ctx, "Alarm")
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
    out.append(centre_fab(ctx, "clock/add_alarm", lambda: open_editor(ctx, None)))
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
    out = title(ctx, "Clock")
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
    out.append(centre_fab(ctx, "clock/add_city", lambda: ctx.push("cities"), icon="plus"))
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
