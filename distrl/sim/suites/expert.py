"""Building blocks for the suites' experts: find an element on screen and act on it.

Experts read the phone the way a careful human does: the state says what is done and what is not, the
screen says where to tap. When the element they need is below the fold they scroll; when a dialog or the
keyboard is in the way they deal with it first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from distrl.actions import EndEpisode, swipe_action, tap_action, to_gesture
from distrl.records import Action, ActionType
from distrl.sim.overlay import NAV_HEIGHT, STATUS_HEIGHT
from distrl.sim.ui import Element

if TYPE_CHECKING:
    from distrl.records import Task
    from distrl.sim.phone import Phone

__all__ = [
    "back",
    "dismiss_dialog",
    "done",
    "enter",
    "find",
    "home",
    "on_screen",
    "perform",
    "run_expert",
    "scroll_down",
    "scroll_up",
    "tap",
    "tap_or_scroll",
    "type_text",
]


def find(phone: Phone, element_id: str) -> Element | None:
    """The topmost element called ``element_id`` on screen (box in pixels), or None."""
    for element in reversed(phone.elements()):
        if element.id == element_id:
            return element
    return None


def on_screen(phone: Phone, element_id: str) -> bool:
    return find(phone, element_id) is not None


def tap(phone: Phone, element: Element | str) -> Action:
    """A tap at the centre of ``element`` (or of the element with that id; KeyError if absent)."""
    if isinstance(element, str):
        found = find(phone, element)
        if found is None:
            raise KeyError(f"{element!r} is not on screen")
        element = found
    x, y = element.box.centre
    return tap_action(
        min(phone.width - 1, max(0, round(x))),
        min(phone.height - 1, max(0, round(y))),
        phone.width,
        phone.height,
    )


def scroll_down(phone: Phone) -> Action:
    """Swipe up over the middle of the screen: the content moves up, showing what is below."""
    x = phone.width // 2
    return swipe_action(
        x, round(phone.height * 0.7), x, round(phone.height * 0.35), phone.width, phone.height
    )


def scroll_up(phone: Phone) -> Action:
    x = phone.width // 2
    return swipe_action(
        x, round(phone.height * 0.35), x, round(phone.height * 0.7), phone.width, phone.height
    )


def tap_or_scroll(phone: Phone, element_id: str) -> Action:
    """Tap ``element_id`` when it is fully visible above the keyboard, else scroll towards it."""
    element = find(phone, element_id)
    if element is not None and _visible(phone, element):
        return tap(phone, element)
    return scroll_down(phone)


def _visible(phone: Phone, element: Element) -> bool:
    """Whole on screen, between the status bar and the navigation bar or the keyboard."""
    covered_from = (phone.screen_height - NAV_HEIGHT) * phone.scale
    keyboard = find(phone, "keyboard/panel")
    if keyboard is not None:
        covered_from = keyboard.box.y0
    return element.box.y0 >= STATUS_HEIGHT * phone.scale and element.box.y1 <= covered_from


def dismiss_dialog(phone: Phone) -> Action | None:
    """The tap that closes an open dialog without accepting anything, or None when there is none."""
    if find(phone, "dialog/card") is None:
        return None
    buttons = [e for e in phone.elements() if e.id.startswith("dialog/button/")]
    for label in ("No thanks", "Not now", "Close", "Cancel", "Dismiss", "Block", "Later", "OK", "Got it"):
        for button in buttons:
            if button.text == label:
                return tap(phone, button)
    return back()


def type_text(text: str) -> Action:
    return Action(type=ActionType.TYPE, text=text)


def back() -> Action:
    return Action(type=ActionType.PRESS_BACK)


def home() -> Action:
    return Action(type=ActionType.PRESS_HOME)


def enter() -> Action:
    return Action(type=ActionType.PRESS_ENTER)


def done() -> Action:
    return Action(type=ActionType.STATUS_TASK_COMPLETE)


def perform(phone: Phone, action: Action) -> bool:
    """Do ``action`` on ``phone`` as a device would (``to_gesture``); False when it ends the episode."""
    gesture = to_gesture(action, phone.width, phone.height)
    phone.perform(gesture)
    return not isinstance(gesture, EndEpisode)


def run_expert(task: Task, phone: Phone, *, max_steps: int | None = None) -> tuple[bool, int]:
    """Reset ``phone`` to ``task``'s start, let the expert act until it says done or runs out of steps.

    Returns (success by the task's check, steps taken). Time passes between steps as it does between a
    device's screenshots, without rendering, so whole suites can be checked quickly.
    """
    from distrl.sim.shell import run_shell
    from distrl.sim.suites import expert_action, is_successful, setup_commands

    phone.reboot()
    for command in setup_commands(task):
        result = run_shell(phone, command)
        if result.exit_code != 0:
            raise RuntimeError(f"setup of {task.id} failed: {command!r}: {result.output!r}")
    limit = task.max_steps if max_steps is None else max_steps
    steps = 0
    while steps < limit:
        phone.advance(1.0)
        action = expert_action(task, phone)
        steps += 1
        if not perform(phone, action):
            break
    return is_successful(task, phone.state()), steps
