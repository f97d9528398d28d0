"""Settings (``com.android.settings``): the Android 13 settings app, backed by Android settings.

Every value shown or changed here lives in the phone's Android settings (``settings get global
wifi_on`` over adb reads the same value a tap changed), so success checks read ``state["settings"]``:

- global: ``wifi_on``, ``bluetooth_on``, ``airplane_mode_on``, ``mobile_data``, ``device_name``,
  ``zen_mode`` (Do Not Disturb, 0 or 1), ``low_power`` (Battery Saver, 0 or 1);
- system: ``screen_brightness`` (0-255), ``screen_brightness_mode`` (adaptive, 0 or 1),
  ``screen_off_timeout`` (ms), ``accelerometer_rotation``, ``font_scale``, ``volume_music`` (0-15),
  ``volume_ring`` and ``volume_alarm`` (0-7);
- secure: ``dark_mode``, ``night_display_activated``, ``location_mode`` (0 off, 3 on).

Turning airplane mode on turns Wi-Fi and Bluetooth off, as Android does; turning it off restores the
radios as they were (Wi-Fi on when it never saw them). Screens: ``main`` (the list, with subtitles
showing the current state), ``search``, ``network``, ``connected``, ``apps``, ``apps_all``,
``app_info`` (arg ``package``), ``battery``, ``sound``, ``display``, ``timeout``, ``font_size``,
``location``, ``about``, ``device_name`` and ``page`` (args ``title``, ``rows``: a page with nothing to
change).
"""

from __future__ import annotations

from collections.abc import Callable

from distrl.sim.app import BaseApp, Context, Json
from distrl.sim.apps.settings_display import FONT_SIZES, SCREEN_TIMEOUTS, SLIDER_PAGES, VOLUME_MAX
from distrl.sim.apps.settings_kit import STUBS, Rows, int_setting, is_on, push, set_airplane
from distrl.sim.apps.settings_pages import PAGES
from distrl.sim.apps.widgets import BAR_H, W, app_bar, launch_nuisance, list_row, slug, spacer, text_block
from distrl.sim.ui import Box, Colour, Element

__all__ = ["FONT_SIZES", "MAIN_ROWS", "SCREEN_TIMEOUTS", "VOLUME_MAX", "Settings", "set_airplane"]


def _network_subtitle(ctx: Context) -> str:
    if is_on(ctx, "global", "airplane_mode_on"):
        return "Airplane mode is on"
    wifi = "AndroidWifi" if is_on(ctx, "global", "wifi_on") else "Wi-Fi off"
    data = "T-Mobile" if is_on(ctx, "global", "mobile_data", "1") else "mobile data off"
    return f"{wifi}, {data}"


def _display_subtitle(ctx: Context) -> str:
    dark = "on" if is_on(ctx, "secure", "dark_mode") else "off"
    brightness = round(int_setting(ctx, "system", "screen_brightness", 128) / 255 * 100)
    return f"Dark theme {dark}, brightness {brightness}%"


MainRow = tuple[str, str, Callable[[Context], str], str, Colour, str]

MAIN_ROWS: tuple[MainRow, ...] = (
    ("network", "Network & internet", _network_subtitle, "W", (26, 115, 232), "network"),
    (
        "connected",
        "Connected devices",
        lambda c: f"Bluetooth {'on' if is_on(c, 'global', 'bluetooth_on') else 'off'}, pairing",
        "CD",
        (0, 137, 123),
        "connected",
    ),
    ("apps", "Apps", lambda c: "Assistant, recent apps, default apps", "A", (161, 66, 244), "apps"),
    (
        "notifications",
        "Notifications",
        lambda c: "Notification history, conversations",
        "N",
        (217, 48, 37),
        "page",
    ),
    (
        "battery",
        "Battery",
        lambda c: (
            "87%" + (" - Battery Saver on" if is_on(c, "global", "low_power") else " - About 1 day left")
        ),
        "B",
        (30, 142, 62),
        "battery",
    ),
    ("storage", "Storage", lambda c: "34% used - 84.21 GB free", "St", (0, 120, 212), "page"),
    (
        "sound",
        "Sound & vibration",
        lambda c: (
            "Do Not Disturb is on" if is_on(c, "global", "zen_mode") else "Volume, haptics, Do Not Disturb"
        ),
        "So",
        (0, 137, 123),
        "sound",
    ),
    ("display", "Display", _display_subtitle, "D", (232, 113, 10), "display"),
    (
        "wallpaper",
        "Wallpaper & style",
        lambda c: "Colors, themed icons, app grid",
        "Wa",
        (199, 54, 137),
        "page",
    ),
    ("accessibility", "Accessibility", lambda c: "Display, interaction, audio", "Ac", (95, 99, 104), "page"),
    (
        "security",
        "Security & privacy",
        lambda c: "App security, device lock, permissions",
        "Se",
        (30, 142, 62),
        "page",
    ),
    (
        "location",
        "Location",
        lambda c: (
            "On - 3 apps have access to location" if is_on(c, "secure", "location_mode", "3") else "Off"
        ),
        "L",
        (26, 115, 232),
        "location",
    ),
    (
        "safety",
        "Safety & emergency",
        lambda c: "Emergency SOS, medical info, alerts",
        "+",
        (217, 48, 37),
        "page",
    ),
    (
        "passwords",
        "Passwords & accounts",
        lambda c: "Saved passwords, autofill, synced accounts",
        "P",
        (161, 66, 244),
        "page",
    ),
    (
        "wellbeing",
        "Digital Wellbeing & parental controls",
        lambda c: "Screen time, app timers, bedtime",
        "DW",
        (0, 137, 123),
        "page",
    ),
    ("google", "Google", lambda c: "Services & preferences", "G", (66, 133, 244), "page"),
    ("system", "System", lambda c: "Languages, gestures, time, backup", "Sy", (95, 99, 104), "page"),
    (
        "about",
        "About phone",
        lambda c: str(c.setting("global", "device_name") or "Pixel 6"),
        "i",
        (26, 115, 232),
        "about",
    ),
    ("tips", "Tips & support", lambda c: "Help articles, phone & chat", "?", (30, 142, 62), "page"),
)
"""The main list: ``(key, title, subtitle(ctx), icon, icon colour, screen)``; rows ``settings/row/<key>``."""

_SEARCH_INDEX: tuple[tuple[str, str, str], ...] = (
    ("Wi-Fi", "Network & internet", "network"),
    ("Airplane mode", "Network & internet", "network"),
    ("Mobile data", "Network & internet", "network"),
    ("Internet", "Network & internet", "network"),
    ("Hotspot & tethering", "Network & internet", "network"),
    ("Bluetooth", "Connected devices", "connected"),
    ("Pair new device", "Connected devices", "connected"),
    ("All apps", "Apps", "apps_all"),
    ("Battery Saver", "Battery", "battery"),
    ("Battery", "Battery", "battery"),
    ("Brightness level", "Display", "display"),
    ("Adaptive brightness", "Display", "display"),
    ("Dark theme", "Display", "display"),
    ("Night Light", "Display", "display"),
    ("Screen timeout", "Display", "timeout"),
    ("Font size", "Display", "font_size"),
    ("Auto-rotate screen", "Display", "display"),
    ("Media volume", "Sound & vibration", "sound"),
    ("Ring volume", "Sound & vibration", "sound"),
    ("Alarm volume", "Sound & vibration", "sound"),
    ("Do Not Disturb", "Sound & vibration", "sound"),
    ("Location", "Location", "location"),
    ("About phone", "About phone", "about"),
    ("Android version", "About phone", "about"),
    ("Model", "About phone", "about"),
    ("Device name", "About phone", "about"),
    ("Build number", "About phone", "about"),
)


class Settings(BaseApp):
    """The Settings app (see the module docstring). Data: ``before_airplane`` (radios to restore)."""

    package = "com.android.settings"
    activity = ".Settings"
    label = "Settings"
    icon = "S"
    colour = (95, 99, 104)

    def defaults(self) -> Json:
        return {}

    def on_launch(self, ctx: Context) -> None:
        launch_nuisance(
            ctx,
            (
                "settings_setup",
                "Finish setting up your Pixel",
                "Add a fingerprint and set up Google Pay.",
                ("Not now", "Continue"),
            ),
            p_dialog=0.12,
        )

    def view(self, ctx: Context) -> list[Element]:
        builder = _SCREENS.get(ctx.screen, _main)
        return builder(ctx)


def _main(ctx: Context) -> Rows:
    out: Rows = [
        Element(id="settings/heading", box=Box(24, 16, W - 24, 72), text="Settings", size=32),
        Element(
            id="settings/search",
            box=Box(16, 84, W - 16, 136),
            kind="field",
            hint="Search settings",
            radius=26,
            fill=(233, 236, 243),
            on_tap=lambda: _open_search(ctx),
        ),
    ]
    y = 148.0
    for key, title, subtitle, icon, colour, screen in MAIN_ROWS:
        if screen == "page":
            target = push(ctx, "page", title=title, rows=list(STUBS.get(title, ())))
        else:
            target = push(ctx, screen)
        rows, y = list_row(
            f"settings/row/{key}", y, title, subtitle(ctx), on_tap=target, icon=icon, icon_fill=colour
        )
        out.extend(rows)
    out.append(spacer("settings", y + 8))
    return out


def _open_search(ctx: Context) -> None:
    ctx.push("search")
    ctx.phone.top_frame["focus"] = "settings/search/query"


def _search(ctx: Context) -> Rows:
    field_id = "settings/search/query"
    query = ctx.field(field_id)
    out = app_bar(ctx, "settings", "")
    out.append(
        Element(
            id=field_id,
            box=Box(60, 8, W - 16, 56),
            text=query,
            kind="field",
            hint="Search settings",
            radius=24,
            fill=(233, 236, 243),
            fixed=True,
            on_tap=lambda: ctx.focus(field_id),
            on_submit=lambda _text: ctx.focus(None),
        )
    )
    y = BAR_H + 8
    words = query.lower().split()
    if not words:
        return out
    hits = [entry for entry in _SEARCH_INDEX if all(w in f"{entry[0]} {entry[1]}".lower() for w in words)]
    if not hits:
        rows, y = text_block("settings/search/none", y, f'No results for "{query}"', lines=1)
        return out + rows
    for title, crumb, screen in hits[:8]:
        rows, y = list_row(f"settings/result/{slug(title)}", y, title, crumb, on_tap=push(ctx, screen))
        out.extend(rows)
    return out


_SCREENS: dict[str, Callable[[Context], Rows]] = {"main": _main, "search": _search, **PAGES, **SLIDER_PAGES}
