"""The simulated phone's core: input, navigation, fields, dialogs, scrolling, time, snapshots, rendering."""

from __future__ import annotations

import functools
import io
import math

import pytest
from PIL import Image, ImageChops
from support import tap

from distrl.sim.app import BaseApp, Context
from distrl.sim.phone import LAUNCHER, Phone, PhoneConfig
from distrl.sim.ui import Box, Element

PKG = "org.example.notes"


class NotesApp(BaseApp):
    """A small app that uses every phone feature: a field, a second screen, a long list, a dialog."""

    package = PKG
    activity = ".Main"
    label = "Notes"
    icon = "N"

    def defaults(self) -> dict[str, object]:
        return {"saved": [], "taps": 0, "level": 0.5, "answer": ""}

    def view(self, ctx: Context) -> list[Element]:
        if ctx.screen == "detail":
            return [Element(id="notes/detail", box=Box(0, 0, 412, 60), text=f"Note {ctx.args['n']}")]

        def tapped() -> None:
            ctx.data["taps"] += 1

        def save(text: str) -> None:
            ctx.data["saved"].append(text)
            ctx.set_field("notes/title", "")

        def level(value: float) -> None:
            ctx.data["level"] = value

        out = [
            Element(id="notes/bar", box=Box(0, 0, 412, 56), kind="bar", text="Notes", fixed=True),
            Element(
                id="notes/title",
                box=Box(16, 70, 396, 118),
                kind="field",
                text=ctx.field("notes/title"),
                hint="Title",
                on_tap=lambda: ctx.focus("notes/title"),
                on_submit=save,
            ),
            Element(id="notes/count", box=Box(16, 130, 200, 170), kind="button", text="Tap", on_tap=tapped),
            Element(
                id="notes/ask",
                box=Box(210, 130, 396, 170),
                kind="button",
                text="Ask",
                on_tap=lambda: ctx.dialog("ask", "Sure?", "Really?", ["No", "Yes"]),
            ),
            Element(
                id="notes/level",
                box=Box(16, 180, 396, 220),
                kind="slider",
                value=ctx.data["level"],
                on_set=level,
            ),
        ]
        for n in range(40):
            out.append(
                Element(
                    id=f"notes/item/{n}",
                    box=Box(16, 240 + n * 60, 396, 290 + n * 60),
                    kind="card",
                    text=f"Note {n}",
                    on_tap=functools.partial(ctx.push, "detail", n=n),
                )
            )
        return out

    def on_dialog(self, ctx: Context, dialog: str, button: str) -> None:
        ctx.data["answer"] = button


def _phone(**kw: object) -> Phone:
    return Phone(PhoneConfig(**kw), apps=[NotesApp()])  # type: ignore[arg-type]


def _notes(phone: Phone) -> dict[str, object]:
    data: dict[str, object] = phone.state()["apps"][PKG]
    return data


def test_launcher_icon_opens_the_app_and_home_keeps_it_running() -> None:
    phone = _phone()
    assert phone.state()["top"]["package"] == LAUNCHER
    tap(phone, f"launcher/app/{PKG}")
    assert phone.focus() == f"{PKG}/.Main"
    tap(phone, "notes/item/0")
    assert phone.state()["top"]["screen"] == "detail"
    phone.key(3)  # HOME
    assert phone.state()["top"]["package"] == LAUNCHER
    phone.launch(PKG)  # resumes where it was, as Android does
    assert phone.state()["top"] == {"package": PKG, "screen": "detail", "args": {"n": 0}}
    phone.force_stop(PKG)
    phone.launch(PKG)
    assert phone.state()["top"]["screen"] == "main"


def test_back_closes_dialog_then_keyboard_then_screen_then_app() -> None:
    phone = _phone()
    phone.launch(PKG)
    tap(phone, "notes/item/3")
    phone.key(4)
    assert phone.state()["top"]["screen"] == "main"
    tap(phone, "notes/title")
    assert any(e.id == "keyboard/q" for e in phone.elements())
    tap(phone, "notes/ask")  # the keyboard does not cover the button
    assert phone.state()["tasks"][PKG][-1]["dialog"]["title"] == "Sure?"
    phone.key(4)
    assert phone.state()["tasks"][PKG][-1]["dialog"] is None
    assert phone.state()["tasks"][PKG][-1]["focus"] == "notes/title"
    phone.key(4)
    assert phone.state()["tasks"][PKG][-1]["focus"] is None
    phone.key(4)
    assert phone.state()["top"]["package"] == LAUNCHER
    assert PKG not in phone.state()["tasks"]


def test_dialog_is_modal_and_its_buttons_answer() -> None:
    phone = _phone()
    phone.launch(PKG)
    tap(phone, "notes/ask")
    count = next(e for e in phone.elements() if e.id == "notes/count")
    phone.tap(*count.box.centre)  # outside the dialog: dismisses it, does not reach the button
    assert _notes(phone)["taps"] == 0
    assert phone.state()["tasks"][PKG][-1]["dialog"] is None
    tap(phone, "notes/ask")
    tap(phone, "dialog/button/Yes")
    assert _notes(phone)["answer"] == "Yes"


def test_typing_goes_to_the_focused_field_only() -> None:
    phone = _phone()
    phone.launch(PKG)
    phone.type_text("lost")
    assert phone.state()["tasks"][PKG][-1]["fields"] == {}
    tap(phone, "notes/title")
    phone.type_text("milk")
    tap(phone, "keyboard/s")  # on-screen keys type too
    phone.key(67)  # DEL
    phone.key(62)  # SPACE
    phone.type_text("eggs\x00")
    phone.key(66)  # ENTER submits and closes the keyboard
    assert _notes(phone)["saved"] == ["milk eggs"]
    assert not any(e.id.startswith("keyboard/") for e in phone.elements())


def test_taps_hit_the_top_element_and_stop_at_opaque_ones() -> None:
    phone = _phone()
    phone.launch(PKG)
    tap(phone, "notes/count")
    assert _notes(phone)["taps"] == 1
    bar = next(e for e in phone.elements() if e.id == "notes/bar")
    phone.tap(*bar.box.centre)
    phone.tap(-5, 10)
    phone.tap(phone.width + 10, 10)
    assert _notes(phone)["taps"] == 1


def test_swipe_up_scrolls_content_under_a_fixed_bar_and_stops_at_the_end() -> None:
    phone = _phone()
    phone.launch(PKG)
    before = {e.id: e.box for e in phone.elements()}
    x = phone.width / 2
    phone.swipe(x, phone.height * 0.8, x, phone.height * 0.3)
    after = {e.id: e.box for e in phone.elements()}
    assert after["notes/bar"] == before["notes/bar"]
    assert after["notes/item/5"].y0 < before["notes/item/5"].y0
    for _ in range(20):
        phone.swipe(x, phone.height * 0.8, x, phone.height * 0.2)
    last = next(e for e in phone.elements() if e.id == "notes/item/39")
    assert last.box.y1 < phone.height * 0.98
    for _ in range(30):
        phone.swipe(x, phone.height * 0.2, x, phone.height * 0.8)
    assert phone.state()["tasks"][PKG][-1]["scroll"] == 0.0


def test_slider_takes_taps_and_drags() -> None:
    phone = _phone()
    phone.launch(PKG)
    slider = next(e for e in phone.elements() if e.id == "notes/level")
    y = slider.box.centre[1]
    phone.tap(slider.box.x0 + slider.box.width * 0.25, y)
    assert _notes(phone)["level"] == pytest.approx(0.25, abs=0.01)
    phone.swipe(slider.box.x0 + 5, y, slider.box.x1 + 50, y)
    assert _notes(phone)["level"] == 1.0


def test_snapshot_restore_is_exact_and_bad_blobs_change_nothing() -> None:
    phone = _phone(seed=3)
    phone.launch(PKG)
    tap(phone, "notes/count")
    blob = phone.snapshot()
    pixels = phone.render().tobytes()
    tap(phone, "notes/item/1")
    phone.put_setting("global", "wifi_on", "0")
    phone.restore(blob)
    assert phone.render().tobytes() == pixels
    assert phone.get_setting("global", "wifi_on") == "1"
    state = phone.state()
    for bad in (b"", b"{}", b"[1]", b"\xff", blob.replace(b"distrl-phone/1", b"other/1")):
        with pytest.raises(ValueError, match="snapshot"):
            phone.restore(bad)
        assert phone.state() == state
    with pytest.raises(ValueError, match="screen"):
        _phone(width=720, height=1600).restore(blob)


def test_same_seed_same_pixels_and_clear_data() -> None:
    a, b = _phone(seed=7), _phone(seed=7)
    for phone in (a, b):
        phone.launch(PKG)
        tap(phone, "notes/count")
    assert a.render().tobytes() == b.render().tobytes()
    a.clear_data(PKG)
    assert _notes(a)["taps"] == 0
    assert a.state()["top"]["package"] == LAUNCHER


def test_screenshots_are_images_of_the_screen_and_time_passes() -> None:
    phone = _phone(width=540, height=1200)
    start = phone.state()["clock_s"]
    png = Image.open(io.BytesIO(phone.screenshot("png")))
    jpeg = Image.open(io.BytesIO(phone.screenshot("jpeg", quality=90)))
    assert png.size == jpeg.size == (540, 1200)
    assert ImageChops.difference(png.convert("RGB"), phone.render()).getbbox() is None
    assert phone.state()["clock_s"] > start
    with pytest.raises(ValueError, match="format"):
        phone.screenshot("gif")
    phone.white = True
    assert phone.render().getextrema() == ((255, 255), (255, 255), (255, 255))


def test_loading_pages_block_taps_until_time_passes() -> None:
    phone = _phone()
    phone.launch(PKG)
    ctx = phone.context(PKG)
    ctx.set_loading(3.0)
    assert any(e.id == "system/loading_page" for e in phone.elements())
    tap(phone, "system/loading_page")
    phone.advance(5.0)
    assert not any(e.id == "system/loading_page" for e in phone.elements())
    tap(phone, "notes/count")
    assert _notes(phone)["taps"] == 1


@pytest.mark.parametrize("seconds", [math.inf, math.nan, 1e12])
def test_a_time_that_is_no_time_is_refused_and_the_phone_goes_on(seconds: float) -> None:
    """inf and 1e12 s were taken, then every screenshot overflowed the clock; nan passed silently."""
    phone = _phone()
    before = phone.now
    with pytest.raises(ValueError, match="cannot advance a phone's clock by"):
        phone.advance(seconds)
    assert phone.now == before
    phone.screenshot()


def test_recents_key_lists_running_apps() -> None:
    phone = _phone()
    phone.launch(PKG)
    phone.key(187)
    tap(phone, f"launcher/recent/{PKG}")
    assert phone.state()["top"]["package"] == PKG


@pytest.mark.parametrize(("width", "height"), [(100, 200), (2000, 1000), (5000, 9000)])
def test_config_rejects_impossible_screens(width: int, height: int) -> None:
    with pytest.raises(ValueError, match="screen"):
        PhoneConfig(width=width, height=height)


def test_unknown_packages_raise_key_error() -> None:
    phone = _phone()
    for call in (phone.launch, phone.force_stop, phone.clear_data):
        with pytest.raises(KeyError):
            call("no.such.app")
    with pytest.raises(KeyError):
        phone.open_url("https://example.com/")
