"""Settings pages with sliders and choices: Display (brightness, dark theme, Night Light, Screen timeout,
Font size, auto-rotate) and Sound & vibration (media, ring and alarm volumes, Do Not Disturb).

Sliders write ``screen_brightness`` (0-255) and the ``volume_*`` settings (0 to ``VOLUME_MAX``); the
Screen timeout and Font size pages are radio lists writing ``screen_off_timeout`` (ms) and
``font_scale``. ``SLIDER_PAGES`` maps screen names to builders.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from distrl.sim.app import Context
from distrl.sim.apps.settings_kit import STUBS, Rows, int_setting, is_on, page, push, put_flag
from distrl.sim.apps.widgets import (
    W,
    list_row,
    radio_row,
    section_header,
    slider_row,
    slug,
    spacer,
    text_block,
    toggle_row,
)
from distrl.sim.ui import Box, Element

__all__ = ["FONT_SIZES", "SCREEN_TIMEOUTS", "SLIDER_PAGES", "VOLUME_MAX"]


SCREEN_TIMEOUTS: tuple[tuple[int, str], ...] = (
    (15000, "15 seconds"),
    (30000, "30 seconds"),
    (60000, "1 minute"),
    (120000, "2 minutes"),
    (300000, "5 minutes"),
    (600000, "10 minutes"),
    (1800000, "30 minutes"),
)
"""``screen_off_timeout`` choices (ms) and their labels."""

FONT_SIZES: tuple[tuple[str, str], ...] = (
    ("0.85", "Small"),
    ("1.0", "Default"),
    ("1.15", "Large"),
    ("1.3", "Largest"),
)
"""``font_scale`` choices and their labels."""

VOLUME_MAX: dict[str, int] = {"volume_music": 15, "volume_ring": 7, "volume_alarm": 7}
"""The largest value of each volume setting (the smallest is 0)."""


def _timeout_label(ms: int) -> str:
    for value, label in SCREEN_TIMEOUTS:
        if value == ms:
            return label
    seconds = ms // 1000
    return f"{seconds // 60} minutes" if seconds >= 60 else f"{seconds} seconds"


def _volume_setter(ctx: Context, key: str) -> Callable[[float], None]:
    top = VOLUME_MAX[key]

    def put(fraction: float) -> None:
        ctx.put_setting("system", key, str(round(fraction * top)))

    return put


def _sound(ctx: Context) -> Rows:
    out, y = page(ctx, "Sound & vibration")
    for key, title in (
        ("volume_music", "Media volume"),
        ("volume_ring", "Ring & notification volume"),
        ("volume_alarm", "Alarm volume"),
    ):
        top = VOLUME_MAX[key]
        value = min(top, max(0, int_setting(ctx, "system", key, top // 2)))
        rows, y = slider_row(
            f"settings/{key}",
            y,
            title,
            value / top,
            _volume_setter(ctx, key),
            caption=f"{round(value / top * 100)}%",
        )
        out.extend(rows)
    rows, y = toggle_row(
        "settings/dnd",
        y,
        "Do Not Disturb",
        is_on(ctx, "global", "zen_mode"),
        lambda: put_flag(ctx, "global", "zen_mode", not is_on(ctx, "global", "zen_mode")),
    )
    out.extend(rows)
    for title, subtitle in (
        ("Phone ringtone", "Copycat"),
        ("Default notification sound", "Chime"),
        ("Default alarm sound", "Fresh start"),
    ):
        rows, y = list_row(
            f"settings/sound/{slug(title)}",
            y,
            title,
            subtitle,
            on_tap=push(ctx, "page", title=title, rows=list(STUBS[title])),
        )
        out.extend(rows)
    out.append(spacer("settings", y + 8))
    return out


def _display(ctx: Context) -> Rows:
    out, y = page(ctx, "Display")
    rows, y = section_header("settings/display/brightness", y - 16, "Brightness")
    out.extend(rows)
    level = min(255, max(0, int_setting(ctx, "system", "screen_brightness", 128)))

    def set_brightness(fraction: float) -> None:
        ctx.put_setting("system", "screen_brightness", str(round(fraction * 255)))

    rows, y = slider_row(
        "settings/brightness",
        y,
        "Brightness level",
        level / 255,
        set_brightness,
        caption=f"{round(level / 255 * 100)}%",
    )
    out.extend(rows)
    rows, y = toggle_row(
        "settings/adaptive_brightness",
        y,
        "Adaptive brightness",
        is_on(ctx, "system", "screen_brightness_mode"),
        lambda: put_flag(
            ctx, "system", "screen_brightness_mode", not is_on(ctx, "system", "screen_brightness_mode")
        ),
    )
    out.extend(rows)
    rows, y = section_header("settings/display/appearance", y, "Appearance")
    out.extend(rows)
    rows, y = toggle_row(
        "settings/dark_theme",
        y,
        "Dark theme",
        is_on(ctx, "secure", "dark_mode"),
        lambda: put_flag(ctx, "secure", "dark_mode", not is_on(ctx, "secure", "dark_mode")),
    )
    out.extend(rows)
    scale = ctx.setting("system", "font_scale") or "1.0"
    font_label = next((label for value, label in FONT_SIZES if float(value) == float(scale)), "Default")
    rows, y = list_row("settings/font_size", y, "Font size", font_label, on_tap=push(ctx, "font_size"))
    out.extend(rows)
    rows, y = toggle_row(
        "settings/night_light",
        y,
        "Night Light",
        is_on(ctx, "secure", "night_display_activated"),
        lambda: put_flag(
            ctx, "secure", "night_display_activated", not is_on(ctx, "secure", "night_display_activated")
        ),
    )
    out.extend(rows)
    rows, y = section_header("settings/display/other", y, "Other display controls")
    out.extend(rows)
    timeout = int_setting(ctx, "system", "screen_off_timeout", 60000)
    rows, y = list_row(
        "settings/screen_timeout",
        y,
        "Screen timeout",
        f"After {_timeout_label(timeout)} of inactivity",
        on_tap=push(ctx, "timeout"),
    )
    out.extend(rows)
    rows, y = toggle_row(
        "settings/auto_rotate",
        y,
        "Auto-rotate screen",
        is_on(ctx, "system", "accelerometer_rotation", "1"),
        lambda: put_flag(
            ctx, "system", "accelerometer_rotation", not is_on(ctx, "system", "accelerometer_rotation", "1")
        ),
    )
    out.extend(rows)
    out.append(spacer("settings", y + 8))
    return out


def _timeout(ctx: Context) -> Rows:
    out, y = page(ctx, "Screen timeout")
    current = int_setting(ctx, "system", "screen_off_timeout", 60000)
    for value, label in SCREEN_TIMEOUTS:
        rows, y = radio_row(
            f"settings/timeout/{value}",
            y,
            label,
            value == current,
            partial(ctx.put_setting, "system", "screen_off_timeout", str(value)),
        )
        out.extend(rows)
    rows, y = text_block("settings/timeout/note", y, "Screen turns off after this much inactivity.", lines=2)
    out.extend(rows)
    return out


def _font_size(ctx: Context) -> Rows:
    out, y = page(ctx, "Font size")
    current = float(ctx.setting("system", "font_scale") or "1.0")
    out.append(
        Element(
            id="settings/font_size/preview",
            box=Box(24, y, W - 24, y + 90),
            kind="card",
            text="The quick brown fox jumps over the lazy dog.",
            size=16 * current,
            lines=2,
        )
    )
    y += 106
    for value, label in FONT_SIZES:
        rows, y = radio_row(
            f"settings/font_size/{label.lower()}",
            y,
            label,
            float(value) == current,
            partial(ctx.put_setting, "system", "font_scale", value),
        )
        out.extend(rows)
    return out


SLIDER_PAGES: dict[str, Callable[[Context], Rows]] = {
    "sound": _sound,
    "display": _display,
    "timeout": _timeout,
    "font_size": _font_size,
}
"""Screen name -> the builder of that page."""
