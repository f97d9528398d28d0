"""The Clock's alarm editor: a time picker both a tapper and a typer can drive, a label, repeat days.

The picker is a grid of the 24 hours (AM and PM rows), a grid of minutes in fives with -1/+1 buttons,
AM/PM chips, and hour and minute fields that take typed digits: tapping a field selects it (typing
replaces the value), ENTER in the hour field moves on to the minutes, and the hour field also takes a
whole time (``6``, ``18``, ``630``, ``6:30 pm``). Save stores the alarm, switched on, and says when it
will ring; a time that is not one (``75`` minutes) is refused.

The editor is the Clock's ``edit`` screen: args ``alarm_id`` (-1 for a new alarm), ``hour12``, ``pm``,
``minute``, ``days``; typed text lives in the frame's fields ``clock/edit/hour``, ``clock/edit/minute``
and ``clock/edit/label``.
"""

from __future__ import annotations

import re
from functools import partial

from distrl.sim.app import Context, Json
from distrl.sim.apps.widgets import ACCENT_BG, BAR_H, ON_ACCENT, W
from distrl.sim.ui import Box, Element, Palette

__all__ = [
    "DAY_NAMES",
    "days_text",
    "edit_view",
    "format_time",
    "minutes_now",
    "open_editor",
    "parse_time_text",
    "picked_time",
    "set_for_text",
]

DAY_NAMES = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
"""Day names by index (0 is Sunday, as Android's Calendar counts from 1 = Sunday)."""


def format_time(hour: int, minute: int) -> str:
    """``6:05 PM`` for 18, 5."""
    return f"{(hour % 12) or 12}:{minute:02d} {'PM' if hour >= 12 else 'AM'}"


def days_text(days: list[int]) -> str:
    """How the alarm list writes repeat days."""
    chosen = sorted(set(days))
    if len(chosen) == 7:
        return "Every day"
    if chosen == [1, 2, 3, 4, 5]:
        return "Mon, Tue, Wed, Thu, Fri"
    if chosen == [0, 6]:
        return "Sat, Sun"
    return ", ".join(DAY_NAMES[d] for d in chosen)


_TIME = re.compile(r"^(\d{1,2})(?::?(\d{2}))?(am|pm|a|p)?$")


def parse_time_text(text: str) -> tuple[int, int | None, bool | None] | None:
    """Typed time: ``(hour, minute or None, pm or None)``; ``6``, ``18``, ``630``, ``6:30pm``, ``6 p.m.``.

    None when it is not a time (hour over 23, minute over 59, stray characters).
    """
    clean = text.lower().replace(" ", "").replace(".", "")
    match = _TIME.match(clean)
    if match is None:
        # "630" is 6:30; "1230" is 12:30
        if clean.isdigit() and len(clean) in (3, 4):
            match = _TIME.match(f"{clean[:-2]}:{clean[-2:]}")
        if match is None:
            return None
    hour = int(match.group(1))
    minute = None if match.group(2) is None else int(match.group(2))
    suffix = match.group(3)
    pm = None if suffix is None else suffix.startswith("p")
    if hour > 23 or (minute is not None and minute > 59) or (pm is not None and not 1 <= hour <= 12):
        return None
    return hour, minute, pm


def _alarm_by_id(ctx: Context, alarm_id: int) -> Json | None:
    for alarm in ctx.data.get("alarms", []):
        if int(alarm["id"]) == alarm_id:
            result: Json = alarm
            return result
    return None


def minutes_now(ctx: Context) -> int:
    now = ctx.phone.now
    return now.hour * 60 + now.minute


def set_for_text(ctx: Context, hour: int, minute: int) -> str:
    delta = (hour * 60 + minute - minutes_now(ctx)) % (24 * 60) or 24 * 60
    hours, minutes = divmod(delta, 60)
    parts = []
    if hours:
        parts.append(f"{hours} hour{'s' * (hours != 1)}")
    if minutes or not hours:
        parts.append(f"{minutes} minute{'s' * (minutes != 1)}")
    return f"Alarm set for {' and '.join(parts)} from now"


def open_editor(ctx: Context, alarm: Json | None) -> None:
    if alarm is None:
        ctx.push("edit", alarm_id=-1, hour12=12, pm=False, minute=0, days=[])
        return
    hour = int(alarm["hour"])
    ctx.push(
        "edit",
        alarm_id=int(alarm["id"]),
        hour12=(hour % 12) or 12,
        pm=hour >= 12,
        minute=int(alarm["minute"]),
        days=[int(d) for d in alarm.get("days", [])],
    )
    label = str(alarm.get("label", ""))
    if label:
        ctx.phone.top_frame["fields"]["clock/edit/label"] = label


_HOUR_FIELD = "clock/edit/hour"

_MINUTE_FIELD = "clock/edit/minute"

_LABEL_FIELD = "clock/edit/label"


def picked_time(ctx: Context) -> tuple[int, int] | None:
    """The picked time as (hour 0-23, minute), typed text first; None when typed text is not a time."""
    args = ctx.args
    h12, pm, minute = int(args["hour12"]), bool(args["pm"]), int(args["minute"])
    hour_text = ctx.field(_HOUR_FIELD).strip()
    if hour_text:
        parsed = parse_time_text(hour_text)
        if parsed is None:
            return None
        hour, typed_minute, typed_pm = parsed
        if typed_pm is not None:
            h12, pm = hour, typed_pm
        elif hour >= 13:
            h12, pm = hour - 12, True
        elif hour == 0:
            h12, pm = 12, False
        else:
            h12 = hour
        if typed_minute is not None:
            minute = typed_minute
    minute_text = ctx.field(_MINUTE_FIELD).strip()
    if minute_text:
        if not minute_text.isdigit() or len(minute_text) > 2 or int(minute_text) > 59:
            return None
        minute = int(minute_text)
    return (h12 % 12) + (12 if pm else 0), minute


def _commit(ctx: Context) -> None:
    """Fold typed text into the picked time (when it is a time) and clear the time fields."""
    picked = picked_time(ctx)
    if picked is not None:
        _store(ctx, *picked)
    ctx.set_field(_HOUR_FIELD, "")
    ctx.set_field(_MINUTE_FIELD, "")
    if ctx.focused in (_HOUR_FIELD, _MINUTE_FIELD):
        ctx.focus(None)


def _store(ctx: Context, hour: int, minute: int) -> None:
    ctx.args["hour12"] = (hour % 12) or 12
    ctx.args["pm"] = hour >= 12
    ctx.args["minute"] = minute


def _save(ctx: Context) -> None:
    picked = picked_time(ctx)
    if picked is None:
        ctx.toast("Enter a valid time")
        return
    hour, minute = picked
    label = " ".join(ctx.field(_LABEL_FIELD).split())
    days = sorted({int(d) for d in ctx.args.get("days", [])})
    data = ctx.data
    alarm_id = int(ctx.args.get("alarm_id", -1))
    alarm = _alarm_by_id(ctx, alarm_id) if alarm_id >= 0 else None
    if alarm is None:
        alarm_id = int(data.get("next_id", 1))
        data["next_id"] = alarm_id + 1
        alarm = {"id": alarm_id}
        data.setdefault("alarms", []).append(alarm)
    alarm.update({"hour": hour, "minute": minute, "label": label, "enabled": True, "days": days})
    ctx.focus(None)
    ctx.back()
    ctx.toast(set_for_text(ctx, hour, minute))


def _focus_time_field(ctx: Context, field_id: str) -> None:
    """Tapping a time field selects it (typing replaces the value), as the keyboard-mode picker does."""
    other = _MINUTE_FIELD if field_id == _HOUR_FIELD else _HOUR_FIELD
    if ctx.field(other):
        _commit(ctx)
    ctx.set_field(field_id, "")
    ctx.focus(field_id)


def _cancel(ctx: Context) -> None:
    ctx.focus(None)
    ctx.back()


def _submit_time_field(ctx: Context, field_id: str, _text: str = "") -> None:
    _commit(ctx)
    if field_id == _HOUR_FIELD:
        ctx.focus(_MINUTE_FIELD)


def edit_view(ctx: Context) -> list[Element]:
    args = ctx.args
    picked = picked_time(ctx)
    h12, pm, minute = int(args["hour12"]), bool(args["pm"]), int(args["minute"])
    hour24 = (h12 % 12) + (12 if pm else 0)
    if picked is not None:
        hour24, minute = picked
    new = int(args.get("alarm_id", -1)) < 0
    save = Element(
        id="clock/edit/save",
        box=Box(W - 104, 12, W - 16, 52),
        kind="button",
        colour=Palette.ON_PRIMARY,
        text="Save",
        size=16,
        bold=True,
        align="centre",
        fixed=True,
        on_tap=lambda: _save(ctx),
    )
    out = [
        Element(
            id="clock/edit/bar", box=Box(0, 0, W, BAR_H), kind="bar", fill=Palette.BACKGROUND, fixed=True
        ),
        Element(
            id="clock/edit/cancel",
            box=Box(6, 8, 54, 56),
            kind="icon",
            icon="close",
            fixed=True,
            on_tap=partial(_cancel, ctx),
        ),
        Element(
            id="clock/edit/title",
            box=Box(64, 0, W - 112, BAR_H),
            text="Add alarm" if new else "Edit alarm",
            size=22,
            fixed=True,
        ),
        save,
    ]
    # The time: hour and minute fields (tap to type), AM/PM chips.
    focus = ctx.focused
    invalid = picked is None
    for field_id, box, shown in (
        (_HOUR_FIELD, Box(64, 76, 152, 152), ctx.field(_HOUR_FIELD) or str((hour24 % 12) or 12)),
        (_MINUTE_FIELD, Box(176, 76, 264, 152), ctx.field(_MINUTE_FIELD) or f"{minute:02d}"),
    ):
        focused = focus == field_id
        out.append(
            Element(
                id=field_id,
                box=box,
                kind="field",
                text=shown if (ctx.field(field_id) or not focused) else "",
                size=40,
                align="centre",
                radius=12,
                fill=ACCENT_BG if focused else Palette.CARD,
                colour=Palette.ACCENT if invalid and ctx.field(field_id) else ON_ACCENT,
                hint="--",
                on_tap=partial(_focus_time_field, ctx, field_id),
                on_submit=partial(_submit_time_field, ctx, field_id),
            )
        )
    out.append(Element(id="clock/edit/colon", box=Box(152, 76, 176, 152), text=":", size=40, align="centre"))
    for name, label, y0 in (("am", "AM", 76.0), ("pm", "PM", 116.0)):
        chosen = (hour24 >= 12) == (name == "pm")

        def choose_half(name: str = name) -> None:
            _commit(ctx)
            args["pm"] = name == "pm"

        out.append(
            Element(
                id=f"clock/edit/{name}",
                box=Box(288, y0, 356, y0 + 36),
                kind="card",
                text=label,
                size=16,
                bold=chosen,
                align="centre",
                radius=10,
                fill=ACCENT_BG if chosen else Palette.CARD,
                colour=ON_ACCENT if chosen else Palette.MUTED,
                on_tap=choose_half,
            )
        )
    # The hour grid: AM and PM rows.
    out.append(
        Element(
            id="clock/edit/hour_header",
            box=Box(24, 164, 200, 186),
            text="Hour",
            size=14,
            bold=True,
            colour=Palette.PRIMARY,
        )
    )
    cell = (W - 64 - 20) / 6
    for row in range(4):
        y = 192 + row * 44
        if row % 2 == 0:
            out.append(
                Element(
                    id=f"clock/edit/half{row // 2}",
                    box=Box(16, y, 60, y + 40),
                    text="AM" if row < 2 else "PM",
                    size=13,
                    colour=Palette.MUTED,
                )
            )
        for col in range(6):
            hour = (row // 2) * 12 + (row % 2) * 6 + col
            x = 60 + col * cell
            chosen = hour == hour24

            def pick_hour(hour: int = hour) -> None:
                _commit(ctx)
                _store(ctx, hour, int(args["minute"]))

            out.append(
                Element(
                    id=f"clock/edit/hour/{hour}",
                    box=Box(x + 2, y, x + cell - 2, y + 40),
                    kind="key",
                    text=str((hour % 12) or 12),
                    size=16,
                    align="centre",
                    radius=20,
                    fill=Palette.PRIMARY if chosen else Palette.CARD,
                    colour=Palette.ON_PRIMARY if chosen else Palette.TEXT,
                    on_tap=pick_hour,
                )
            )
    # The minute grid (fives) with -1/+1 buttons.
    out.append(
        Element(
            id="clock/edit/minute_header",
            box=Box(24, 374, 200, 396),
            text="Minute",
            size=14,
            bold=True,
            colour=Palette.PRIMARY,
        )
    )
    for name, step, x0 in (("minus", -1, W - 136.0), ("plus", 1, W - 76.0)):

        def nudge(step: int = step) -> None:
            _commit(ctx)
            args["minute"] = (int(args["minute"]) + step) % 60

        out.append(
            Element(
                id=f"clock/edit/{name}",
                box=Box(x0, 366, x0 + 56, 402),
                kind="key",
                text="-1" if step < 0 else "+1",
                size=15,
                align="centre",
                radius=18,
                fill=Palette.CARD,
                on_tap=nudge,
            )
        )
    cell = (W - 32) / 6
    for i in range(12):
        value = i * 5
        x = 16 + (i % 6) * cell
        y = 410 + (i // 6) * 44
        chosen = value == minute

        def pick_minute(value: int = value) -> None:
            _commit(ctx)
            args["minute"] = value

        out.append(
            Element(
                id=f"clock/edit/minute/{value}",
                box=Box(x + 2, y, x + cell - 2, y + 40),
                kind="key",
                text=f"{value:02d}",
                size=16,
                align="centre",
                radius=20,
                fill=Palette.PRIMARY if chosen else Palette.CARD,
                colour=Palette.ON_PRIMARY if chosen else Palette.TEXT,
                on_tap=pick_minute,
            )
        )
    # Label and repeat days.
    out.append(
        Element(
            id=_LABEL_FIELD,
            box=Box(16, 510, W - 16, 558),
            kind="field",
            text=ctx.field(_LABEL_FIELD),
            hint="Add label",
            on_tap=lambda: _focus_label(ctx),
            on_submit=lambda _text: None,
        )
    )
    out.append(
        Element(
            id="clock/edit/repeat_header",
            box=Box(24, 566, 200, 588),
            text="Repeat",
            size=14,
            bold=True,
            colour=Palette.PRIMARY,
        )
    )
    days = {int(d) for d in args.get("days", [])}
    for day in range(7):
        x = 16 + day * ((W - 32) / 7)
        chosen = day in days

        def toggle_day(day: int = day) -> None:
            current = {int(d) for d in args.get("days", [])}
            args["days"] = sorted(current ^ {day})

        out.append(
            Element(
                id=f"clock/edit/day/{day}",
                box=Box(x + 4, 594, x + 48, 638),
                kind="key",
                text=DAY_NAMES[day][0],
                size=16,
                bold=chosen,
                align="centre",
                radius=22,
                fill=Palette.PRIMARY if chosen else Palette.CARD,
                colour=Palette.ON_PRIMARY if chosen else Palette.TEXT,
                on_tap=toggle_day,
            )
        )
    return out


def _focus_label(ctx: Context) -> None:
    _commit(ctx)
    ctx.focus(_LABEL_FIELD)
