"""The browser expert's moves, shared by the web-shopping and web-search suites.

Each function returns the next action towards one sub-goal (get Chrome in front, open an address, type
a query into a page's search box, reach an element) or None when there is nothing in the way. The
order an expert calls them in is its plan; the phone's state says which sub-goals are already met.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from distrl.records import Action
from distrl.sim.apps.chrome import CHROME, URL_FIELD
from distrl.sim.phone import LAUNCHER
from distrl.sim.suites.expert import (
    back,
    dismiss_dialog,
    enter,
    find,
    home,
    scroll_down,
    scroll_up,
    tap,
    tap_or_scroll,
    type_text,
)

if TYPE_CHECKING:
    from distrl.sim.app import Json
    from distrl.sim.phone import Phone

__all__ = ["chrome_frame", "fill_and_submit", "in_the_way", "open_address", "reach", "to_chrome", "wait"]

LAUNCHER_CHROME = f"launcher/app/{CHROME}"


def wait(phone: Phone) -> Action:
    """A tap that changes nothing (on the status bar), to let a page finish loading."""
    return tap(phone, "system/status_bar")


def chrome_frame(state: Json) -> Json | None:
    """Chrome's top frame when Chrome is in front, else None."""
    if state["top"]["package"] != CHROME:
        return None
    frames: list[Json] = state["tasks"][CHROME]
    return frames[-1]


def in_the_way(phone: Phone) -> Action | None:
    """Deal with whatever covers the page: a dialog, a page still loading, a cookie banner, a menu."""
    ids = {element.id: element for element in phone.elements()}
    if "dialog/card" in ids:
        return dismiss_dialog(phone)
    if "system/loading_page" in ids:
        return wait(phone)
    for element_id, element in ids.items():
        if element_id.endswith("/cookies/accept"):
            return tap(phone, element)
    if "chrome/menu/card" in ids:
        return back()
    return None


def to_chrome(phone: Phone, state: Json, *, via_search_bar: bool = False) -> Action | None:
    """The step that brings Chrome to the front (from the home screen), or None when it is there."""
    if state["top"]["package"] == CHROME:
        return None
    if state["top"]["package"] != LAUNCHER or state["top"]["screen"] != "home":
        return home()
    if via_search_bar:
        return tap(phone, "launcher/search")
    return tap_or_scroll(phone, LAUNCHER_CHROME)


def fill_and_submit(phone: Phone, state: Json, field: str, text: str) -> Action:
    """Type ``text`` into ``field`` and press ENTER: focus it (which clears it), type, submit."""
    frame = chrome_frame(state)
    focus = None if frame is None else frame["focus"]
    if focus is not None and focus != field:
        return back()  # another field has the keyboard
    if focus == field and frame is not None:
        typed = str(frame["fields"].get(field, ""))
        if typed == text:
            return enter()
        if not typed:
            return type_text(text)
    return reach(phone, state, field)


def open_address(phone: Phone, state: Json, address: str) -> Action:
    """Open ``address`` (or search for words) from Chrome's address bar."""
    return fill_and_submit(phone, state, URL_FIELD, address)


def reach(phone: Phone, state: Json, element_id: str) -> Action:
    """Tap ``element_id`` where a tap lands on it; else scroll towards it."""
    element = find(phone, element_id)
    if element is not None:
        x, y = element.box.centre
        hit = _hit(phone, x, y)
        if hit == element_id or (hit or "").startswith(element_id + "/"):
            return tap(phone, element)
        return scroll_up(phone) if y < phone.height / 2 else scroll_down(phone)
    frame = chrome_frame(state)
    if frame is not None and float(frame["scroll"]) > 0:
        context = phone.context()
        for candidate in context.app.view(context):
            if candidate.id == element_id and candidate.box.y1 < float(frame["scroll"]):
                return scroll_up(phone)
    return scroll_down(phone)


def _hit(phone: Phone, x: float, y: float) -> str | None:
    """The id of the element a tap at pixel ``(x, y)`` reaches (as ``Phone.tap`` decides), or None."""
    for element in reversed(phone.elements()):
        if not element.box.contains(x, y):
            continue
        if element.tappable:
            return element.id
        if element.fill is not None or element.kind in ("button", "field", "card", "key", "bar"):
            return None
    return None
