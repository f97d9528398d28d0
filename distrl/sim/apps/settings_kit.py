"""What every Settings module builds its pages with: reading and writing the phone's Android settings
(``is_on``, ``int_setting``, ``put_flag``, ``set_airplane``), a page's frame (``page``), a row's way to
another page (``push``), and the simple pages with nothing to change (``STUBS``, drawn by ``stub_page``).
"""

from __future__ import annotations

from collections.abc import Callable

from distrl.sim.app import Context
from distrl.sim.apps.widgets import app_bar, list_row, page_title, spacer
from distrl.sim.ui import Element

__all__ = ["STUBS", "Rows", "int_setting", "is_on", "page", "push", "put_flag", "set_airplane", "stub_page"]

Rows = list[Element]
"""A page's elements."""


STUBS: dict[str, tuple[str, ...]] = {
    "Notifications": (
        "App notifications",
        "Notification history",
        "Conversations",
        "Bubbles",
        "Do Not Disturb",
    ),
    "Storage": (
        "34% used - 84.21 GB free",
        "Apps - 12.4 GB",
        "Images - 3.1 GB",
        "Videos - 1.8 GB",
        "System - 14.2 GB",
    ),
    "Wallpaper & style": ("Wallpaper colors", "Themed icons", "App grid"),
    "Accessibility": (
        "Display size and text",
        "Color and motion",
        "TalkBack",
        "Select to Speak",
        "Live Caption",
    ),
    "Security & privacy": (
        "App security - No problems found",
        "Device unlock - Screen lock",
        "Privacy dashboard",
        "Permission manager",
    ),
    "Safety & emergency": ("Emergency SOS", "Medical information", "Crisis alerts", "Earthquake alerts"),
    "Passwords & accounts": ("Passwords - 14 saved", "Autofill service - Google", "Google - you@gmail.com"),
    "Digital Wellbeing & parental controls": (
        "Dashboard - 2 hr 14 min today",
        "Bedtime mode",
        "Focus mode",
        "Parental controls",
    ),
    "Google": ("Manage your Google Account", "Backup", "Devices & sharing", "Find My Device"),
    "System": ("Languages & input", "Gestures", "Date & time", "Backup", "Reset options", "System update"),
    "Tips & support": ("Help articles", "Contact support", "Send feedback"),
    "SIMs": ("T-Mobile - Active", "Roaming - Off", "Preferred network type - 5G"),
    "Hotspot & tethering": ("Wi-Fi hotspot - Off", "USB tethering - Off", "Bluetooth tethering - Off"),
    "Data Saver": ("Use Data Saver - Off", "Unrestricted data - 0 apps"),
    "VPN": ("No VPNs added",),
    "Private DNS": ("Automatic",),
    "Pair new device": ("Make sure the device you want to pair is in pairing mode.",),
    "Connection preferences": ("Bluetooth", "NFC - On", "Android Auto", "Printing - 1 print service on"),
    "Default apps": ("Browser app - Chrome", "Phone app - Phone", "SMS app - Messages", "Home app - Pixel"),
    "Battery usage": ("Screen - 38%", "Chrome - 12%", "YouTube - 9%", "Android System - 6%"),
    "App location permissions": (
        "Allowed all the time - 1 app",
        "Allowed only while in use - 5 apps",
        "Not allowed - 6 apps",
    ),
    "Legal information": ("Third-party licenses", "Google legal", "System WebView licenses"),
    "Phone ringtone": ("Pixel Sounds - Copycat",),
    "Default notification sound": ("Chime",),
    "Default alarm sound": ("Fresh start",),
}


def is_on(ctx: Context, namespace: str, key: str, default: str = "0") -> bool:
    value = ctx.setting(namespace, key)
    return (value if value is not None else default) not in ("0", "")


def int_setting(ctx: Context, namespace: str, key: str, default: int) -> int:
    value = ctx.setting(namespace, key)
    try:
        return int(float(value)) if value is not None else default
    except ValueError:
        return default


def put_flag(ctx: Context, namespace: str, key: str, on: bool) -> None:
    ctx.put_setting(namespace, key, "1" if on else "0")


def set_airplane(ctx: Context, on: bool) -> None:
    """Airplane mode as Android does it: on turns the radios off, off brings them back as they were."""
    if on == is_on(ctx, "global", "airplane_mode_on"):
        return
    if on:
        ctx.data["before_airplane"] = {
            "wifi_on": "1" if is_on(ctx, "global", "wifi_on") else "0",
            "bluetooth_on": "1" if is_on(ctx, "global", "bluetooth_on") else "0",
        }
        ctx.put_setting("global", "airplane_mode_on", "1")
        ctx.put_setting("global", "wifi_on", "0")
        ctx.put_setting("global", "bluetooth_on", "0")
    else:
        saved = ctx.data.pop("before_airplane", None) or {"wifi_on": "1", "bluetooth_on": "0"}
        ctx.put_setting("global", "airplane_mode_on", "0")
        ctx.put_setting("global", "wifi_on", str(saved.get("wifi_on", "1")))
        ctx.put_setting("global", "bluetooth_on", str(saved.get("bluetooth_on", "0")))


def push(ctx: Context, screen: str, **args: object) -> Callable[[], None]:
    def go() -> None:
        ctx.push(screen, **args)

    return go


def page(ctx: Context, title: str) -> tuple[Rows, float]:
    """An app bar with the back arrow and the large title; the page's rows go from the returned y."""
    out = app_bar(ctx, "settings", "")
    rows, y = page_title("settings", title)
    return out + rows, y


def stub_page(ctx: Context) -> Rows:
    title = str(ctx.args.get("title", ""))
    out, y = page(ctx, title)
    for i, row in enumerate(ctx.args.get("rows", [])):
        head, _, tail = str(row).partition(" - ")
        rows, y = list_row(f"settings/page/row{i}", y, head, tail, on_tap=None)
        out.extend(rows)
    out.append(spacer("settings", y + 8))
    return out
