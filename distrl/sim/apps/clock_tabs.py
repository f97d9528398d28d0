"""The Clock app's timer and stopwatch tabs (``distrl.sim.apps.clock``), and what every tab of it shares:
the title, the button at the bottom centre, the tab bar's height.

The timer's data is ``{"duration_s", "running", "end_at", "remaining_s"}`` or None; its keypad takes
digits from the right (``hhmmss``), tapped or typed. The stopwatch's is ``{"running", "started_at",
"elapsed_s"}``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from distrl.sim.app import Context, Json
from distrl.sim.apps.widgets import ACCENT_BG, ON_ACCENT, W, app_bar
from distrl.sim.ui import Box, Element, Palette

__all__ = [
    "TAB_H",
    "centre_fab",
    "press_timer_key",
    "stopwatch_elapsed",
    "stopwatch_view",
    "timer_digits",
    "timer_remaining",
    "timer_seconds",
    "timer_view",
    "title",
]

TAB_H = 72.0
"""The height of the tab bar at the bottom of every tab."""


def centre_fab(
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


def title(ctx: Context, text: str) -> list[Element]:
    return app_bar(ctx, "clock", text, back=False, size=26)


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


def timer_view(ctx: Context) -> list[Element]:
    out = title(ctx, "Timer")
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
                on_tap=partial(press_timer_key, ctx, key),
            )
        )
    if digits:
        out.append(centre_fab(ctx, "clock/timer/start", lambda: _start_timer(ctx), text="Start"))
    return out


def press_timer_key(ctx: Context, key: str) -> None:
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


def stopwatch_view(ctx: Context) -> list[Element]:
    out = title(ctx, "Stopwatch")
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

    out.append(centre_fab(ctx, "clock/stopwatch/start", start_pause, text="Pause" if running else "Start"))
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
