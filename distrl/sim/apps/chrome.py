"""Chrome: an address bar, page history, and the simulated web (``distrl.sim.web``) behind it.

Each page is a frame on Chrome's back stack (``screen`` ``page``, ``args`` ``{"url": ...}``), so BACK
goes back through the pages and leaves Chrome from the first one; the new-tab page is the ``main``
screen. The address bar is a text field: a web address opens that site, other words search Google.
Chrome's data (``state["apps"]["com.android.chrome"]``) keeps what success checks read:

- ``history``: URLs opened, oldest first (the last ``HISTORY_LIMIT``);
- ``searches``: ``{"site": "newegg.com", "query": "razer thresher"}`` for every search results page
  opened, on Google or on a shop (queries normalised);
- ``carts``: per shop domain, ``[{"product": slug, "qty": n}]``;
- ``cookies``: per shop domain, ``pending`` / ``accepted`` / ``rejected`` / ``none``.

With ``PhoneConfig.nuisances`` pages take 0.5-4 s of virtual time to load, Chrome sometimes opens with a
permission or sign-in dialog, shops sometimes greet with a promotion dialog or a cookie banner, and a
results page sometimes leads with a sponsored entry. The helpers at the bottom (``current_url``,
``current_route``, ``cart``, ``searched``, ``online``) read a ``Phone.state()`` for success checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from distrl.sim.app import BaseApp, Context, Json
from distrl.sim.apps import chrome_screens as screens
from distrl.sim.apps.chrome_screens import URL_FIELD
from distrl.sim.ui import Element
from distrl.sim.web.browser import CartItem
from distrl.sim.web.pages import render
from distrl.sim.web.route import (
    Route,
    canonical,
    display_url,
    parse,
)
from distrl.sim.web.shops import SHOPS

__all__ = [
    "CHROME",
    "FIRST_RUN_DIALOGS",
    "HISTORY_LIMIT",
    "PROMOTIONS",
    "URL_FIELD",
    "Chrome",
    "cart",
    "current_route",
    "current_url",
    "online",
    "searched",
]

CHROME = "com.android.chrome"
HISTORY_LIMIT = 60
"""History and search lists keep this many entries (state stays small)."""
DIALOG_RATE = 0.2
"""Chance that a fresh start of Chrome opens with a dialog (with nuisances)."""
PROMO_RATE = 0.12
"""Chance that a shop page opens with a promotion dialog (with nuisances)."""
COOKIE_RATE = 0.35
"""Chance that a shop shows its cookie banner on the first visit (with nuisances)."""
AD_RATE = 0.35
"""Chance that a shop's results page leads with a sponsored entry (with nuisances)."""

FIRST_RUN_DIALOGS: tuple[tuple[str, str, str, list[str]], ...] = (
    (
        "notifications",
        "Chrome notifications",
        "Allow Chrome to send you notifications?",
        ["Don't allow", "Allow"],
    ),
    (
        "sign_in",
        "Sign in to Chrome",
        "Sync your bookmarks, passwords and history on all your devices.",
        ["No thanks", "Continue"],
    ),
    (
        "default",
        "Use Chrome by default?",
        "Make Chrome your default browser, to open links from other apps.",
        ["Cancel", "Set as default"],
    ),
)
"""Dialogs a fresh start of Chrome may open: (id, title, text, buttons); BACK dismisses each."""
PROMOTIONS: Mapping[str, tuple[str, str, list[str]]] = {
    "ebay.com": (
        "Get the eBay app",
        "Shop faster and get notified when prices drop.",
        ["Not now", "Get the app"],
    ),
    "newegg.com": (
        "Newegg Insider",
        "Sign up for exclusive deals and get 10% off your first order.",
        ["No thanks", "Sign up"],
    ),
    "bestbuy.com": (
        "Hello! Choose a country.",
        "Shopping in the United States or in Canada?",
        ["United States", "Canada"],
    ),
    "walmart.com": (
        "Try Walmart+ free for 30 days",
        "Free delivery, member prices on fuel, and more.",
        ["Not now", "Start free trial"],
    ),
    "costco.com": (
        "Become a Costco member",
        "Members save more on thousands of items.",
        ["Close", "Join now"],
    ),
}
"""Each shop's promotion dialog: (title, text, buttons); the first button dismisses it."""


class Chrome(BaseApp):
    package = CHROME
    activity = "com.google.android.apps.chrome.Main"
    label = "Chrome"
    icon = "C"
    colour = (219, 68, 55)

    def defaults(self) -> Json:
        return {"history": [], "searches": [], "carts": {}, "cookies": {}, "notifications": "ask"}

    # ------------------------------------------------------------------ hooks
    def on_launch(self, ctx: Context) -> None:
        _maybe_chrome_dialog(ctx)

    def open_url(self, ctx: Context, url: str) -> bool:
        lower = url.strip().lower()
        if not lower.startswith(("http://", "https://", "chrome://")):
            return False
        stack: list[Json] = ctx.phone.data["tasks"][CHROME]
        fresh = CHROME not in ctx.phone.data["recents"]
        blank = len(stack) == 1 and stack[0]["screen"] == "main"
        top = navigate(ctx, url, replace=fresh and blank, intent=True)
        if fresh:
            _maybe_chrome_dialog(top)
        return True

    def on_back(self, ctx: Context) -> bool:
        if ctx.args.get("menu"):
            ctx.args["menu"] = False
            return True
        return False

    def on_dialog(self, ctx: Context, dialog: str, button: str) -> None:
        if dialog == "notifications":
            ctx.data["notifications"] = "allowed" if button == "Allow" else "blocked"
        elif dialog == "promo" and button == "Canada":
            navigate(ctx, "https://www.bestbuy.ca/")
        elif dialog == "promo" and button in ("Get the app",):
            ctx.toast("App not installed")
        elif dialog in ("sign_in", "promo") and button in (
            "Continue",
            "Sign up",
            "Start free trial",
            "Join now",
        ):
            ctx.toast("Sign-in is not available right now")

    # ------------------------------------------------------------------ screens
    def view(self, ctx: Context) -> list[Element]:
        browser = _Browser(ctx)

        def go(url: str) -> None:
            navigate(ctx, url)

        if ctx.screen == "page":
            route = parse(str(ctx.args["url"]))
            if not _online(ctx):
                content = screens.offline_page()
            elif route.kind == "history":
                content = screens.history_page(ctx, go)
            elif route.kind == "invalid":
                content = screens.error_page(route)
            else:
                content = render(route, browser)
            shown = display_url(route.url)
        else:
            content = screens.new_tab_page(ctx, go)
            shown = ""
        out = [*content, *screens.bar(ctx, shown, go)]
        if ctx.focused == URL_FIELD:
            out += screens.suggestions(ctx, go)
        if ctx.args.get("menu"):
            out += screens.menu(ctx, go)
        return out


class _Browser:
    """``distrl.sim.web.browser.Browser`` over Chrome's context."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    @property
    def now(self) -> datetime:
        return self.ctx.phone.now

    @property
    def viewport(self) -> float:
        return self.ctx.viewport_height

    @property
    def ad(self) -> bool:
        return bool(self.ctx.args.get("ad"))

    def go(self, url: str) -> None:
        navigate(self.ctx, url)

    def field(self, field_id: str) -> str:
        return self.ctx.field(field_id)

    @property
    def focused(self) -> str | None:
        return self.ctx.focused

    def edit(self, field_id: str) -> None:
        self.ctx.set_field(field_id, "")
        self.ctx.focus(field_id)

    def cart(self, domain: str) -> list[CartItem]:
        return [CartItem(str(i["product"]), int(i["qty"])) for i in self.ctx.data["carts"].get(domain, [])]

    def add_to_cart(self, domain: str, slug: str) -> None:
        _add(self.ctx.data, domain, slug)

    def remove_from_cart(self, domain: str, slug: str) -> None:
        items: list[Json] = self.ctx.data["carts"].get(domain, [])
        self.ctx.data["carts"][domain] = [i for i in items if i["product"] != slug]

    def cookie_banner(self, domain: str) -> bool:
        return bool(self.ctx.data["cookies"].get(domain) == "pending")

    def answer_cookies(self, domain: str, accepted: bool) -> None:
        self.ctx.data["cookies"][domain] = "accepted" if accepted else "rejected"

    def toast(self, text: str) -> None:
        self.ctx.toast(text)


def _add(data: Json, domain: str, slug: str) -> None:
    items: list[Json] = data["carts"].setdefault(domain, [])
    for item in items:
        if item["product"] == slug:
            item["qty"] = int(item["qty"]) + 1
            return
    items.append({"product": slug, "qty": 1})


def _load_time(u: float) -> float:
    """A page-load time in seconds: 0.5 at best, usually under 1.5, at most 4 (a Pareto-like tail)."""
    return min(4.0, 0.5 * float((1.0 - u) ** -0.75))


def navigate(ctx: Context, url: str, *, replace: bool = False, intent: bool = False) -> Context:
    """Open ``url`` in Chrome as a new page (or instead of the current one); the new page's context.

    Cart deep links (``<cart url>?add=<item>``, ``?clear=1``) are for task setups: opened by a VIEW
    intent (``intent``, from ``Chrome.open_url``: ``am start -a android.intent.action.VIEW -d URL``)
    they change the cart and show it, with no nuisances, so setups stay deterministic, network or not.
    Typed into the address bar or tapped, they only open the cart page: an agent cannot fill or empty a
    cart with one, nor get round airplane mode.
    """
    phone = ctx.phone
    url = canonical(url)
    route = parse(url)
    data = ctx.data
    quiet = False
    if route.kind in ("cart_add", "cart_clear"):
        shop = SHOPS[route.domain]
        if intent and route.kind == "cart_add":
            _add(data, route.domain, route.product)
        elif intent:
            data["carts"][route.domain] = []
        url, quiet = shop.cart_url, intent
        route = parse(url)
    nuisances = phone.config.nuisances and not quiet
    args: Json = {"url": url}
    if nuisances and route.kind == "shop_search":
        args["ad"] = phone.random() < AD_RATE
    if replace:
        phone.replace_frame(CHROME, "page", args)
    else:
        phone.push_frame(CHROME, "page", args)
    top = Context(phone, ctx.app, phone.data["tasks"][CHROME][-1])
    _remember(data, "history", url)
    if route.kind in ("google_search", "shop_search"):
        _remember(data, "searches", {"site": route.domain, "query": route.query})
    if nuisances:
        top.set_loading(_load_time(phone.random()))
        if route.domain in SHOPS and route.kind != "cart":
            if route.domain not in data["cookies"]:
                data["cookies"][route.domain] = "pending" if phone.random() < COOKIE_RATE else "none"
            elif phone.random() < PROMO_RATE:
                title, body, buttons = PROMOTIONS[route.domain]
                top.dialog("promo", title, body, buttons)
    return top


def _remember(data: Json, key: str, entry: object) -> None:
    entries: list[object] = data[key]
    entries.append(entry)
    del entries[:-HISTORY_LIMIT]


def _maybe_chrome_dialog(ctx: Context) -> None:
    if not ctx.phone.config.nuisances or ctx.random() >= DIALOG_RATE:
        return
    dialog_id, title, body, buttons = FIRST_RUN_DIALOGS[int(ctx.random() * len(FIRST_RUN_DIALOGS))]
    if dialog_id == "notifications" and ctx.data["notifications"] != "ask":
        return
    ctx.dialog(dialog_id, title, body, list(buttons))


def _online(ctx: Context) -> bool:
    return _network(
        ctx.setting("global", "airplane_mode_on"),
        ctx.setting("global", "wifi_on"),
        ctx.setting("global", "mobile_data"),
    )


def _network(airplane: str | None, wifi: str | None, mobile: str | None) -> bool:
    return airplane != "1" and (wifi == "1" or mobile == "1")


# ---------------------------------------------------------------------- state readers (success checks)
def current_url(state: Json) -> str | None:
    """The URL Chrome shows in the foreground, or None (Chrome is not in front, or on a new tab)."""
    top = state["top"]
    if top["package"] != CHROME or top["screen"] != "page":
        return None
    return str(top["args"]["url"])


def current_route(state: Json) -> Route | None:
    """``current_url`` parsed, or None."""
    url = current_url(state)
    return None if url is None else parse(url)


def cart(state: Json, site: str) -> list[CartItem]:
    """The cart on ``site`` (a shop domain such as ``newegg.com``)."""
    carts: Json = state["apps"][CHROME]["carts"]
    return [CartItem(str(i["product"]), int(i["qty"])) for i in carts.get(site, [])]


def searched(state: Json, site: str, query: str) -> bool:
    """Whether a results page for ``query`` (normalised) on ``site`` has been opened."""
    from distrl.sim.web.text import normalise_query

    wanted = {"site": site, "query": normalise_query(query)}
    return wanted in state["apps"][CHROME]["searches"]


def online(state: Json) -> bool:
    """Whether the phone has a network, so that pages load."""
    settings = state["settings"]["global"]
    return _network(settings.get("airplane_mode_on"), settings.get("wifi_on"), settings.get("mobile_data"))
