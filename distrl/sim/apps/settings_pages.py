"""The pages under Settings' main list: Network & internet, Connected devices, Battery, Location, About
phone (with the device name), and the simple pages with nothing to change (Apps are in ``settings_apps``,
Display and Sound in ``settings_display``, what they all build with in ``settings_kit``).

Each page is built from the phone's Android settings; switches write them back with
``ctx.put_setting``. ``PAGES`` maps screen names to builders, every page's.
"""

from __future__ import annotations

from collections.abc import Callable

from distrl.sim.app import Context
from distrl.sim.apps.settings_apps import APPS_PAGES
from distrl.sim.apps.settings_kit import (
    STUBS,
    Rows,
    is_on,
    page,
    push,
    put_flag,
    set_airplane,
    stub_page,
)
from distrl.sim.apps.widgets import (
    ACCENT_BG,
    BAR_H,
    ON_ACCENT,
    W,
    app_bar,
    list_row,
    main_switch,
    section_header,
    slug,
    spacer,
    text_block,
    toggle_row,
)
from distrl.sim.ui import Box, Element, Palette

__all__ = ["BUILD", "PAGES", "PHONE_NUMBER"]

BUILD = "TQ3A.230805.001"

PHONE_NUMBER = "(650) 555-1212"


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


PAGES: dict[str, Callable[[Context], Rows]] = {
    "network": _network,
    "connected": _connected,
    **APPS_PAGES,
    "battery": _battery,
    "location": _location,
    "about": _about,
    "device_name": _device_name,
    "page": stub_page,
}
"""Screen name -> the builder of that page."""
