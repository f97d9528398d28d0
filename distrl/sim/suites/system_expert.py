"""The general suite's expert toolkit: read the screen, get to an app or a settings page, build templates.

An expert is a *plan* wrapped by ``expert_for``: done when the template's check holds; otherwise it first
dismisses a pop-up or waits out a loading page (a tap on the status bar, which does nothing), and only
then asks the plan for the next step. Plans work from the phone as it is, through ``Screen``: they tap
what a tap can reach, scroll towards what is above or below the fold, and close the keyboard when it
covers what they need. ``open_app``, ``settings_at`` and ``clock_tab`` walk there from anywhere
(pressing HOME or BACK out of wrong screens).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from distrl.actions import tap_action
from distrl.records import Action
from distrl.sim.app import Json
from distrl.sim.suites import HeldOut, Params, Template
from distrl.sim.suites import expert as ex
from distrl.sim.ui import Element

if TYPE_CHECKING:
    import random

    from distrl.sim.phone import Phone

__all__ = [
    "CALCULATOR",
    "CAMERA",
    "CLOCK",
    "LAUNCHER",
    "SETTINGS",
    "Plan",
    "Screen",
    "clock_tab",
    "draw_phrase",
    "expert_for",
    "indexed",
    "int_setting",
    "live_state",
    "norm",
    "open_app",
    "phrased",
    "setting",
    "settings_at",
    "template",
    "top",
]

LAUNCHER = "com.google.android.apps.nexuslauncher"

SETTINGS = "com.android.settings"

CLOCK = "com.google.android.deskclock"

CALCULATOR = "com.google.android.calculator"

CAMERA = "com.android.camera2"


class Screen:
    """The phone's screen for one expert step: every element once, looked up by id."""

    def __init__(self, phone: Phone) -> None:
        self.phone = phone
        self.elements = phone.elements()
        self.by_id: dict[str, Element] = {e.id: e for e in self.elements}

    def get(self, element_id: str) -> Element | None:
        return self.by_id.get(element_id)

    def _takes_tap(self, element: Element) -> bool:
        """Whether a tap at the element's centre reaches it (nothing opaque drawn over it)."""
        x, y = element.box.centre
        for other in reversed(self.elements):
            if not other.box.contains(x, y):
                continue
            if other.tappable:
                return other.id == element.id and other.box == element.box
            if other.fill is not None or other.kind in ("button", "field", "card", "key", "bar"):
                return False
        return False

    def tap(self, element_id: str) -> Action:
        element = self.get(element_id)
        if element is None:
            raise KeyError(f"{element_id!r} is not on screen")
        return ex.tap(self.phone, element)

    def tap_or_scroll(self, element_id: str) -> Action:
        """Tap the element when a tap reaches it; else close the keyboard over it or scroll towards it."""
        element = self.get(element_id)
        keyboard = self.get("keyboard/panel")
        if element is not None:
            if (
                keyboard is not None
                and element.box.y1 > keyboard.box.y0
                and not element.id.startswith("keyboard/")
            ):
                return ex.back()
            if self._takes_tap(element):
                return ex.tap(self.phone, element)
        return ex.scroll_up(self.phone) if self._above(element_id) else ex.scroll_down(self.phone)

    def _above(self, element_id: str) -> bool:
        """Whether the element sits above the part of the page on screen."""
        ctx = self.phone.context()
        scroll = float(ctx.frame["scroll"])
        for element in ctx.app.view(ctx):
            if element.id == element_id and not element.fixed:
                return element.box.y1 <= scroll + 40
        return False

    def wait(self) -> Action:
        """A tap on the status bar: it does nothing, and time passes."""
        return self.tap("system/status_bar")

    def fill(self, field_id: str, text: str) -> Action | None:
        """The step towards the field ``field_id`` of the screen in front holding ``text``: BACK away from a
        wrong beginning, a tap that focuses it, the rest typed; None once it holds ``text``."""
        frame = self.phone.top_frame
        typed = str(frame["fields"].get(field_id, ""))
        if typed == text:
            return None
        if not text.startswith(typed):
            return ex.back()
        if frame["focus"] != field_id:
            return self.tap_or_scroll(field_id)
        return ex.type_text(text[len(typed) :])

    def slide(self, element_id: str, fraction: float) -> Action:
        """Tap the slider ``element_id`` where it means ``fraction`` (past an end for exactly 0 or 1)."""
        hit = self.get(element_id)
        track = self.get(f"{element_id}/track")
        if hit is None or track is None or not self._takes_tap(hit):
            return self.tap_or_scroll(element_id)
        if fraction >= 1:
            x = (track.box.x1 + hit.box.x1) / 2
        elif fraction <= 0:
            x = (hit.box.x0 + track.box.x0) / 2
        else:
            x = track.box.x0 + fraction * track.box.width
        y = track.box.centre[1]
        phone = self.phone
        return tap_action(
            min(phone.width - 1, round(x)), min(phone.height - 1, round(y)), phone.width, phone.height
        )


def live_state(phone: Phone) -> Json:
    """What ``Phone.state()`` holds, without the copy (the checks only read it)."""
    top = phone.top_frame
    return {**phone.data, "top": {"package": phone.top_package, "screen": top["screen"], "args": top["args"]}}


Plan = Callable[[Params, Screen], Action]


def expert_for(check: Callable[[Params, Json], bool], plan: Plan) -> Callable[[Params, Phone], Action]:
    """An expert: done when ``check`` holds; else deal with pop-ups and loading, then follow ``plan``."""

    def expert(params: Params, phone: Phone) -> Action:
        if check(params, live_state(phone)):
            return ex.done()
        screen = Screen(phone)
        if screen.get("dialog/card") is not None:
            return ex.dismiss_dialog(phone) or ex.back()
        if screen.get("system/loading_page") is not None:
            return screen.wait()
        return plan(params, screen)

    return expert


def open_app(screen: Screen, package: str) -> Action | None:
    """The step towards ``package`` being in front (None when it is)."""
    phone = screen.phone
    if phone.top_package == package:
        return None
    if phone.top_package == LAUNCHER and phone.top_frame["screen"] == "home":
        return screen.tap_or_scroll(f"launcher/app/{package}")
    return ex.home()


_PARENT = {
    "network": "main",
    "connected": "main",
    "apps": "main",
    "battery": "main",
    "sound": "main",
    "display": "main",
    "location": "main",
    "about": "main",
    "timeout": "display",
    "font_size": "display",
    "apps_all": "apps",
    "device_name": "about",
}

_ENTRY = {
    **{screen: f"settings/row/{screen}" for screen, parent in _PARENT.items() if parent == "main"},
    "timeout": "settings/screen_timeout",
    "font_size": "settings/font_size",
    "apps_all": "settings/apps/all",
    "device_name": "settings/about/device_name",
}


def settings_at(screen: Screen, target: str) -> Action | None:
    """The step towards Settings showing ``target`` (None when it does)."""
    step = open_app(screen, SETTINGS)
    if step is not None:
        return step
    current = str(screen.phone.top_frame["screen"])
    if current == target:
        return None
    chain = [target]
    while chain[-1] != "main":
        chain.append(_PARENT[chain[-1]])
    chain.reverse()
    if current in chain:
        return screen.tap_or_scroll(_ENTRY[chain[chain.index(current) + 1]])
    return ex.back()


def clock_tab(screen: Screen, tab: str) -> Action | None:
    """The step towards the Clock's ``tab`` (None when it is in front)."""
    step = open_app(screen, CLOCK)
    if step is not None:
        return step
    frame = screen.phone.top_frame
    if frame["screen"] != "main":
        return ex.back()
    if frame["args"].get("tab", "alarm") != tab:
        return screen.tap_or_scroll(f"clock/tab/{tab}")
    return None


def setting(state: Json, namespace: str, key: str, default: str = "0") -> str:
    return str(state["settings"].get(namespace, {}).get(key, default))


def int_setting(state: Json, namespace: str, key: str, default: int) -> int:
    try:
        return int(float(setting(state, namespace, key, str(default))))
    except ValueError:
        return default


def top(state: Json) -> tuple[str, str]:
    return str(state["top"]["package"]), str(state["top"]["screen"])


def norm(text: str) -> str:
    return " ".join(text.lower().split())


_NOTHING_HELD_OUT = HeldOut()


def no_setup(p: Params) -> list[str]:
    return []


def template(
    name: str,
    split: str,
    params: Callable[[], Sequence[Params]],
    goal: Callable[[Params], str],
    check: Callable[[Params, Json], bool],
    plan: Plan,
    setup: Callable[[Params], list[str]] = no_setup,
    held_out: HeldOut = _NOTHING_HELD_OUT,
    draw: Callable[[random.Random], Params] | None = None,
) -> Template:
    return Template(
        name=name,
        split=split,
        params=params,
        goal=goal,
        setup=setup,
        check=check,
        expert=expert_for(check, plan),
        held_out=held_out,
        draw=draw,
    )


def phrased(goals: Sequence[str]) -> Callable[[Params], str]:
    def goal(p: Params) -> str:
        return goals[int(p["phrase"])]

    return goal


def draw_phrase(rng: random.Random, count: int, held: Collection[int]) -> int:
    """A wording index below ``count`` (fixed wordings, then drawn-only ones) but the ``held`` ones."""
    return rng.choice([i for i in range(count) if i not in held])


def indexed(goals: Sequence[tuple[str, ...]]) -> Callable[[Params], str]:
    def goal(p: Params) -> str:
        return goals[int(p["phrase"])][-1]

    return goal
