"""The simulated phone: a deterministic Android-like state machine with real screens.

Everything the phone knows is one JSON object (``Phone.data``): settings, each app's data, each running
app's back stack of frames, the virtual clock and the random stream's position. Inputs change it,
``render`` draws it, ``snapshot``/``restore`` copy it, and ``state`` hands it to success checks. The
same seed and the same inputs give the same pixels on every machine.

Android behaviour kept on purpose: HOME shows the launcher and keeps apps running (launching one again
resumes where it was); BACK closes a dialog, then the keyboard, then the top screen, then the app;
typing goes to the focused field, or with none focused to the app in front, which drops it unless its
screen takes key presses (``App.on_text``: the Calculator, the Clock's timer keypad); the keyboard
covers the bottom of the screen; a page may still be loading when the next screenshot is taken. Time
is virtual: each input and each screenshot moves the clock by a fixed step (``INPUT_S``,
``SCREENSHOT_S``), so page loads and pop-ups play out the same way however fast the caller drives the
phone.
"""

from __future__ import annotations

import copy
import math
import random as _random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from PIL import Image

from distrl.actions import EndEpisode, Gesture, KeyEvent, Swipe, Tap, TypeText
from distrl.device.screen import encode
from distrl.sim import overlay
from distrl.sim.app import App, Context, Frame, Json, frame
from distrl.sim.apps import installed_apps
from distrl.sim.apps.launcher import Launcher
from distrl.sim.keyboard import KEYBOARD_HEIGHT, keyboard_elements
from distrl.sim.overlay import NAV_HEIGHT, STATUS_HEIGHT
from distrl.sim.ui import DP_WIDTH, Box, Element, Painter, Palette

__all__ = ["KEYCODES", "LAUNCHER", "Phone", "PhoneConfig"]

LAUNCHER = Launcher.package
INPUT_S = 1.0
"""Virtual seconds an input event takes (the finger, the UI settling)."""
SCREENSHOT_S = 1.0
"""Virtual seconds between an input and the screenshot after it (the agent's think time)."""
SNAPSHOT_FORMAT = "distrl-phone/1"

KEYCODES: Mapping[str, int] = {
    "KEYCODE_HOME": 3,
    "KEYCODE_BACK": 4,
    "KEYCODE_SPACE": 62,
    "KEYCODE_TAB": 61,
    "KEYCODE_ENTER": 66,
    "KEYCODE_DEL": 67,
    "KEYCODE_POWER": 26,
    "KEYCODE_VOLUME_UP": 24,
    "KEYCODE_VOLUME_DOWN": 25,
    "KEYCODE_APP_SWITCH": 187,
    "KEYCODE_WAKEUP": 224,
    "KEYCODE_MENU": 82,
    **{f"KEYCODE_{d}": 7 + d for d in range(10)},
    **{f"KEYCODE_{chr(65 + i)}": 29 + i for i in range(26)},
}
"""Android key codes by name (``input keyevent KEYCODE_HOME``)."""
_CHAR_KEYS = {7 + d: str(d) for d in range(10)} | {29 + i: chr(97 + i) for i in range(26)} | {62: " "}

DEFAULT_SETTINGS: Mapping[str, Mapping[str, str]] = {
    "global": {
        "airplane_mode_on": "0",
        "wifi_on": "1",
        "bluetooth_on": "0",
        "mobile_data": "1",
        "auto_time": "1",
        "device_name": "Pixel 6",
        "zen_mode": "0",
        "low_power": "0",
    },
    "system": {
        "screen_brightness": "128",
        "screen_brightness_mode": "0",
        "screen_off_timeout": "60000",
        "accelerometer_rotation": "1",
        "font_scale": "1.0",
        "volume_ring": "5",
        "volume_music": "7",
        "volume_alarm": "6",
    },
    "secure": {"location_mode": "3", "night_display_activated": "0", "dark_mode": "0"},
}


@dataclass(frozen=True, kw_only=True)
class PhoneConfig:
    """How a simulated phone looks and behaves."""

    width: int = 1080
    """Screen width in pixels."""
    height: int = 2400
    """Screen height in pixels."""
    seed: int = 0
    """Seed of the phone's random stream (pop-ups, page-load times, generated content)."""
    nuisances: bool = True
    """Pop-ups and slow page loads, as real phones have them; off for clean demonstrations."""
    model: str = "Pixel 6"
    """``ro.product.model``."""

    def __post_init__(self) -> None:
        if not (240 <= self.width <= 4096 and 320 <= self.height <= 8192):
            raise ValueError(f"screen {self.width}x{self.height} is outside 240x320 to 4096x8192")
        if self.height < self.width:
            raise ValueError(f"screen {self.width}x{self.height} must be portrait (height ≥ width)")


class Phone:
    """One simulated phone. Not thread-safe: one caller at a time (``SimDevice`` serialises).

    ``apps`` replaces the installed apps (the launcher is always there), for custom task suites.
    """

    EPOCH = datetime(2023, 10, 15, 15, 34, tzinfo=UTC)
    """What the virtual clock reads at zero (AndroidWorld freezes its devices at this moment)."""

    def __init__(self, config: PhoneConfig | None = None, *, apps: Sequence[App] | None = None) -> None:
        self.config = config or PhoneConfig()
        self.width = self.config.width
        self.height = self.config.height
        self.scale = self.width / DP_WIDTH
        self.screen_height = self.height / self.scale
        self.content_height = self.screen_height - STATUS_HEIGHT - NAV_HEIGHT
        chosen = installed_apps() if apps is None else [app for app in apps if app.package != LAUNCHER]
        if apps is not None:
            chosen.insert(0, Launcher())
        self.apps: dict[str, App] = {app.package: app for app in chosen}
        self.white = False
        self.booted = True
        """False while the phone boots: ``sys.boot_completed`` is empty and the package manager does
        not answer (``serve_phones(boot_s=...)``, as an emulator that has just started)."""
        self._version = 0
        self._rendered: tuple[int, Image.Image] | None = None
        self.data: Json = self._boot_data()

    # ------------------------------------------------------------------ identity
    @property
    def packages(self) -> Mapping[str, str]:
        return {pkg: app.label for pkg, app in self.apps.items()}

    @property
    def activities(self) -> Mapping[str, str]:
        return {pkg: app.activity for pkg, app in self.apps.items()}

    @property
    def props(self) -> Mapping[str, str]:
        return {
            "ro.product.model": self.config.model,
            "ro.product.name": "sdk_gphone64_x86_64",
            "ro.product.device": "emu64x",
            "ro.product.manufacturer": "Google",
            "ro.build.version.sdk": "33",
            "ro.build.version.release": "13",
            "ro.serialno": f"SIM{self.config.seed:08d}",
            "ro.kernel.qemu": "1",
            "sys.boot_completed": "1" if self.booted else "",
            "ro.sf.lcd_density": str(round(self.scale * 160)),
        }

    # ------------------------------------------------------------------ state
    def _boot_data(self) -> Json:
        return {
            "seed": self.config.seed,
            "rng": 0,
            "clock_s": 0.0,
            "settings": {ns: dict(values) for ns, values in DEFAULT_SETTINGS.items()},
            "apps": {pkg: app.defaults() for pkg, app in self.apps.items()},
            "tasks": {LAUNCHER: [frame("home")]},
            "recents": [LAUNCHER],
            "toast": None,
        }

    def state(self) -> Json:
        """A copy of everything the phone knows, plus ``top`` (package, screen, args) for convenience."""
        result = copy.deepcopy(self.data)
        top = self.top_frame
        result["top"] = {"package": self.top_package, "screen": top["screen"], "args": top["args"]}
        return result

    def snapshot(self) -> bytes:
        """The whole phone as JSON bytes; ``restore`` brings it back."""
        return orjson.dumps(
            {"format": SNAPSHOT_FORMAT, "config": [self.width, self.height], "data": self.data}
        )

    def restore(self, blob: bytes) -> None:
        """Go back to a ``snapshot``; a blob that is not one raises ValueError and changes nothing.

        Everything comes back except the position of the random stream, which goes on: pop-ups and page
        loads after a restore differ from those after the previous one, as on a real phone.
        """
        try:
            loaded = orjson.loads(blob)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not a phone snapshot: {exc}") from None
        if not isinstance(loaded, dict) or loaded.get("format") != SNAPSHOT_FORMAT:
            raise ValueError("not a phone snapshot (no 'format': 'distrl-phone/1')")
        if loaded.get("config") != [self.width, self.height]:
            raise ValueError(
                f"snapshot is of a {loaded.get('config')} screen, this phone is {self.width}x{self.height}"
            )
        data = loaded.get("data")
        if not isinstance(data, dict) or set(data) != set(self.data):
            raise ValueError("snapshot data does not match this phone's layout")
        data["rng"] = max(int(data["rng"]), int(self.data["rng"]))  # chance does not rewind
        self.data = data
        self._changed()

    def reboot(self) -> None:
        """Back to the state after a cold boot (every app's data reset; chance goes on where it was)."""
        position = self.data["rng"]
        self.data = self._boot_data()
        self.data["rng"] = position
        self.white = False
        self._changed()

    def random(self) -> float:
        """The next number of the phone's seeded random stream (its position is part of the state)."""
        position = int(self.data["rng"])
        self.data["rng"] = position + 1
        return _random.Random(f"{self.data['seed']}:{position}").random()

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass (``ValueError`` for a time that is no time: nan, infinite,
        or past a year in one step, which the phone's clock could not show)."""
        if not (math.isfinite(seconds) and seconds <= 365 * 86400):
            raise ValueError(f"cannot advance a phone's clock by {seconds} s")
        if seconds > 0:
            self.data["clock_s"] = float(self.data["clock_s"]) + seconds
            toast = self.data["toast"]
            if toast is not None and float(toast["until"]) <= self.data["clock_s"]:
                self.data["toast"] = None
            self._changed()

    @property
    def now(self) -> datetime:
        return self.EPOCH + timedelta(seconds=float(self.data["clock_s"]))

    def get_setting(self, namespace: str, key: str) -> str | None:
        value = self.data["settings"].get(namespace, {}).get(key)
        return None if value is None else str(value)

    def put_setting(self, namespace: str, key: str, value: str) -> None:
        if namespace not in self.data["settings"]:
            raise KeyError(namespace)
        self.data["settings"][namespace][key] = str(value)
        self._changed()

    def _changed(self) -> None:
        self._version += 1

    # ------------------------------------------------------------------ navigation
    @property
    def top_package(self) -> str:
        return str(self.data["recents"][-1])

    @property
    def top_frame(self) -> Frame:
        frames: list[Frame] = self.data["tasks"][self.top_package]
        return frames[-1]

    def context(self, package: str | None = None) -> Context:
        pkg = package or self.top_package
        frames = self.data["tasks"].get(pkg)
        if not frames:
            frames = self.data["tasks"][pkg] = [frame("main")]
        return Context(self, self.apps[pkg], frames[-1])

    def focus(self) -> str:
        """The focused window as ``dumpsys window`` names it: ``package/activity``."""
        app = self.apps[self.top_package]
        return f"{app.package}/{app.activity}"

    def launch(self, package: str, activity: str | None = None) -> None:
        """Start ``package`` (or bring it to the front, where it was); KeyError when not installed."""
        app = self.apps[package]
        del activity  # every app has one launcher activity
        recents: list[str] = self.data["recents"]
        fresh = package not in self.data["tasks"]
        if fresh:
            self.data["tasks"][package] = [frame("main")]
        if package in recents:
            recents.remove(package)
        recents.append(package)
        if fresh:
            app.on_launch(self.context(package))
        self._changed()

    def force_stop(self, package: str) -> None:
        """``am force-stop``: the app's back stack goes; its data stays."""
        if package not in self.apps:
            raise KeyError(package)
        if package != LAUNCHER:
            self.data["tasks"].pop(package, None)
            recents: list[str] = self.data["recents"]
            if package in recents:
                recents.remove(package)
        self._changed()

    def clear_data(self, package: str) -> None:
        """``pm clear``: the app stops and its data goes back to defaults."""
        self.force_stop(package)
        self.data["apps"][package] = self.apps[package].defaults()
        self._changed()

    def open_url(self, url: str) -> None:
        """A VIEW intent: the first app that handles ``url`` (the browser) comes to the front with it."""
        for package, app in self.apps.items():
            if package == LAUNCHER:
                continue
            if package not in self.data["tasks"]:
                self.data["tasks"][package] = [frame("main")]
            if app.open_url(self.context(package), url):
                self.launch(package)
                return
            if self.data["tasks"][package] == [frame("main")] and package not in self.data["recents"]:
                del self.data["tasks"][package]
        raise KeyError(f"no app opens {url!r}")

    def push_frame(self, package: str, screen: str, args: Mapping[str, Any]) -> None:
        self.data["tasks"][package].append(frame(screen, args))
        self._changed()

    def replace_frame(self, package: str, screen: str, args: Mapping[str, Any]) -> None:
        self.data["tasks"][package][-1] = frame(screen, args)
        self._changed()

    def home(self) -> None:
        self.launch(LAUNCHER)
        self.data["tasks"][LAUNCHER] = [frame("home")]

    def back(self) -> None:
        """BACK: dialog, then keyboard, then the app's own handling, then the top screen, then the app."""
        top = self.top_frame
        ctx = self.context()
        if top["dialog"] is not None:
            if top["dialog"].get("cancelable", True):
                top["dialog"] = None
        elif top["focus"] is not None:
            top["focus"] = None
        elif ctx.app.on_back(ctx):
            pass
        else:
            frames: list[Frame] = self.data["tasks"][self.top_package]
            if len(frames) > 1:
                frames.pop()
            elif self.top_package != LAUNCHER:
                self.force_stop(self.top_package)
        self._changed()

    # ------------------------------------------------------------------ input
    def tap(self, x: float, y: float) -> None:
        """A tap at pixel ``(x, y)``: the topmost tappable or opaque element there takes it."""
        self._input()
        if not (0 <= x < self.width and 0 <= y < self.height):
            return
        hit = self._hit(x / self.scale, y / self.scale)
        if hit is None:
            return
        element, box = hit
        if element.on_set is not None:
            element.on_set(min(1.0, max(0.0, (x / self.scale - box.x0) / max(box.width, 1e-9))))
        elif element.on_tap is not None:
            element.on_tap()
        self._changed()

    def swipe(self, x0: float, y0: float, x1: float, y1: float, duration_ms: int = 300) -> None:
        """A swipe in pixels: drags a slider, else scrolls the content; a very short one is a tap."""
        del duration_ms
        s = self.scale
        if abs(x1 - x0) < 8 * s and abs(y1 - y0) < 8 * s:
            self.tap(x0, y0)
            return
        self._input()
        hit = self._hit(x0 / s, y0 / s)
        if hit is not None and hit[0].on_set is not None:
            _, box = hit
            hit[0].on_set(min(1.0, max(0.0, (x1 / s - box.x0) / max(box.width, 1e-9))))
            self._changed()
            return
        top = self.top_frame
        if top["dialog"] is not None or abs(y1 - y0) < abs(x1 - x0):
            return
        top["scroll"] = min(self._max_scroll(), max(0.0, float(top["scroll"]) + (y0 - y1) / s))
        self._changed()

    def perform(self, gesture: Gesture) -> None:
        """Do a device gesture (``distrl.actions.to_gesture``); ending the episode does nothing here."""
        match gesture:
            case Tap(x, y):
                self.tap(x, y)
            case Swipe(x1, y1, x2, y2, ms):
                self.swipe(x1, y1, x2, y2, ms)
            case TypeText(text):
                self.type_text(text)
            case KeyEvent(code):
                self.key(code)
            case EndEpisode():
                pass

    def type_text(self, text: str) -> None:
        """Type ``text`` into the focused field; with nothing focused the app in front gets the keys
        (``App.on_text``), which most apps drop, as on Android."""
        self._input()
        self.insert_text(text)

    def key(self, keycode: int) -> None:
        """An Android key event; unknown codes do nothing."""
        self._input()
        if keycode == 3:
            self.home()
        elif keycode == 4:
            self.back()
        elif keycode == 187:
            self.launch(LAUNCHER)
            self.data["tasks"][LAUNCHER] = [frame("home"), frame("recents")]
        elif keycode == 66:
            self.submit()
        elif keycode == 67:
            self.delete_char()
        elif keycode in _CHAR_KEYS:
            self.insert_text(_CHAR_KEYS[keycode])
        self._changed()

    def insert_text(self, text: str) -> None:
        """Add ``text`` to the focused field, with no time passing (the keyboard's keys use it).

        With no field focused the keys go to the app's screen (``App.on_text``), unless a dialog or a
        loading page is in front of it.
        """
        top = self.top_frame
        focus = top["focus"]
        clean = "".join(ch for ch in text if ch.isprintable())
        if not clean:
            return
        if focus is None:
            ctx = self.context()
            if top["dialog"] is None and not ctx.loading:
                ctx.app.on_text(ctx, clean)
                self._changed()
            return
        top["fields"][focus] = str(top["fields"].get(focus, "")) + clean
        self._changed()

    def delete_char(self) -> None:
        """Delete the focused field's last character."""
        top = self.top_frame
        focus = top["focus"]
        if focus is not None:
            top["fields"][focus] = str(top["fields"].get(focus, ""))[:-1]
            self._changed()

    def submit(self) -> None:
        """ENTER: the focused field's ``on_submit`` gets its text, and the keyboard closes."""
        top = self.top_frame
        focus = top["focus"]
        if focus is None:
            return
        for element in self._content():
            if element.id == focus and element.on_submit is not None:
                top["focus"] = None
                element.on_submit(str(top["fields"].get(focus, "")))
                self._changed()
                return

    def _input(self) -> None:
        self.advance(INPUT_S)

    # ------------------------------------------------------------------ screen
    def _content(self) -> list[Element]:
        ctx = self.context()
        if ctx.loading:
            return overlay.loading_view(ctx)
        return ctx.app.view(ctx)

    def _max_scroll(self) -> float:
        bottom = max((e.box.y1 for e in self._content() if not e.fixed), default=0.0)
        return max(0.0, bottom + 16 - self.content_height)

    def layers(self) -> list[tuple[Element, Box]]:
        """Everything on screen in drawing order, with each element's box in screen dp."""
        top = self.top_frame
        scroll = float(top["scroll"])
        placed: list[tuple[Element, Box]] = []
        content = self._content()
        viewport = Box(0, STATUS_HEIGHT, DP_WIDTH, STATUS_HEIGHT + self.content_height)
        for element in content:
            if not element.fixed:
                box = element.box.shifted(STATUS_HEIGHT - scroll)
                if box.overlaps(viewport):
                    placed.append((element, box))
        placed.extend((e, e.box.shifted(STATUS_HEIGHT)) for e in content if e.fixed)
        ctx = self.context()
        if top["focus"] is not None and top["dialog"] is None:
            kb_top = STATUS_HEIGHT + self.content_height - KEYBOARD_HEIGHT
            placed.extend((e, e.box.shifted(kb_top)) for e in keyboard_elements(self, ctx))
        placed.extend(overlay.toast(self))
        if top["dialog"] is not None:
            placed.extend(overlay.dialog(self, ctx, top["dialog"]))
        placed.extend(overlay.system_bars(self))
        return placed

    def elements(self) -> list[Element]:
        """What is on screen, each element with its box in pixels, in drawing order."""
        return [_with_box(element, box.scaled(self.scale)) for element, box in self.layers()]

    def _hit(self, x_dp: float, y_dp: float) -> tuple[Element, Box] | None:
        for element, box in reversed(self.layers()):
            if not box.contains(x_dp, y_dp):
                continue
            if element.tappable:
                return element, box
            if element.fill is not None or element.kind in ("button", "field", "card", "key", "bar"):
                return None  # opaque and inert: the tap stops here
        return None

    def render(self) -> Image.Image:
        """The screen as an RGB image (cached until the phone changes)."""
        if self.white:
            return Image.new("RGB", (self.width, self.height), (255, 255, 255))
        if self._rendered is not None and self._rendered[0] == self._version:
            return self._rendered[1]
        image = Image.new("RGB", (self.width, self.height), Palette.BACKGROUND)
        painter = Painter(image, self.scale)
        for element, box in self.layers():
            painter.element(_with_box(element, box))
        self._rendered = (self._version, image)
        return image

    def capture(self) -> Image.Image:
        """The screen as a screenshot sees it: time passes as it would between agent steps, then
        ``render``."""
        self.advance(SCREENSHOT_S)
        return self.render()

    def screenshot(self, fmt: str = "png", quality: int = 85) -> bytes:
        """``capture`` encoded as ``png`` or ``jpeg`` (``image.encode``)."""
        return encode(self.capture(), fmt, quality)


def _with_box(element: Element, box: Box) -> Element:
    from dataclasses import replace

    return replace(element, box=box, fixed=True)
