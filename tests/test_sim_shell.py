"""The simulated phone's Android shell: every command, what clients parse from it, and bad input."""

from __future__ import annotations

import io
import json
import re
import shlex
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageChops

from distrl.sim.latency import Op
from distrl.sim.phone import SCREENSHOT_S, Phone, PhoneConfig
from distrl.sim.shell import ShellResult, run_shell, shell_ops

SETTINGS = "com.android.settings"
CLOCK = "com.google.android.deskclock"


@pytest.fixture
def phone() -> Phone:
    return Phone(PhoneConfig(width=1080, height=2400, seed=0))


def sh(phone: Phone, command: str) -> tuple[str, int]:
    result = run_shell(phone, command)
    return result.output.decode(), result.exit_code


def spy(monkeypatch: pytest.MonkeyPatch, phone: Phone, name: str) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    real: Callable[..., Any] = getattr(phone, name)

    def record(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(phone, name, record)
    return calls


# -- the shell itself -----------------------------------------------------------------------------------


def test_chains_and_exit_status(phone: Phone) -> None:
    assert sh(phone, "echo a; echo b") == ("a\nb\n", 0)
    assert sh(phone, "false && echo no; echo $?") == ("1\n", 0)
    assert sh(phone, "false || echo yes") == ("yes\n", 0)
    assert sh(phone, "true && echo yes || echo no") == ("yes\n", 0)
    assert sh(phone, "false; true") == ("", 0)
    assert sh(phone, "true; false") == ("", 1)
    assert sh(phone, "echo first; exit 3; echo never") == ("first\n", 3)
    assert sh(phone, "exit") == ("", 0)
    assert sh(phone, "") == ("", 0)
    assert sh(phone, "/system/bin/echo path") == ("path\n", 0)


def test_the_adbutils_exit_marker(phone: Phone) -> None:
    assert sh(phone, "wm size; echo X4EXIT:$?") == ("Physical size: 1080x2400\nX4EXIT:0\n", 0)
    assert sh(phone, "nope; echo X4EXIT:$?")[0].endswith("X4EXIT:127\n")
    assert sh(phone, "false; echo '$?' \"$?\" x$?y") == ("$? 1 x1y\n", 0)


def test_quoting(phone: Phone) -> None:
    assert sh(phone, "echo 'a  b' \"c;d\" e\\ f") == ("a  b c;d e f\n", 0)
    assert sh(phone, "echo -n no newline") == ("no newline", 0)
    assert sh(phone, "echo a#b") == ("a#b\n", 0)


def test_quoted_operators_are_text(phone: Phone) -> None:
    assert sh(phone, "echo ';' \"&&\" '||' '|' a\\&b 'x&y'") == ("; && || | a&b x&y\n", 0)
    assert sh(phone, "echo a';'b; echo \"c;\"d") == ("a;b\nc;d\n", 0)
    assert sh(phone, "false || echo '&&'; echo $?") == ("&&\n0\n", 0)


@pytest.mark.parametrize("text", [";", "&&", "||", "|", "&", "a;b", "x & y", "#tag", "it's", "a\\b", "$?"])
def test_input_text_types_what_adb_device_quotes(
    phone: Phone, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    texts = spy(monkeypatch, phone, "type_text")
    command = "input text " + shlex.quote(text.replace(" ", "%s"))  # as AdbDevice sends a TYPE
    assert sh(phone, command) == ("", 0)
    assert texts == [(text,)]


def test_comments(phone: Phone) -> None:
    assert sh(phone, "echo hi # a comment; echo not run") == ("hi\n", 0)
    assert sh(phone, "echo a;# echo b") == ("a\n", 0)
    assert sh(phone, "# all comment") == ("", 0)
    assert sh(phone, "echo a#b '#c' \\#d \"#e\"") == ("a#b #c #d #e\n", 0)
    assert sh(phone, "echo a # comment\necho b") == ("a\nb\n", 0)


def test_newlines_and_continuations(phone: Phone) -> None:
    assert sh(phone, "echo a\n\necho b\n") == ("a\nb\n", 0)
    assert sh(phone, "false &&\necho no\necho $?") == ("1\n", 0)
    assert sh(phone, 'echo a\\\nb "c\\\nd"') == ("ab cd\n", 0)
    assert sh(phone, "echo '\\' \"\\\\ \\$? \\x\" end\\") == ("\\ \\ $? \\x end\\\n", 0)


@pytest.mark.parametrize(
    "line",
    ["echo 'open", 'echo "open', "; ;", "&& echo x", "echo a ||", "echo a |", "a & b", "echo a\n;", "a;;"],
)
def test_syntax_errors(phone: Phone, line: str) -> None:
    output, status = sh(phone, line)
    assert status == 2
    assert output.startswith("/system/bin/sh: syntax error: ")


def test_unknown_commands(phone: Phone) -> None:
    assert sh(phone, "frobnicate --now") == ("/system/bin/sh: frobnicate: inaccessible or not found\n", 127)
    assert sh(phone, "echo ok; ls /sdcard")[1] == 127


# -- screen ---------------------------------------------------------------------------------------------


def test_screencap_png_is_the_screen(phone: Phone) -> None:
    output, status = run_shell(phone, "screencap -p").output, run_shell(phone, "echo").exit_code
    image = Image.open(io.BytesIO(output))
    assert (image.format, image.size, status) == ("PNG", (1080, 2400), 0)
    assert ImageChops.difference(image.convert("RGB"), phone.render()).getbbox() is None
    assert run_shell(phone, "screencap -d 0 -p").output.startswith(b"\x89PNG")


def test_screencap_raw(phone: Phone) -> None:
    output = run_shell(phone, "screencap").output
    width, height, fmt = struct.unpack_from("<3I", output)
    assert (width, height, fmt, len(output)) == (1080, 2400, 1, 12 + 1080 * 2400 * 4)
    pixels = Image.frombytes("RGBA", (width, height), output[12:]).convert("RGB")
    assert ImageChops.difference(pixels, phone.render()).getbbox() is None


def test_screencap_raw_moves_the_clock_as_png_does(phone: Phone) -> None:
    start = phone.state()["clock_s"]
    run_shell(phone, "screencap")
    raw = phone.state()["clock_s"]
    run_shell(phone, "screencap -p")
    assert raw - start == phone.state()["clock_s"] - raw == SCREENSHOT_S


def test_screencap_bad_arguments(phone: Phone) -> None:
    assert sh(phone, "screencap -x")[0].startswith("usage: screencap")
    assert sh(phone, "screencap -x")[1] == 1
    assert sh(phone, "screencap -d 7 -p") == ("Display Id '7' is not valid.\n", 1)
    assert sh(phone, "screencap -p /sdcard/s.png")[1] == 1


def test_white_frame_capture(phone: Phone) -> None:
    phone.white = True
    image = Image.open(io.BytesIO(run_shell(phone, "screencap -p").output))
    assert image.getextrema() == ((255, 255), (255, 255), (255, 255))


# -- input ----------------------------------------------------------------------------------------------


def test_input_gestures_reach_the_phone(phone: Phone, monkeypatch: pytest.MonkeyPatch) -> None:
    taps, swipes = spy(monkeypatch, phone, "tap"), spy(monkeypatch, phone, "swipe")
    assert sh(phone, "input tap 540 1200.5") == ("", 0)
    assert sh(phone, "input touchscreen tap 1 2") == ("", 0)
    assert sh(phone, "input -d 0 tap 3 4") == ("", 0)
    assert sh(phone, "input swipe 500 2000 500 600") == ("", 0)
    assert sh(phone, "input swipe 100 2000 100 800 150") == ("", 0)
    assert sh(phone, "input draganddrop 100 1500 900 1500 50") == ("", 0)
    assert taps == [(540.0, 1200.5), (1.0, 2.0), (3.0, 4.0)]
    assert swipes == [
        (500.0, 2000.0, 500.0, 600.0, 300),
        (100.0, 2000.0, 100.0, 800.0, 150),
        (100.0, 1500.0, 900.0, 1500.0, 50),
    ]


def test_input_text_both_spellings_of_a_space(phone: Phone, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = spy(monkeypatch, phone, "type_text")
    sh(phone, "input text hello%sworld")  # DigiRL / DistRL
    sh(phone, "input text 'hello world'")  # adbutils' send_keys
    sh(phone, 'input text "it\'s"')
    sh(phone, "input text one two")  # Android types the first argument only
    assert texts == [("hello world",), ("hello world",), ("it's",), ("one",)]


def test_input_keyevents(phone: Phone, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = spy(monkeypatch, phone, "key")
    assert sh(phone, "input keyevent 3") == ("", 0)
    assert sh(phone, "input keyevent KEYCODE_BACK ENTER keycode_del --longpress 187 NO_SUCH_KEY") == ("", 0)
    assert keys == [(3,), (4,), (66,), (67,), (187,), (0,)]


def test_home_and_back_move_the_phone(phone: Phone) -> None:
    sh(phone, f"am start -n {SETTINGS}/.Settings")
    assert phone.focus().startswith(SETTINGS)
    sh(phone, "input keyevent KEYCODE_HOME")
    assert not phone.focus().startswith(SETTINGS)


@pytest.mark.parametrize(
    "line",
    [
        "input tap 1",
        "input tap x 2",
        "input tap nan 2",
        "input swipe 1 2 3",
        "input swipe 1 2 3 4 1.5",
        "input text",
        "input keyevent",
        "input keyevent --longpress",
    ],
)
def test_input_bad_arguments(phone: Phone, line: str) -> None:
    output, status = sh(phone, line)
    assert status == 255
    assert "java.lang.IllegalArgumentException: Error: Invalid arguments for command" in output


@pytest.mark.parametrize("line", ["input", "input fly 1 2", "input keyboard"])
def test_input_usage(phone: Phone, line: str) -> None:
    output, status = sh(phone, line)
    assert status == 1
    assert output.startswith("Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]")


# -- what clients parse ---------------------------------------------------------------------------------


def test_wm(phone: Phone) -> None:
    assert sh(phone, "wm size") == ("Physical size: 1080x2400\n", 0)
    assert re.fullmatch(r"Physical density: \d+\n", sh(phone, "wm density")[0])
    assert sh(phone, "wm fly")[1] == 255


def test_dumpsys_display_as_adbutils_reads_it(phone: Phone) -> None:
    output, status = sh(phone, "dumpsys display")
    assert status == 0
    first = next(line for line in output.splitlines() if re.search(r"orientation=\d+", line))
    assert "orientation=0," in first  # adbutils' rotation(): the first orientation= wins
    viewport = re.compile(
        r".*DisplayViewport{.*?valid=true, .*?orientation=(?P<orientation>\d+), "
        r".*?deviceWidth=(?P<width>\d+), deviceHeight=(?P<height>\d+).*"
    )
    match = viewport.search(output)
    assert match is not None
    assert (match["orientation"], match["width"], match["height"]) == ("0", "1080", "2400")
    assert "real 1080 x 2400" in output


def test_dumpsys_window_as_adbutils_reads_it(phone: Phone) -> None:
    focused = re.compile(r"mCurrentFocus=Window{.*\s+(?P<package>[^\s]+)/(?P<activity>[^\s]+)\}")
    for command, package, activity in (
        (f"am start -n {SETTINGS}/.Settings", SETTINGS, f"{SETTINGS}.Settings"),
        (f"monkey -p {CLOCK} -c android.intent.category.LAUNCHER 1", CLOCK, phone.activities[CLOCK]),
    ):
        assert sh(phone, command)[1] == 0
        for dump in ("dumpsys window", "dumpsys window windows"):
            match = focused.search(sh(phone, dump)[0])
            assert match is not None
            assert (match["package"], match["activity"]) == (package, activity)
    resumed = re.search(
        r"mResumedActivity: ActivityRecord\{.*?\s+(?P<package>[^\s]+)/", sh(phone, "dumpsys activity")[0]
    )
    assert resumed is not None
    assert resumed["package"] == CLOCK


def test_dumpsys_distrl_is_the_phone_state(phone: Phone) -> None:
    sh(phone, "settings put global wifi_on 0")
    output, status = sh(phone, "dumpsys distrl")
    assert status == 0
    assert json.loads(output) == json.loads(json.dumps(phone.state()))
    assert json.loads(output)["settings"]["global"]["wifi_on"] == "0"


def test_dumpsys_services(phone: Phone) -> None:
    assert sh(phone, "dumpsys no_such_service") == ("Can't find service: no_such_service\n", 0)
    listing = sh(phone, "dumpsys")[0]
    assert listing.startswith("Currently running services:")
    assert "  window\n" in listing


def test_getprop(phone: Phone) -> None:
    assert sh(phone, "getprop ro.product.model") == ("Pixel 6\n", 0)
    assert sh(phone, "getprop ro.build.version.sdk") == ("33\n", 0)
    assert sh(phone, "getprop no.such.prop") == ("\n", 0)
    assert sh(phone, "getprop no.such.prop fallback") == ("fallback\n", 0)
    lines = sh(phone, "getprop")[0].splitlines()
    assert "[ro.product.model]: [Pixel 6]" in lines
    assert all(re.fullmatch(r"\[[^\]]+\]: \[.*\]", line) for line in lines)
    assert lines == sorted(lines)


def test_settings(phone: Phone) -> None:
    assert sh(phone, "settings get global wifi_on") == ("1\n", 0)
    assert sh(phone, "settings put global wifi_on 0") == ("", 0)
    assert sh(phone, "settings get global wifi_on") == ("0\n", 0)
    assert phone.get_setting("global", "wifi_on") == "0"
    assert sh(phone, "settings get secure no_such_key") == ("null\n", 0)
    assert sh(phone, "settings get GLOBAL wifi_on") == ("0\n", 0)
    for bad in (
        "settings",
        "settings get global",
        "settings get nowhere wifi_on",
        "settings put global k",
        "settings list",
    ):
        output, status = sh(phone, bad)
        assert status == 255, bad
        assert output.startswith("usage:  settings")


# -- apps -----------------------------------------------------------------------------------------------


def test_am_start_component(phone: Phone) -> None:
    assert sh(phone, f"am start -n {SETTINGS}/.Settings") == (
        f"Starting: Intent {{ cmp={SETTINGS}/.Settings }}\n",
        0,
    )
    assert phone.focus() == f"{SETTINGS}/.Settings"
    sh(phone, "input keyevent HOME")
    assert sh(phone, f"am start -n {SETTINGS}/{SETTINGS}.Settings")[1] == 0
    assert phone.focus() == f"{SETTINGS}/.Settings"
    waited, status = sh(phone, f"am start -W -n {CLOCK}/{phone.activities[CLOCK]}")
    assert status == 0
    assert "Status: ok" in waited
    assert phone.focus().startswith(CLOCK)


def test_am_start_unknown_component(phone: Phone) -> None:
    output, status = sh(phone, "am start -n com.example.nope/.Main")
    assert status == 1
    assert output.splitlines() == [
        "Starting: Intent { cmp=com.example.nope/.Main }",
        "Error type 3",
        "Error: Activity class {com.example.nope/com.example.nope.Main} does not exist.",
    ]
    assert sh(phone, f"am start -n {SETTINGS}/.NoSuchActivity")[1] == 1
    assert sh(phone, "am start -n nonsense")[1] == 255
    assert sh(phone, "am start -n")[1] == 255
    assert sh(phone, "am start --bogus")[0] == "Error: Unknown option: --bogus\n"


def test_am_start_view_url(phone: Phone) -> None:
    output, status = sh(phone, "am start -a android.intent.action.VIEW -d https://www.google.com")
    assert (output, status) == (
        "Starting: Intent { act=android.intent.action.VIEW dat=https://www.google.com }\n",
        0,
    )
    assert phone.focus().startswith("com.android.chrome/")
    output, status = sh(phone, "am start -a android.intent.action.VIEW -d nosuchscheme:x")
    assert status == 1
    assert "unable to resolve Intent" in output
    assert sh(phone, "am start")[1] == 1


def test_am_force_stop(phone: Phone) -> None:
    sh(phone, f"am start -n {SETTINGS}/.Settings")
    assert sh(phone, f"am force-stop {SETTINGS}") == ("", 0)
    assert not phone.focus().startswith(SETTINGS)
    assert sh(phone, "am force-stop com.example.nope") == ("", 0)  # Android is silent about it too
    assert sh(phone, "am")[1] == 255
    assert sh(phone, "am force-stop")[1] == 255


def test_monkey_launches_like_adbutils_app_start(phone: Phone) -> None:
    output, status = sh(phone, f"monkey -p {CLOCK} -c android.intent.category.LAUNCHER 1")
    assert status == 0
    assert "Events injected: 1" in output
    assert phone.focus().startswith(CLOCK)
    output, status = sh(phone, "monkey -p com.example.nope -c android.intent.category.LAUNCHER 1")
    assert status == 252
    assert "** No activities found to run, monkey aborted." in output
    assert sh(phone, f"monkey -p {CLOCK}")[1] == 1


def test_pm(phone: Phone) -> None:
    listed = sh(phone, "pm list packages")[0].splitlines()
    assert listed == sorted(f"package:{name}" for name in phone.packages)
    assert sh(phone, "pm list packages deskclock")[0] == f"package:{CLOCK}\n"
    assert sh(phone, "pm list packages -f deskclock")[0] == f"package:/data/app/{CLOCK}-1/base.apk={CLOCK}\n"
    assert sh(phone, f"pm path {CLOCK}") == (f"package:/data/app/{CLOCK}-1/base.apk\n", 0)
    assert sh(phone, "pm path com.example.nope") == ("", 1)
    assert sh(phone, "pm fly")[1] == 255


def test_pm_clear(phone: Phone, monkeypatch: pytest.MonkeyPatch) -> None:
    cleared = spy(monkeypatch, phone, "clear_data")
    assert sh(phone, f"pm clear {CLOCK}") == ("Success\n", 0)
    assert sh(phone, "pm clear com.example.nope") == ("Failed\n", 1)
    assert cleared == [(CLOCK,), ("com.example.nope",)]


# -- robustness -----------------------------------------------------------------------------------------


WORDS = "input tap swipe text keyevent am start -n -a -d monkey -p pm clear list packages settings get put"
WORDS += f" global dumpsys window getprop wm size echo exit 1 -1 1e999 nan {SETTINGS} x/y ; && || ' \" $? %s"


@settings(max_examples=150)
@given(st.lists(st.sampled_from(WORDS.split()), max_size=8).map(" ".join) | st.text(max_size=40))
def test_no_exception_escapes(line: str) -> None:
    phone = _PHONE
    result = run_shell(phone, line)
    assert isinstance(result, ShellResult)
    assert 0 <= result.exit_code <= 255


_PHONE = Phone(PhoneConfig(seed=1))


def test_exceptions_in_the_phone_become_a_status(phone: Phone, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(phone, "tap", broken)
    output, status = sh(phone, "input tap 1 1; echo after")
    assert status == 0
    assert output == "input: java.lang.RuntimeException: boom\nafter\n"


def test_shell_ops_name_the_timed_operations() -> None:
    assert shell_ops("screencap -p; echo X4EXIT:$?") == (Op.SCREENSHOT,)
    assert shell_ops("input tap 1 2 && input swipe 1 2 3 4 && input text a && input keyevent 3") == (
        Op.TAP,
        Op.SWIPE,
        Op.TEXT,
        Op.KEY,
    )
    assert shell_ops(f"am start -n {SETTINGS}/.Settings; monkey -p {CLOCK} 1") == (Op.LAUNCH, Op.LAUNCH)
    assert shell_ops("am start -a android.intent.action.VIEW -d https://x") == (Op.PAGE_LOAD,)
    assert shell_ops("wm size; getprop; dumpsys window") == ()
    assert shell_ops("echo 'unclosed") == ()
