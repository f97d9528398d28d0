"""Settings' Apps pages: recently opened apps, all apps, and an app's info page (open, force stop)."""

from __future__ import annotations

from collections.abc import Callable

from distrl.sim.app import Context
from distrl.sim.apps.settings_kit import STUBS, Rows, page, push
from distrl.sim.apps.widgets import W, app_bar, list_row, section_header, slug, spacer, text_block
from distrl.sim.ui import Box, Element, Palette

__all__ = ["APPS_PAGES"]


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


APPS_PAGES: dict[str, Callable[[Context], Rows]] = {
    "apps": _apps,
    "apps_all": _apps_all,
    "app_info": _app_info,
}
"""Screen name -> the builder of that page."""
