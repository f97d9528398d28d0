"""The home screen: a search bar, a grid of app icons, a dock, and the recent-apps list."""

from __future__ import annotations

from distrl.sim.app import BaseApp, Context
from distrl.sim.ui import DP_WIDTH, Box, Element, Palette

__all__ = ["Launcher"]

COLUMNS = 4
CELL_H = 104.0
GRID_TOP = 150.0


class Launcher(BaseApp):
    package = "com.google.android.apps.nexuslauncher"
    activity = ".NexusLauncherActivity"
    label = "Pixel Launcher"
    icon = "PL"

    def view(self, ctx: Context) -> list[Element]:
        if ctx.screen == "recents":
            return self._recents(ctx)
        return self._home(ctx)

    def _home(self, ctx: Context) -> list[Element]:
        phone = ctx.phone
        day = phone.now.strftime("%A, %B %-d")
        out = [
            Element(id="launcher/date", box=Box(24, 24, DP_WIDTH - 24, 60), text=day, size=20, bold=True),
            Element(
                id="launcher/search",
                box=Box(20, 74, DP_WIDTH - 20, 122),
                text="",
                hint="Search the web",
                kind="field",
                radius=24,
                on_tap=lambda: _open_search(ctx),
            ),
        ]
        apps = [app for pkg, app in phone.apps.items() if pkg != self.package]
        cell_w = (DP_WIDTH - 16) / COLUMNS
        for i, app in enumerate(apps):
            row, col = divmod(i, COLUMNS)
            x = 8 + col * cell_w
            y = GRID_TOP + row * CELL_H
            icon = Box(x + cell_w / 2 - 28, y, x + cell_w / 2 + 28, y + 56)
            slug = app.package

            def launch(pkg: str = slug) -> None:
                ctx.launch(pkg)

            out.append(
                Element(
                    id=f"launcher/icon/{slug}",
                    box=icon,
                    kind="icon",
                    icon=app.icon,
                    fill=app.colour,
                    colour=Palette.ON_PRIMARY,
                    radius=28,
                )
            )
            out.append(
                Element(
                    id=f"launcher/label/{slug}",
                    box=Box(x, y + 60, x + cell_w, y + 84),
                    text=app.label,
                    size=13,
                    align="centre",
                )
            )
            out.append(
                Element(
                    id=f"launcher/app/{slug}",
                    box=Box(x, y - 4, x + cell_w, y + CELL_H - 12),
                    on_tap=launch,
                )
            )
        return out

    def _recents(self, ctx: Context) -> list[Element]:
        phone = ctx.phone
        running = [pkg for pkg in reversed(phone.data["recents"]) if pkg != self.package]
        out = [
            Element(
                id="launcher/recents_title",
                box=Box(24, 16, DP_WIDTH - 24, 56),
                text="Recent apps",
                size=20,
                bold=True,
            )
        ]
        if not running:
            out.append(
                Element(
                    id="launcher/recents_empty",
                    box=Box(24, 120, DP_WIDTH - 24, 160),
                    text="No recent items",
                    colour=Palette.MUTED,
                    align="centre",
                )
            )
        for i, pkg in enumerate(running):
            app = phone.apps[pkg]
            box = Box(24, 70 + i * 96, DP_WIDTH - 24, 150 + i * 96)

            def resume(pkg: str = pkg) -> None:
                ctx.launch(pkg)

            out.append(
                Element(
                    id=f"launcher/recent/{pkg}", box=box, text=app.label, kind="card", size=17, on_tap=resume
                )
            )
        return out


def _open_search(ctx: Context) -> None:
    """The home search bar opens the browser's search page, as the Google bar on a Pixel does."""
    try:
        ctx.phone.open_url("https://www.google.com/")
    except KeyError:
        ctx.toast("No browser installed")
