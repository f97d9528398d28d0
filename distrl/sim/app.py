"""The contract between the phone and its apps: ``App``, the ``Context`` an app's code works through, and
``Host``, the phone as that context sees it.

An app is a stateless object: everything it remembers lives in JSON data the phone keeps (its own
section, ``ctx.data``, and the current screen's ``frame``), so a snapshot of the phone is a snapshot of
every app, and two phones never share anything. A screen is a function from that data to ``Element``s;
tap handlers are closures that change the data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from distrl.sim.ui import Colour, Element

__all__ = ["App", "BaseApp", "Context", "Frame", "Host", "Json", "Options", "View", "frame"]

Json = dict[str, Any]
"""A JSON object: str keys; values str, int, float, bool, None, lists and JSON objects."""

Frame = Json
"""One screen on an app's back stack: ``screen``, ``args``, ``scroll``, ``focus``, ``fields``, ``dialog``,
``loading_until`` (see ``Context``)."""

View = Callable[["Context"], list[Element]]


class Options(Protocol):
    """The phone's settings an app may read (``PhoneConfig``)."""

    @property
    def nuisances(self) -> bool:
        """Pop-ups and slow page loads are on."""
        ...


class Host(Protocol):
    """The phone as its apps see it, through ``Context`` (``distrl.sim.phone.Phone`` is one). Apps name
    this, not the phone, so that the phone can import its apps and the apps know only this contract."""

    data: Json
    """Everything the phone keeps (apps' data, back stacks, settings, the clock, the random stream)."""

    @property
    def config(self) -> Options: ...

    @property
    def apps(self) -> Mapping[str, App]:
        """The installed apps by package."""
        ...

    @property
    def props(self) -> Mapping[str, str]:
        """System properties (``getprop``)."""
        ...

    @property
    def content_height(self) -> float:
        """Height of the content area in dp."""
        ...

    @property
    def now(self) -> datetime:
        """The virtual clock."""
        ...

    @property
    def top_frame(self) -> Frame:
        """The top frame of the app in front."""
        ...

    def random(self) -> float: ...

    def get_setting(self, namespace: str, key: str) -> str | None: ...

    def put_setting(self, namespace: str, key: str, value: str) -> None: ...

    def push_frame(self, package: str, screen: str, args: Mapping[str, Any]) -> None: ...

    def replace_frame(self, package: str, screen: str, args: Mapping[str, Any]) -> None: ...

    def back(self) -> None: ...

    def launch(self, package: str, activity: str | None = None) -> None: ...

    def force_stop(self, package: str) -> None: ...

    def open_url(self, url: str) -> None: ...


class App(Protocol):
    """An installed app. ``view`` draws the top frame; the rest are optional hooks (see ``BaseApp``)."""

    package: str
    """Android package name (``com.android.settings``)."""
    activity: str
    """Launcher activity, as ``am start -n package/activity`` names it (``.Settings``)."""
    label: str
    """Name under the launcher icon."""
    icon: str
    """One or two letters drawn on the launcher icon."""
    colour: Colour
    """The launcher icon's colour."""

    def defaults(self) -> Json:
        """The app's data after install or ``pm clear``."""
        ...

    def view(self, ctx: Context) -> list[Element]:
        """The elements of the top frame, in dp from the top of the content area."""
        ...

    def on_launch(self, ctx: Context) -> None:
        """Called when the app starts fresh (not when it resumes); may open a dialog."""
        ...

    def on_back(self, ctx: Context) -> bool:
        """BACK on the app's screen; True when handled (else the phone pops the frame)."""
        ...

    def on_dialog(self, ctx: Context, dialog: str, button: str) -> None:
        """A dialog button was tapped (the dialog is already closed)."""
        ...

    def open_url(self, ctx: Context, url: str) -> bool:
        """A VIEW intent for ``url``; True when this app handled it."""
        ...

    def on_text(self, ctx: Context, text: str) -> None:
        """Text typed while no field has focus (``input text``, a hardware keyboard's keys). Apps whose
        screens take key presses without a text field (the Calculator's keypad, the Clock's timer keypad)
        handle it; by default it goes nowhere, as on Android."""
        ...


class BaseApp:
    """Defaults for the optional hooks; apps subclass it and set the class attributes."""

    package = ""
    activity = ""
    label = ""
    icon = ""
    colour: Colour = (26, 115, 232)

    def defaults(self) -> Json:
        return {}

    def view(self, ctx: Context) -> list[Element]:
        raise NotImplementedError

    def on_launch(self, ctx: Context) -> None:
        return None

    def on_back(self, ctx: Context) -> bool:
        return False

    def on_dialog(self, ctx: Context, dialog: str, button: str) -> None:
        return None

    def open_url(self, ctx: Context, url: str) -> bool:
        return False

    def on_text(self, ctx: Context, text: str) -> None:
        return None


@dataclass(frozen=True)
class Context:
    """What an app's code may touch: its data, the top frame, navigation, fields, dialogs, time."""

    phone: Host
    app: App
    frame: Frame
    """The top frame of the app's back stack; changes persist."""

    # --- data ---
    @property
    def data(self) -> Json:
        """The app's own data (JSON; persists; part of snapshots and of ``phone.state()``)."""
        result: Json = self.phone.data["apps"][self.app.package]
        return result

    @property
    def screen(self) -> str:
        return str(self.frame["screen"])

    @property
    def args(self) -> Json:
        result: Json = self.frame["args"]
        return result

    @property
    def viewport_height(self) -> float:
        """Height of the content area in dp (between the status bar and the navigation bar)."""
        return self.phone.content_height

    @property
    def now(self) -> float:
        """Virtual seconds since the phone's epoch (``Phone.EPOCH``)."""
        return float(self.phone.data["clock_s"])

    def random(self) -> float:
        """A deterministic random number in [0, 1) from the phone's seeded stream."""
        return self.phone.random()

    def setting(self, namespace: str, key: str) -> str | None:
        return self.phone.get_setting(namespace, key)

    def put_setting(self, namespace: str, key: str, value: str) -> None:
        self.phone.put_setting(namespace, key, value)

    # --- navigation ---
    def push(self, screen: str, **args: Any) -> None:
        """Open ``screen`` on top of this one (BACK returns here)."""
        self.phone.push_frame(self.app.package, screen, args)

    def replace(self, screen: str, **args: Any) -> None:
        """Show ``screen`` instead of this one."""
        self.phone.replace_frame(self.app.package, screen, args)

    def back(self) -> None:
        """As if BACK was pressed."""
        self.phone.back()

    def launch(self, package: str) -> None:
        self.phone.launch(package)

    def set_loading(self, seconds: float) -> None:
        """The top frame shows a loading page for ``seconds`` of virtual time."""
        self.frame["loading_until"] = self.now + seconds

    @property
    def loading(self) -> bool:
        return bool(self.now < float(self.frame.get("loading_until", 0.0)))

    # --- text fields ---
    def field(self, field_id: str) -> str:
        """The text typed into ``field_id`` on this frame."""
        return str(self.frame["fields"].get(field_id, ""))

    def set_field(self, field_id: str, text: str) -> None:
        self.frame["fields"][field_id] = text

    def focus(self, field_id: str | None) -> None:
        """Focus ``field_id`` (the keyboard opens) or nothing (it closes)."""
        self.frame["focus"] = field_id

    @property
    def focused(self) -> str | None:
        value = self.frame.get("focus")
        return None if value is None else str(value)

    # --- dialogs and toasts ---
    def dialog(
        self, dialog_id: str, title: str, text: str, buttons: list[str], *, cancelable: bool = True
    ) -> None:
        """Open a modal dialog; a button tap calls ``App.on_dialog`` with its label."""
        self.frame["dialog"] = {
            "id": dialog_id,
            "title": title,
            "text": text,
            "buttons": list(buttons),
            "cancelable": cancelable,
        }

    def toast(self, text: str, seconds: float = 3.0) -> None:
        """A short message at the bottom of the screen."""
        self.phone.data["toast"] = {"text": text, "until": self.now + seconds}


def frame(screen: str, args: Mapping[str, Any] | None = None) -> Frame:
    """A new frame for ``screen``."""
    return {
        "screen": screen,
        "args": dict(args or {}),
        "scroll": 0.0,
        "focus": None,
        "fields": {},
        "dialog": None,
        "loading_until": 0.0,
    }
