"""The pages under Settings' main list: Network & internet, Connected devices, Apps (with app info),
Battery, Location, About phone (with the device name), and the simple pages with nothing to change
(Display and Sound are in ``settings_display``).

Each page is built from the phone's Android settings; switches write them back with
``ctx.put_setting``. ``PAGES`` maps screen names to builders; the helpers (``is_on``, ``int_setting``,
``put_flag``, ``push``, ``page``) serve the other settings modules too.
"""

from __future__ import annotations

from collections.abc import Callable

from distrl.sim.app import Context
from distrl.sim.apps.widgets import (
    ACCENT_BG,
    BAR_H,
    ON_ACCENT,
    W,
    app_bar,
    list_row,
    main_switch,
    page_title,
    section_header,
    slug,
    spacer,
    text_block,
    toggle_row,
)
from distrl.sim.ui import Box, Element, Palette

__all__ = [
    "BUILD",
    "PAGES",
    "PHONE_NUMBER",
    "STUBS",
    "Rows",
    "is_on",
    "page",
    "int_setting",
    "push",
    "put_flag",
    "set_airplane",
]

Rows = list[Element]


BUILD = "TQ3A.230805.001"

PHONE_NUMBER = "(650) 555-1212"

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


def _network(ctx: Context) -> Rows:
    out, y = page(ctx, "Network & internet")
    airplane = is_on(ctx, "global", "airplane_mode_on")

    def toggle(key: str) -> Callable[[], None]:
        def flip() -> None:
            put_flag(ctx, "global", key, not is_on(ctx, "global", key, "1" if key == "mobile_data" else "0"))

        return flip

    def mobile_data() -> None:
        if airplane:
            ctx.toast("Turn off airplane mode first")
            return
        toggle("mobile_data")()

    rows, y = toggle_row("settings/wifi", y, "Wi-Fi", is_on(ctx, "global", "wifi_on"), toggle("wifi_on"))
    out.extend(rows)
    if is_on(ctx, "global", "wifi_on"):
        rows, y = list_row(
            "settings/wifi/network",
            y,
            "AndroidWifi",
            "Connected",
            on_tap=None,
            icon="W",
            icon_fill=ACCENT_BG,
            icon_colour=ON_ACCENT,
        )
        out.extend(rows)
    rows, y = toggle_row(
        "settings/mobile_data",
        y,
        "Mobile data",
        is_on(ctx, "global", "mobile_data", "1") and not airplane,
        mobile_data,
        enabled=not airplane,
    )
    out.extend(rows)
    rows, y = toggle_row(
        "settings/airplane",
        y,
        "Airplane mode",
        airplane,
        lambda: set_airplane(ctx, not is_on(ctx, "global", "airplane_mode_on")),
    )
    out.extend(rows)
    for title, subtitle in (
        ("SIMs", "T-Mobile"),
        ("Hotspot & tethering", "Off"),
        ("Data Saver", "Off"),
        ("VPN", "None"),
        ("Private DNS", "Automatic"),
    ):
        rows, y = list_row(
            f"settings/network/{slug(title)}",
            y,
            title,
            subtitle,
            on_tap=push(ctx, "page", title=title, rows=list(STUBS[title])),
        )
        out.extend(rows)
    out.append(spacer("settings", y + 8))
    return out


def _connected(ctx: Context) -> Rows:
    out, y = page(ctx, "Connected devices")
    on = is_on(ctx, "global", "bluetooth_on")
    rows, y = main_switch(
        "settings/bluetooth",
        y,
        "Use Bluetooth",
        on,
        lambda: put_flag(ctx, "global", "bluetooth_on", not is_on(ctx, "global", "bluetooth_on")),
    )
    out.extend(rows)
    for title in ("Pair new device", "Connection preferences"):
        rows, y = list_row(
            f"settings/connected/{slug(title)}",
            y,
            title,
            on_tap=push(ctx, "page", title=title, rows=list(STUBS[title])),
            icon="+" if title.startswith("Pair") else ">",
            icon_fill=ACCENT_BG,
            icon_colour=ON_ACCENT,
        )
        out.extend(rows)
    rows, y = section_header("settings/saved", y, "Saved devices")
    out.extend(rows)
    rows, y = list_row(
        "settings/connected/pixel_buds",
        y,
        "Pixel Buds Pro",
        "Not connected",
        on_tap=None,
        icon="PB",
        icon_fill=(95, 99, 104),
    )
    out.extend(rows)
    name = ctx.setting("global", "device_name") or "Pixel 6"
    rows, y = text_block(
        "settings/connected/visible",
        y,
        f'Visible as "{name}" to other devices' if on else "Bluetooth is off",
        lines=1,
    )
    out.extend(rows)
    return out


def _apps(ctx: Context) -> Rows:
    out, y = page(ctx, "Apps")
    phone = ctx.phone
    rows, y = section_header("settings/apps/recent", y, "Recently opened apps")
    out.extend(rows)
    recent = [
        pkg
        for pkg in reversed(phone.data["recents"])
        if pkg in phone.apps and pkg not in (ctx.app.package, "com.google.android.apps.nexuslauncher")
    ][:3]
    if not recent:
        rows, y = text_block("settings/apps/none", y, "No recently opened apps", lines=1)
        out.extend(rows)
    for pkg in recent:
        app = phone.apps[pkg]
        rows, y = list_row(
            f"settings/apps/app/{pkg}",
            y,
            app.label,
            "Running",
            icon=app.icon,
            icon_fill=app.colour,
            on_tap=push(ctx, "app_info", package=pkg),
        )
        out.extend(rows)
    count = len(phone.apps) - 1
    rows, y = list_row("settings/apps/all", y, f"See all {count} apps", on_tap=push(ctx, "apps_all"))
    out.extend(rows)
    rows, y = section_header("settings/apps/general", y, "General")
    out.extend(rows)
    rows, y = list_row(
        "settings/apps/default",
        y,
        "Default apps",
        "Chrome, Phone and Messages",
        on_tap=push(ctx, "page", title="Default apps", rows=list(STUBS["Default apps"])),
    )
    out.extend(rows)
    return out


def _apps_all(ctx: Context) -> Rows:
    out, y = page(ctx, "All apps")
    phone = ctx.phone
    apps = sorted(
        (app for pkg, app in phone.apps.items() if pkg != "com.google.android.apps.nexuslauncher"),
        key=lambda app: app.label.lower(),
    )
    for app in apps:
        rows, y = list_row(
            f"settings/apps/app/{app.package}",
            y,
            app.label,
            on_tap=push(ctx, "app_info", package=app.package),
            icon=app.icon,
            icon_fill=app.colour,
        )
        out.extend(rows)
    out.append(spacer("settings", y + 8))
    return out


def _app_info(ctx: Context) -> Rows:
    phone = ctx.phone
    pkg = str(ctx.args.get("package", ""))
    app = phone.apps.get(pkg)
    out = app_bar(ctx, "settings", "App info")
    if app is None:
        return out
    out.append(
        Element(
            id="settings/app_info/icon",
            box=Box(W / 2 - 36, 80, W / 2 + 36, 152),
            kind="icon",
            icon=app.icon,
            fill=app.colour,
            colour=Palette.ON_PRIMARY,
            radius=36,
        )
    )
    out.append(
        Element(
            id="settings/app_info/name",
            box=Box(24, 160, W - 24, 196),
            text=app.label,
            size=24,
            align="centre",
        )
    )
    out.append(
        Element(
            id="settings/app_info/package",
            box=Box(24, 196, W - 24, 220),
            text=pkg,
            size=13,
            colour=Palette.MUTED,
            align="centre",
        )
    )
    running = pkg in phone.data["tasks"]
    can_stop = running and pkg != ctx.app.package

    def force_stop() -> None:
        if can_stop:
            phone.force_stop(pkg)
            ctx.toast(f"{app.label} stopped")

    out.append(
        Element(
            id="settings/app_info/open",
            box=Box(40, 240, W / 2 - 8, 288),
            kind="button",
            colour=Palette.ON_PRIMARY,
            text="Open",
            align="centre",
            size=16,
            on_tap=lambda: ctx.launch(pkg),
        )
    )
    out.append(
        Element(
            id="settings/app_info/force_stop",
            box=Box(W / 2 + 8, 240, W - 40, 288),
            kind="button",
            text="Force stop",
            align="centre",
            size=16,
            fill=Palette.PRIMARY if can_stop else Palette.CARD,
            colour=Palette.ON_PRIMARY if can_stop else Palette.OFF,
            on_tap=force_stop,
        )
    )
    y = 308.0
    for title, subtitle in (
        ("Notifications", "On"),
        ("Permissions", "No permissions requested"),
        ("Storage & cache", "48.2 MB used in internal storage"),
        ("Mobile data & Wi-Fi", "No data used"),
    ):
        rows, y = list_row(f"settings/app_info/{slug(title)}", y, title, subtitle, on_tap=None)
        out.extend(rows)
    return out


def _battery(ctx: Context) -> Rows:
    out, y = page(ctx, "Battery")
    saver = is_on(ctx, "global", "low_power")
    out.append(Element(id="settings/battery/level", box=Box(24, y, W - 24, y + 56), text="87%", size=40))
    out.append(
        Element(
            id="settings/battery/left",
            box=Box(24, y + 56, W - 24, y + 84),
            text="About 1 day, 6 hr left" if saver else "About 1 day left",
            colour=Palette.MUTED,
        )
    )
    y += 100
    rows, y = toggle_row(
        "settings/battery_saver",
        y,
        "Battery Saver",
        saver,
        lambda: put_flag(ctx, "global", "low_power", not is_on(ctx, "global", "low_power")),
    )
    out.extend(rows)
    rows, y = list_row(
        "settings/battery/usage",
        y,
        "Battery usage",
        "View usage since last full charge",
        on_tap=push(ctx, "page", title="Battery usage", rows=list(STUBS["Battery usage"])),
    )
    out.extend(rows)
    rows, y = text_block(
        "settings/battery/tip",
        y,
        "Battery Saver turns on dark theme and limits background activity to extend battery life.",
        lines=2,
    )
    out.extend(rows)
    return out


def _location(ctx: Context) -> Rows:
    out, y = page(ctx, "Location")
    on = is_on(ctx, "secure", "location_mode", "3")
    rows, y = main_switch(
        "settings/location",
        y,
        "Use location",
        on,
        lambda: ctx.put_setting(
            "secure", "location_mode", "0" if is_on(ctx, "secure", "location_mode", "3") else "3"
        ),
    )
    out.extend(rows)
    rows, y = section_header("settings/location/recent", y, "Recent access")
    out.extend(rows)
    if on:
        for title, subtitle in (("Maps", "2 min ago"), ("Google", "15 min ago"), ("Weather", "1 hr ago")):
            rows, y = list_row(f"settings/location/recent/{slug(title)}", y, title, subtitle, on_tap=None)
            out.extend(rows)
    else:
        rows, y = text_block("settings/location/off", y, "Location is off", lines=1)
        out.extend(rows)
    rows, y = list_row(
        "settings/location/permissions",
        y,
        "App location permissions",
        "3 of 12 apps have access to location",
        on_tap=push(
            ctx, "page", title="App location permissions", rows=list(STUBS["App location permissions"])
        ),
    )
    out.extend(rows)
    return out


def _about(ctx: Context) -> Rows:
    out, y = page(ctx, "About phone")
    phone = ctx.phone
    name = ctx.setting("global", "device_name") or "Pixel 6"
    rows, y = list_row(
        "settings/about/device_name", y, "Device name", name, on_tap=lambda: _open_device_name(ctx)
    )
    out.extend(rows)
    rows, y = section_header("settings/about/details", y, "Device details")
    out.extend(rows)
    ip = "10.0.2.16" if is_on(ctx, "global", "wifi_on") else "Unavailable"
    for key, title, value in (
        ("phone_number", "Phone number", PHONE_NUMBER),
        ("model", "Model", phone.props["ro.product.model"]),
        ("android_version", "Android version", phone.props["ro.build.version.release"]),
        ("ip_address", "IP address", ip),
        ("build_number", "Build number", BUILD),
    ):
        rows, y = list_row(f"settings/about/{key}", y, title, value, on_tap=None)
        out.extend(rows)
    rows, y = list_row(
        "settings/about/legal",
        y,
        "Legal information",
        on_tap=push(ctx, "page", title="Legal information", rows=list(STUBS["Legal information"])),
    )
    out.extend(rows)
    out.append(spacer("settings", y + 8))
    return out


def _device_name(ctx: Context) -> Rows:
    field_id = "settings/device_name/field"
    current = ctx.setting("global", "device_name") or "Pixel 6"

    def rename() -> None:
        name = " ".join(ctx.field(field_id).split())
        ctx.focus(None)
        if name:
            ctx.put_setting("global", "device_name", name)
        ctx.back()

    save = Element(
        id="settings/device_name/rename",
        box=Box(W - 120, 12, W - 16, 52),
        kind="button",
        colour=Palette.ON_PRIMARY,
        text="Rename",
        align="centre",
        size=15,
        bold=True,
        fixed=True,
        on_tap=rename,
    )
    out = app_bar(ctx, "settings", "Device name", actions=[save])
    out.append(
        Element(
            id=field_id,
            box=Box(24, BAR_H + 16, W - 24, BAR_H + 72),
            kind="field",
            text=ctx.field(field_id),
            hint=current,
            on_tap=lambda: ctx.focus(field_id),
            on_submit=lambda _text: rename(),
        )
    )
    rows, _ = text_block(
        "settings/device_name/note",
        BAR_H + 80,
        "Your device name is visible to apps and to other devices over Bluetooth and Wi-Fi Direct.",
        lines=3,
    )
    return out + rows


def _open_device_name(ctx: Context) -> None:
    ctx.push("device_name")
    ctx.phone.top_frame["focus"] = "settings/device_name/field"


def _stub_page(ctx: Context) -> Rows:
    title = str(ctx.args.get("title", ""))
    out, y = page(ctx, title)
    for i, row in enumerate(ctx.args.get("rows", [])):
        head, _, tail = str(row).partition(" - ")
        rows, y = list_row(f"settings/page/row{i}", y, head, tail, on_tap=None)
        out.extend(rows)
    out.append(spacer("settings", y + 8))
    return out


PAGES: dict[str, Callable[[Context], Rows]] = {
    "network": _network,
    "connected": _connected,
    "apps": _apps,
    "apps_all": _apps_all,
    "app_info": _app_info,
    "battery": _battery,
    "location": _location,
    "about": _about,
    "device_name": _device_name,
    "page": _stub_page,
}
"""Screen name -> the builder of that page."""
