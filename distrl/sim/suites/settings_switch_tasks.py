"""General tasks that flip one Settings switch on or off: Wi-Fi, airplane mode, mobile data, the dark
theme and Do Not Disturb (``TRAIN``, one wording of each held out for the ``test`` split), Bluetooth,
location and Battery Saver (``UNSEEN``). ``settings_tasks`` lists them first among its own.

Success is read from the phone's Android settings (``state["settings"]``); a setup puts the switch in the
state opposite to the goal's.
"""

from __future__ import annotations

from collections.abc import Sequence

from distrl.records import Action
from distrl.sim.app import Json
from distrl.sim.suites import Params, Template, held_out
from distrl.sim.suites.system_expert import Screen, setting, settings_at, template

__all__ = ["TRAIN", "UNSEEN"]


def _toggle_template(
    name: str,
    split: str,
    *,
    namespace: str,
    key: str,
    page: str,
    element: str,
    phrases: dict[str, Sequence[str]],
    on_value: str = "1",
    off_value: str = "0",
    setups: dict[str, list[str]] | None = None,
    held_out_phrase: int | None = None,
) -> Template:
    """A template that turns one setting on or off through a switch on a settings page; wording
    ``held_out_phrase`` of either state is held out for the ``test`` split."""

    def params() -> list[Params]:
        return [{"state": state, "phrase": i} for state in ("on", "off") for i in range(len(phrases[state]))]

    def goal(p: Params) -> str:
        return phrases[str(p["state"])][int(p["phrase"])]

    def setup(p: Params) -> list[str]:
        if setups is not None:
            return list(setups[str(p["state"])])
        value = off_value if p["state"] == "on" else on_value
        return [f"settings put {namespace} {key} {value}"]

    def check(p: Params, state: Json) -> bool:
        value = setting(state, namespace, key, "")
        is_on = value != off_value and value != ""
        return is_on == (p["state"] == "on")

    def plan(p: Params, screen: Screen) -> Action:
        return settings_at(screen, page) or screen.tap_or_scroll(element)

    phrases_held_out = () if held_out_phrase is None else (held_out_phrase,)
    return template(name, split, params, goal, check, plan, setup, held_out(phrases=phrases_held_out))


_WIFI = _toggle_template(
    "wifi",
    "train",
    namespace="global",
    key="wifi_on",
    page="network",
    element="settings/wifi",
    held_out_phrase=5,
    phrases={
        "on": ("Turn on Wi-Fi", "turn on wifi", "Enable Wi-Fi", "Switch the wifi on", "Turn wifi on",
               "Can you turn on the Wi-Fi?"),
        "off": ("Turn off Wi-Fi", "turn off wifi", "Disable Wi-Fi", "Switch the wifi off", "Turn wifi off",
                "Can you turn off the Wi-Fi?"),
    },
)  # fmt: skip

_AIRPLANE = _toggle_template(
    "airplane_mode",
    "train",
    namespace="global",
    key="airplane_mode_on",
    page="network",
    element="settings/airplane",
    held_out_phrase=5,
    phrases={
        "on": ("Turn on airplane mode", "turn on airplane mode", "Enable airplane mode",
               "Put the phone in airplane mode", "Switch airplane mode on", "turn airplane mode on"),
        "off": ("Turn off airplane mode", "turn off airplane mode", "Disable airplane mode",
                "Take the phone out of airplane mode", "Switch airplane mode off", "turn airplane mode off"),
    },
    setups={
        "on": ["settings put global airplane_mode_on 0"],
        "off": [
            "settings put global airplane_mode_on 1",
            "settings put global wifi_on 0",
            "settings put global bluetooth_on 0",
        ],
    },
)  # fmt: skip

_MOBILE_DATA = _toggle_template(
    "mobile_data",
    "train",
    namespace="global",
    key="mobile_data",
    page="network",
    element="settings/mobile_data",
    held_out_phrase=3,
    phrases={
        "on": ("Turn on mobile data", "turn on cellular data", "Enable mobile data", "Switch mobile data on"),
        "off": ("Turn off mobile data", "turn off cellular data", "Disable mobile data",
                "Switch mobile data off"),
    },
)  # fmt: skip

_DARK = _toggle_template(
    "dark_theme",
    "train",
    namespace="secure",
    key="dark_mode",
    page="display",
    element="settings/dark_theme",
    held_out_phrase=4,
    phrases={
        "on": ("Turn on dark mode", "Enable dark theme", "turn on dark theme",
               "Switch the phone to dark mode", "Make the screen dark themed"),
        "off": ("Turn off dark mode", "Disable dark theme", "turn off dark theme",
                "Switch the phone to light mode", "Go back to the light theme"),
    },
)  # fmt: skip

_DND = _toggle_template(
    "do_not_disturb",
    "train",
    namespace="global",
    key="zen_mode",
    page="sound",
    element="settings/dnd",
    held_out_phrase=3,
    phrases={
        "on": ("Turn on Do Not Disturb", "turn on do not disturb", "Enable Do Not Disturb mode",
               "Silence notifications with Do Not Disturb"),
        "off": ("Turn off Do Not Disturb", "turn off do not disturb", "Disable Do Not Disturb mode",
                "Switch Do Not Disturb off"),
    },
)  # fmt: skip

_BLUETOOTH = _toggle_template(
    "bluetooth",
    "unseen",
    namespace="global",
    key="bluetooth_on",
    page="connected",
    element="settings/bluetooth",
    phrases={
        "on": ("Turn on Bluetooth", "turn bluetooth on", "Enable Bluetooth", "Switch on bluetooth",
               "Turn Bluetooth on", "Can you turn on bluetooth?"),
        "off": ("Turn off Bluetooth", "turn bluetooth off", "Disable Bluetooth", "Switch off bluetooth",
                "Turn Bluetooth off", "Can you turn off bluetooth?"),
    },
)  # fmt: skip

_LOCATION = _toggle_template(
    "location",
    "unseen",
    namespace="secure",
    key="location_mode",
    page="location",
    element="settings/location",
    on_value="3",
    phrases={
        "on": ("Turn on location", "turn on location services", "Enable GPS", "Turn location on"),
        "off": ("Turn off location", "turn off location services", "Disable GPS", "Turn location off"),
    },
)  # fmt: skip

_BATTERY_SAVER = _toggle_template(
    "battery_saver",
    "unseen",
    namespace="global",
    key="low_power",
    page="battery",
    element="settings/battery_saver",
    phrases={
        "on": ("Turn on Battery Saver", "turn on battery saver", "Enable battery saver mode",
               "Save battery by turning on Battery Saver"),
        "off": ("Turn off Battery Saver", "turn off battery saver", "Disable battery saver mode",
                "Switch Battery Saver off"),
    },
)  # fmt: skip


TRAIN: tuple[Template, ...] = (_WIFI, _AIRPLANE, _MOBILE_DATA, _DARK, _DND)
"""Switch templates of the ``train`` split, one wording of each the ``test`` split's."""

UNSEEN: tuple[Template, ...] = (_BLUETOOTH, _LOCATION, _BATTERY_SAVER)
"""Switch templates of the ``unseen`` split."""
