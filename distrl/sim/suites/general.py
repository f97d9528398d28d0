"""The ``general`` suite: AitW "General"-style tasks on the system apps, plus web searches.

Open an app, flip a setting, set the brightness, set an alarm (at many times), start a timer, check
a value in About phone, calculate, take a photo, search inside an app; the web searches in Chrome come
from ``web_search``. Goals are worded the many ways AitW users write them ("turn off wifi", "Set an
alarm for 6:30am", "open the settings"). Every task starts on the home screen of a clean phone; the
setup only forces the state the goal needs (Wi-Fi on before "turn off Wi-Fi").

Three splits (see ``distrl.sim.suites``). ``test`` holds out, from the train templates, parameter values
and wordings no train task has: alarm times, timer lengths, brightness levels, a screen timeout, sums
and products, YouTube and Maps queries, Google searches, cities, products and sites (``web_search``),
and one or more wordings of opening an app, each switch, settings pages and About phone, alarms and the
stopwatch. ``unseen`` holds out whole templates (new kinds of task): Bluetooth, labelled alarms, alarms
on given days, deleting alarms, location, Battery Saver, volumes, font size, renaming the phone, world
clocks, the camera, Play Store searches, subtraction and division, opening Contacts, Phone, Messages,
Calculator or Files, world times and restaurants.

The Settings and Clock templates live in ``settings_tasks`` and ``clock_tasks``, the expert's toolkit
in ``system_expert``; this module adds opening apps, the calculator, the camera and in-app searches.
Success is read from ``Phone.state()``: Android settings for settings tasks, app data for alarms, timers
and the calculator, and the screen in front (``state["top"]``) for "open" and "check" tasks. The expert
works from the phone as it is: it dismisses pop-ups, waits out loading pages, scrolls to what is below
the fold, closes the keyboard when it covers something, and walks back out of wrong screens.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from distrl.records import Action
from distrl.sim.app import Json
from distrl.sim.apps.calculator import calculate
from distrl.sim.suites import (
    Params,
    Suite,
    Template,
    clock_tasks,
    held_out,
    pools,
    settings_tasks,
    web_search,
)
from distrl.sim.suites import expert as ex
from distrl.sim.suites.system_expert import (
    CALCULATOR,
    CAMERA,
    CLOCK,
    SETTINGS,
    Screen,
    indexed,
    norm,
    open_app,
    template,
    top,
)

__all__ = ["GENERAL", "TEMPLATES", "typed_sum"]


_TRAIN_APPS = (
    (SETTINGS, "Settings"),
    (CLOCK, "Clock"),
    ("com.android.chrome", "Chrome"),
    ("com.google.android.gm", "Gmail"),
    ("com.google.android.apps.maps", "Maps"),
    ("com.google.android.apps.photos", "Photos"),
    (CAMERA, "Camera"),
    ("com.google.android.youtube", "YouTube"),
    ("com.android.vending", "Play Store"),
    ("com.google.android.calendar", "Calendar"),
)

_UNSEEN_APPS = (
    ("com.google.android.contacts", "Contacts"),
    ("com.google.android.dialer", "Phone"),
    ("com.google.android.apps.messaging", "Messages"),
    (CALCULATOR, "Calculator"),
    ("com.google.android.documentsui", "Files"),
)

_OPEN_PHRASES = (
    "Open {app}",
    "open the {lower} app",
    "Launch {app}",
    "Go to {app}",
    "open {lower}",
    "Can you open the {app} app?",
)
"""Wordings 3 and 5 of the train apps are ``test`` wordings."""

_HELD_OUT_OPEN_PHRASES = (3, 5)

_DRAWN_OPEN_PHRASES = ("Start {app}", "Please open {app}", "Open the {app} app", "Bring up {app}", "{app}")
"""Wordings only drawn tasks use (phrase indices after ``_OPEN_PHRASES``'s)."""


def _open_params(apps: Sequence[tuple[str, str]]) -> Callable[[], list[Params]]:
    def params() -> list[Params]:
        return [
            {"package": package, "app": app, "phrase": phrase}
            for package, app in apps
            for phrase in range(len(_OPEN_PHRASES))
        ]

    return params


def _open_goal(p: Params) -> str:
    app = str(p["app"])
    lower = {"Settings": "settings", "Phone": "phone", "Files": "files"}.get(app, app)
    if app == "Settings" and int(p["phrase"]) == 1:
        return "open the settings"
    return (*_OPEN_PHRASES, *_DRAWN_OPEN_PHRASES)[int(p["phrase"])].format(app=app, lower=lower)


def _open_draw(rng: random.Random) -> Params:
    """A train app, in a train wording or one only draws use."""
    package, app = rng.choice(_TRAIN_APPS)
    phrases = [
        i for i in range(len(_OPEN_PHRASES) + len(_DRAWN_OPEN_PHRASES)) if i not in _HELD_OUT_OPEN_PHRASES
    ]
    return {"package": package, "app": app, "phrase": rng.choice(phrases)}


def _open_check(p: Params, state: Json) -> bool:
    return top(state)[0] == p["package"]


def _open_plan(p: Params, screen: Screen) -> Action:
    return open_app(screen, str(p["package"])) or ex.done()


_CALC_PHRASES = (
    "What is {a} {say} {b}? Use the calculator",
    "Calculate {a} {sym} {b} on the calculator",
    "use the calculator to work out {a} {sym} {b}",
)

_OPS = {"+": ("plus", "+"), "-": ("minus", "-"), "x": ("times", "x"), "/": ("divided by", "/")}

_HELD_OUT_PAIRS = ((23, 45), (99, 11), (37, 26))
"""Operands of the ``test`` split's sums and products."""


def _calc_params(ops: str) -> Callable[[], list[Params]]:
    pairs = ((12, 34), (56, 7), (23, 45), (81, 9), (64, 16), (15, 5), (99, 11), (72, 8), (48, 12), (37, 26))

    def params() -> list[Params]:
        out: list[Params] = []
        for op in ops:
            for i, (a, b) in enumerate(pairs):
                if op == "/" and a % b:
                    continue
                out.append({"a": a, "b": b, "op": op, "phrase": i % len(_CALC_PHRASES)})
        return out

    return params


def _calc_draw(rng: random.Random) -> Params:
    """A sum or product of two numbers from 2 to 99, neither pair of the ``test`` split's operands."""
    held = {*_HELD_OUT_PAIRS, *((b, a) for a, b in _HELD_OUT_PAIRS)}
    while True:
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        if (a, b) not in held:
            return {"a": a, "b": b, "op": rng.choice("+x"), "phrase": rng.randrange(len(_CALC_PHRASES))}


def _calc_goal(p: Params) -> str:
    say, sym = _OPS[str(p["op"])]
    return _CALC_PHRASES[int(p["phrase"])].format(a=p["a"], b=p["b"], say=say, sym=sym)


def _calc_expr(p: Params) -> str:
    return f"{p['a']}{p['op']}{p['b']}"


def _calc_check(p: Params, state: Json) -> bool:
    history = state["apps"].get(CALCULATOR, {}).get("history", [])
    if not history:
        return False
    last = history[-1]
    exprs = {_calc_expr(p)}
    if str(p["op"]) in "+x":
        exprs.add(f"{p['b']}{p['op']}{p['a']}")
    return str(last["expr"]) in exprs and str(last["result"]) == calculate(_calc_expr(p))


def typed_sum(p: Params) -> str:
    """What the expert types into the Calculator: the goal's numbers and operator, then ``=``
    (``12+34=``, ``56x7=``; typed characters press the keypad's keys)."""
    return f"{_calc_expr(p)}="


def _calc_plan(p: Params, screen: Screen) -> Action:
    """Calculator; the sum typed with its ``=`` (the rest of it after a right beginning; AC first after a
    wrong one)."""
    step = open_app(screen, CALCULATOR)
    if step is not None:
        return step
    data = screen.phone.data["apps"][CALCULATOR]
    expr = "" if data.get("fresh") else str(data.get("expr", ""))
    target = _calc_expr(p)
    if expr == target:
        return screen.tap("calc/key/equals")
    if not target.startswith(expr):
        return screen.tap("calc/key/clear")
    return ex.type_text(typed_sum(p)[len(expr) :])


_CAMERA_GOALS = (
    ("photo", "Take a photo"), ("photo", "take a picture with the camera"), ("photo", "Snap a photo"),
    ("video", "Record a video"), ("video", "record a short video with the camera"),
    ("video", "Take a video and stop it"),
)  # fmt: skip


def _camera_check(p: Params, state: Json) -> bool:
    data = state["apps"].get(CAMERA, {})
    if p["kind"] == "photo":
        return int(data.get("photos", 0)) > 0
    return int(data.get("videos", 0)) > 0 and not data.get("recording")


def _camera_plan(p: Params, screen: Screen) -> Action:
    step = open_app(screen, CAMERA)
    if step is not None:
        return step
    data = screen.phone.data["apps"][CAMERA]
    if data.get("recording"):
        return screen.tap("camera/shutter")
    if data.get("mode", "photo") != p["kind"]:
        return screen.tap(f"camera/mode/{p['kind']}")
    return screen.tap("camera/shutter")


_SEARCHES: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {
    "youtube": ("com.google.android.youtube", "YouTube",
                ("lofi music", "pancake recipe", "cat videos", "guitar lessons", "nba highlights",
                 "python tutorial", "morning yoga", "movie trailers"),
                ("Search for {q} on YouTube", "find {q} videos on youtube",
                 "Open YouTube and search for {q}")),
    "maps": ("com.google.android.apps.maps", "Maps",
             ("coffee shops", "gas station", "pizza", "pharmacy", "parking", "grocery store", "gym",
              "hotels"),
             ("Search for {q} in Google Maps", "find {q} near me on maps", "Look up {q} in Maps")),
    "playstore": ("com.android.vending", "Play Store",
                  ("instagram", "spotify", "candy crush", "whatsapp", "netflix", "duolingo", "uber", "zoom"),
                  ("Search for {q} in the Play Store", "find the {q} app on google play",
                   "Look up {q} in the Play Store")),
}  # fmt: skip

_HELD_OUT_QUERIES = ("guitar lessons", "morning yoga", "pharmacy", "gym")
"""YouTube and Maps queries of the ``test`` split."""


def _search_params(slugs: Sequence[str]) -> Callable[[], list[Params]]:
    def params() -> list[Params]:
        return [
            {"app": slug, "query": query, "phrase": i % 3}
            for slug in slugs
            for i, query in enumerate(_SEARCHES[slug][2])
        ]

    return params


def _search_draw(rng: random.Random) -> Params:
    """A YouTube or Maps search for something from ``pools`` (never a train or ``test`` query)."""
    slug = rng.choice(("youtube", "maps"))
    pool = pools.TOPICS if slug == "youtube" else pools.PLACES
    query = rng.choice(pool) if rng.random() < 0.5 else pools.noun_phrase(rng)
    return {"app": slug, "query": query, "phrase": rng.randrange(3)}


def _search_goal(p: Params) -> str:
    return _SEARCHES[str(p["app"])][3][int(p["phrase"])].format(q=p["query"])


def _search_check(p: Params, state: Json) -> bool:
    package = _SEARCHES[str(p["app"])][0]
    if top(state) != (package, "results"):
        return False
    words = set(norm(str(state["top"]["args"].get("q", ""))).split())
    return set(norm(str(p["query"])).split()) <= words


def _search_plan(p: Params, screen: Screen) -> Action:
    slug = str(p["app"])
    step = open_app(screen, _SEARCHES[slug][0])
    if step is not None:
        return step
    frame = screen.phone.top_frame
    query = str(p["query"])
    if frame["screen"] == "results":
        return screen.tap_or_scroll(f"{slug}/results/query")
    if frame["screen"] == "search":
        field_id = f"{slug}/query"
        text = str(frame["fields"].get(field_id, ""))
        if not query.startswith(text):
            return ex.back()
        if frame["focus"] != field_id:
            return screen.tap_or_scroll(field_id)
        return ex.enter() if text == query else ex.type_text(query[len(text) :])
    if frame["screen"] == "main":
        return screen.tap_or_scroll(f"{slug}/search")
    return ex.back()


TEMPLATES: tuple[Template, ...] = (
    template(
        "open_app",
        "train",
        _open_params(_TRAIN_APPS),
        _open_goal,
        _open_check,
        _open_plan,
        held_out=held_out(phrases=_HELD_OUT_OPEN_PHRASES),
        draw=_open_draw,
    ),
    *settings_tasks.TRAIN,
    *clock_tasks.TRAIN,
    template(
        "calculator",
        "train",
        _calc_params("+x"),
        _calc_goal,
        _calc_check,
        _calc_plan,
        held_out=held_out(("a", "b"), _HELD_OUT_PAIRS),
        draw=_calc_draw,
    ),
    template(
        "app_search",
        "train",
        _search_params(("youtube", "maps")),
        _search_goal,
        _search_check,
        _search_plan,
        held_out=held_out("query", _HELD_OUT_QUERIES),
        draw=_search_draw,
    ),
    template("open_app_heldout", "unseen", _open_params(_UNSEEN_APPS), _open_goal, _open_check, _open_plan),
    *settings_tasks.UNSEEN,
    *clock_tasks.UNSEEN,
    template(
        "camera",
        "unseen",
        lambda: [{"kind": kind, "phrase": i} for i, (kind, _) in enumerate(_CAMERA_GOALS)],
        indexed(_CAMERA_GOALS),
        _camera_check,
        _camera_plan,
    ),
    template("calculator_heldout", "unseen", _calc_params("-/"), _calc_goal, _calc_check, _calc_plan),
    template(
        "app_search_heldout",
        "unseen",
        _search_params(("playstore",)),
        _search_goal,
        _search_check,
        _search_plan,
    ),
)
"""The general suite's own templates (the web searches are ``web_search.TEMPLATES``)."""

GENERAL = Suite(name="general", max_steps=10, templates=(*TEMPLATES, *web_search.TEMPLATES))
"""AitW General on the simulated phone: system apps, everyday apps and web searches; 10 steps."""
