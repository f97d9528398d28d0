"""The browser, the simulated web, the shopping sites, and the web-shopping and web-search suites."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from support import tap

from distrl.actions import to_gesture
from distrl.records import ActionType
from distrl.sim.app import Json
from distrl.sim.apps.chrome import (
    CHROME,
    FIRST_RUN_DIALOGS,
    PROMOTIONS,
    URL_FIELD,
    Chrome,
    cart,
    current_route,
    current_url,
    navigate,
    online,
    searched,
)
from distrl.sim.phone import LAUNCHER, Phone, PhoneConfig
from distrl.sim.shell import run_shell
from distrl.sim.suites import Params, Template, web_search
from distrl.sim.suites.expert import find
from distrl.sim.suites.web_shopping import (
    HELD_OUT_QUERIES,
    QUERIES,
    TRAIN_SITES,
    UNSEEN_SITES,
    WEB_SHOPPING,
    cart_setup,
)
from distrl.sim.ui import text_width_dp
from distrl.sim.web import PRODUCTS, SHOPS, parse, resolve, search, sponsored
from distrl.sim.web.google import answer, results
from distrl.sim.web.route import canonical, display_url
from distrl.sim.web.text import normalise_query, tokens

SHOP_DOMAINS = tuple(SHOPS)
KEYCODE_BACK, KEYCODE_ENTER = 4, 66


def _phone(*, nuisances: bool = False, seed: int = 0) -> Phone:
    return Phone(PhoneConfig(seed=seed, nuisances=nuisances))


def _type_into(phone: Phone, field: str, text: str) -> None:
    tap(phone, field)
    phone.type_text(text)
    phone.key(KEYCODE_ENTER)


def _ids(phone: Phone) -> set[str]:
    return {element.id for element in phone.elements()}


def _chrome(phone: Phone) -> Json:
    data: Json = phone.data["apps"][CHROME]
    return data


# ---------------------------------------------------------------------- URLs and the search engine
def test_address_bar_text_becomes_a_url_or_a_google_search() -> None:
    assert resolve("newegg.com") == "https://www.newegg.com/"
    assert resolve("  EBAY.com ") == "https://www.ebay.com/"
    assert resolve("http://en.wikipedia.org/wiki/Razer") == "https://en.wikipedia.org/wiki/Razer"
    assert resolve("razer thresher") == "https://www.google.com/search?q=razer+thresher"
    assert resolve("macbook") == "https://www.google.com/search?q=macbook"
    assert resolve("file.exe") == "https://www.google.com/search?q=file.exe"
    assert resolve("   ") is None
    assert canonical("http://google.com") == "https://www.google.com/"
    assert display_url("https://www.newegg.com/") == "newegg.com"


def test_every_shop_url_parses_back_to_its_page() -> None:
    product = PRODUCTS[17]
    for domain, shop in SHOPS.items():
        assert parse(shop.home_url).kind == "shop_home"
        found = parse(shop.search_url("Razer  Thresher"))
        assert (found.kind, found.domain, found.query) == ("shop_search", domain, "razer thresher")
        page = parse(shop.product_url(product))
        assert (page.kind, page.domain, page.product) == ("product", domain, product.slug)
        assert parse(shop.cart_url).kind == "cart"
        link = parse(shop.cart_add_url(product))
        assert (link.kind, link.product) == ("cart_add", product.slug)
        assert parse(shop.cart_clear_url).kind == "cart_clear"
        assert parse(f"https://{shop.host}/no/such/page").kind == "missing"
    assert parse("https://www.google.com/search?q=Hotels+in+DC").query == "hotels in dc"
    assert parse("https://en.wikipedia.org/wiki/X").domain == "wikipedia.org"


def test_catalogue_and_search_are_fixed_and_sensible() -> None:
    assert 200 <= len(PRODUCTS) <= 400
    assert len({p.slug for p in PRODUCTS}) == len(PRODUCTS)
    assert all(p.title.isascii() for p in PRODUCTS)
    for query in QUERIES:
        words = [w for w in tokens(query) if w not in ("the", "a")]
        for domain in SHOP_DOMAINS:
            found = search(domain, query)
            assert 10 <= len(found) <= 20
            assert len({p.slug for p in found}) == len(found)
            assert all(w in found[0].words for w in words), (domain, query, found[0].title)
            assert sponsored(domain, query) != found[0]
    firsts = {search(domain, "razer thresher")[0].slug for domain in SHOP_DOMAINS}
    assert len(firsts) > 1, "every site ranks the same way"
    assert search("ebay.com", "xyzzy plugh")  # any query gets results


def test_google_results_and_answer_boxes() -> None:
    now = Phone.EPOCH
    shops = [r.url for r in results("razer thresher") if parse(r.url).kind == "shop_search"]
    assert shops, "a product query links to the shops"
    assert len(results("hotels in washington dc")) == 8
    assert results("go to newegg.com")[0].url == "https://www.newegg.com/p/pl?d=go+to"
    weather = answer("What's the weather like in Paris?", now)
    assert weather is not None
    assert weather.kind == "weather"
    assert "Paris" in weather.heading
    clock = answer("what time is it in tokyo", now)
    assert clock is not None
    assert clock.value == "12:34 AM"
    cost = answer("How much does a Nintendo Switch Lite cost?", now)
    assert cost is not None
    assert cost.kind == "price"
    assert cost.value.startswith("$")
    assert answer("hotels in washington dc", now) is None


# ---------------------------------------------------------------------- the browser
def test_address_bar_opens_sites_and_searches_google() -> None:
    phone = _phone()
    phone.launch(CHROME)
    assert phone.focus() == "com.android.chrome/com.google.android.apps.chrome.Main"
    assert current_url(phone.state()) is None  # the new tab page
    _type_into(phone, URL_FIELD, "newegg.com")
    assert current_url(phone.state()) == "https://www.newegg.com/"
    assert "web/newegg/search" in _ids(phone)
    _type_into(phone, URL_FIELD, "best gaming mouse")
    route = current_route(phone.state())
    assert route is not None
    assert (route.kind, route.query) == ("google_search", "best gaming mouse")
    assert searched(phone.state(), "google.com", "Best Gaming Mouse")
    assert _chrome(phone)["history"] == [
        "https://www.newegg.com/",
        "https://www.google.com/search?q=best+gaming+mouse",
    ]
    assert "google/result/0" in _ids(phone)


def test_address_bar_replaces_its_text_and_suggests() -> None:
    phone = _phone()
    phone.open_url("https://www.ebay.com/")
    tap(phone, URL_FIELD)
    assert find(phone, URL_FIELD) is not None
    assert find(phone, "keyboard/panel") is not None
    phone.type_text("eba")
    ids = _ids(phone)
    assert {"chrome/suggestion/0", "chrome/suggestion/1"} <= ids  # search "eba", and ebay.com from history
    tap(phone, "chrome/suggestion/1")
    assert current_url(phone.state()) == "https://www.ebay.com/"
    assert find(phone, "keyboard/panel") is None


def test_back_walks_the_page_history_then_leaves_chrome() -> None:
    phone = _phone()
    tap(phone, "launcher/search")  # the home screen's search bar opens Google in Chrome
    assert current_url(phone.state()) == "https://www.google.com/"
    _type_into(phone, "google/search", "razer thresher")
    tap(phone, "google/result/0")
    third = current_url(phone.state())
    assert third is not None
    assert parse(third).kind == "shop_search"
    phone.key(KEYCODE_BACK)
    assert current_url(phone.state()) == "https://www.google.com/search?q=razer+thresher"
    phone.key(KEYCODE_BACK)
    assert current_url(phone.state()) == "https://www.google.com/"
    phone.key(KEYCODE_BACK)
    assert phone.state()["top"]["package"] == LAUNCHER


def test_menu_new_tab_and_history() -> None:
    phone = _phone()
    phone.open_url("https://www.walmart.com/")
    tap(phone, "chrome/menu")
    tap(phone, "chrome/menu/history")
    assert current_url(phone.state()) == "chrome://history/"
    tap(phone, "history/entry/0")
    assert current_url(phone.state()) == "https://www.walmart.com/"
    tap(phone, "chrome/menu")
    phone.key(KEYCODE_BACK)  # BACK closes the menu, nothing else
    assert "chrome/menu/card" not in _ids(phone)
    assert current_url(phone.state()) == "https://www.walmart.com/"
    tap(phone, "chrome/home")
    assert phone.state()["top"]["screen"] == "main"
    tap(phone, "ntp/tile/0")  # most visited: walmart.com
    assert current_url(phone.state()) == "https://www.walmart.com/"


def test_pages_load_with_nuisances_and_at_once_without() -> None:
    phone = _phone(nuisances=True, seed=4)
    phone.open_url("https://www.google.com/")
    loads = []
    for i in range(40):
        top = navigate(phone.context(CHROME), f"https://www.google.com/search?q=test+{i}")
        seconds = float(top.frame["loading_until"]) - float(phone.data["clock_s"])
        loads.append(seconds)
        assert 0.5 <= seconds <= 4.0
        phone.advance(5.0)
    assert min(loads) < 1.0
    assert max(loads) > 2.0
    navigate(phone.context(CHROME), "https://www.google.com/search?q=slow")
    phone.top_frame["loading_until"] = float(phone.data["clock_s"]) + 3.0
    ids = _ids(phone)
    assert "system/loading_page" in ids
    assert URL_FIELD in ids
    assert "google/search" not in ids
    phone.advance(3.0)
    assert "google/search" in _ids(phone)
    calm = _phone()
    calm.open_url("https://www.google.com/search?q=fast")
    assert "google/search" in _ids(calm)


def test_chrome_first_start_dialogs_are_dismissible() -> None:
    seen: Counter[str] = Counter()
    for seed in range(40):
        phone = _phone(nuisances=True, seed=seed)
        phone.launch(CHROME)
        dialog = phone.top_frame["dialog"]
        if dialog is None:
            continue
        seen[dialog["id"]] += 1
        phone.key(KEYCODE_BACK)
        assert phone.top_frame["dialog"] is None
        assert phone.state()["top"]["package"] == CHROME
    assert 2 <= sum(seen.values()) <= 20
    quiet = _phone()
    quiet.launch(CHROME)
    assert quiet.top_frame["dialog"] is None


def test_offline_shows_no_internet_and_recovers() -> None:
    phone = _phone()
    phone.open_url("https://www.bestbuy.com/")
    phone.put_setting("global", "airplane_mode_on", "1")
    assert not online(phone.state())
    ids = _ids(phone)
    assert "offline/title" in ids
    assert "web/bestbuy/search" not in ids
    phone.put_setting("global", "airplane_mode_on", "0")
    assert "web/bestbuy/search" in _ids(phone)


def test_other_sites_render_a_generic_page() -> None:
    phone = _phone()
    phone.open_url("https://en.wikipedia.org/wiki/Razer_Thresher")
    title = find(phone, "page/title")
    assert title is not None
    assert title.text == "Razer Thresher"
    phone.open_url("chrome://nonsense")
    assert "error/title" in _ids(phone)


def test_cart_deep_links_fill_and_clear_carts() -> None:
    phone = _phone(nuisances=True, seed=2)
    items = [PRODUCTS[3], PRODUCTS[40], PRODUCTS[3]]
    for command in cart_setup("newegg.com", items):
        assert run_shell(phone, command).exit_code == 0
    state = phone.state()
    assert [(i.product, i.qty) for i in cart(state, "newegg.com")] == [
        (PRODUCTS[3].slug, 2),
        (PRODUCTS[40].slug, 1),
    ]
    assert cart(state, "ebay.com") == []
    assert state["top"]["package"] == LAUNCHER
    assert (
        run_shell(
            phone, f"am start -a android.intent.action.VIEW -d {SHOPS['newegg.com'].cart_clear_url}"
        ).exit_code
        == 0
    )
    assert cart(phone.state(), "newegg.com") == []
    assert current_route(phone.state()) is not None


def test_cart_deep_links_typed_or_tapped_only_show_the_cart() -> None:
    shop = SHOPS["ebay.com"]
    phone = _phone()
    for command in cart_setup("ebay.com", [PRODUCTS[5]]):
        assert run_shell(phone, command).exit_code == 0
    full = [(PRODUCTS[5].slug, 1)]
    p: Params = {"site": "ebay.com", "items": 1}
    phone.launch(CHROME)
    _type_into(phone, URL_FIELD, "ebay.com/cart?clear=1")
    _type_into(phone, URL_FIELD, shop.cart_add_url(PRODUCTS[9]))
    navigate(phone.context(CHROME), shop.cart_clear_url)  # a link on a page
    state = phone.state()
    assert [(i.product, i.qty) for i in cart(state, "ebay.com")] == full
    assert current_url(state) == shop.cart_url
    assert not _templates()["clear_cart"].check(p, state)


def test_an_empty_cart_needs_the_network() -> None:
    """The reviewer's way round: airplane mode, then the clear link typed (it used to empty the cart)."""
    phone = _phone()
    for command in cart_setup("ebay.com", [PRODUCTS[5]]):
        assert run_shell(phone, command).exit_code == 0
    run_shell(phone, "settings put global airplane_mode_on 1")
    phone.launch(CHROME)
    _type_into(phone, URL_FIELD, "ebay.com/cart?clear=1")
    p: Params = {"site": "ebay.com", "items": 1}
    assert not _templates()["clear_cart"].check(p, phone.state())
    phone.data["apps"][CHROME]["carts"]["ebay.com"] = []  # emptied, but offline
    assert not _templates()["clear_cart"].check(p, phone.state())
    run_shell(phone, "settings put global airplane_mode_on 0")
    assert _templates()["clear_cart"].check(p, phone.state())


# ---------------------------------------------------------------------- every shopping site
@pytest.mark.parametrize("domain", SHOP_DOMAINS)
def test_shop_search_scroll_product_cart(domain: str) -> None:
    shop = SHOPS[domain]
    key = shop.key
    phone = _phone()
    phone.launch(CHROME)
    _type_into(phone, URL_FIELD, domain)
    _type_into(phone, f"web/{key}/search", "Logitech G502")
    route = current_route(phone.state())
    assert route is not None
    assert (route.kind, route.domain, route.query) == (
        "shop_search",
        domain,
        "logitech g502",
    )
    found = search(domain, "logitech g502")
    assert find(phone, f"web/{key}/result/0/title") is not None
    assert find(phone, f"web/{key}/result/0/title").text == found[0].title  # type: ignore[union-attr]
    last = f"web/{key}/result/{len(found) - 1}"
    assert last not in _ids(phone)
    for _ in range(12):  # scroll to the end of the list; the header stays
        phone.swipe(540, 1800, 540, 800)
    assert last in _ids(phone)
    assert f"web/{key}/search" in _ids(phone)
    for _ in range(12):
        phone.swipe(540, 800, 540, 1800)
    tap(phone, f"web/{key}/result/1")
    route = current_route(phone.state())
    assert route is not None
    assert (route.kind, route.product) == ("product", found[1].slug)
    title = find(phone, f"web/{key}/title")
    assert title is not None
    assert title.text == found[1].title
    tap(phone, f"web/{key}/add_to_cart")
    tap(phone, f"web/{key}/add_to_cart")
    assert [(i.product, i.qty) for i in cart(phone.state(), domain)] == [(found[1].slug, 2)]
    badge = find(phone, f"web/{key}/cart_count")
    assert badge is not None
    assert badge.icon == "2"
    tap(phone, f"web/{key}/cart")
    route = current_route(phone.state())
    assert route is not None
    assert route.kind == "cart"
    qty = find(phone, f"web/{key}/cart/item/0/qty")
    assert qty is not None
    assert qty.text == "Qty: 2"
    tap(phone, f"web/{key}/cart/remove/0")
    assert cart(phone.state(), domain) == []
    assert f"web/{key}/cart_empty" in _ids(phone)
    tap(phone, f"web/{key}/continue")
    assert current_url(phone.state()) == shop.home_url
    tap(phone, f"web/{key}/deal/0")
    route = current_route(phone.state())
    assert route is not None
    assert route.kind == "product"


def test_walmart_adds_from_the_results_grid() -> None:
    phone = _phone()
    phone.open_url(SHOPS["walmart.com"].search_url("jbl flip 4"))
    tap(phone, "web/walmart/result/0/add")
    assert [i.product for i in cart(phone.state(), "walmart.com")] == [
        search("walmart.com", "jbl flip 4")[0].slug
    ]


@pytest.mark.parametrize("domain", SHOP_DOMAINS)
def test_sponsored_entry_comes_first_but_is_not_the_first_entry(domain: str) -> None:
    key = SHOPS[domain].key
    phone = _phone()
    phone.open_url(SHOPS[domain].search_url("razer kraken"))
    phone.top_frame["args"]["ad"] = True
    ad, first = find(phone, f"web/{key}/ad"), find(phone, f"web/{key}/result/0")
    assert ad is not None
    assert first is not None
    assert (ad.box.y0, ad.box.x0) < (first.box.y0, first.box.x0)
    note = find(phone, f"web/{key}/ad/note")
    assert note is not None
    assert note.text == "Sponsored"
    tap(phone, f"web/{key}/ad")
    route = current_route(phone.state())
    assert route is not None
    assert route.product == sponsored(domain, "razer kraken").slug
    assert route.product != search(domain, "razer kraken")[0].slug


def test_nuisances_show_ads_banners_and_promotions() -> None:
    ads = banners = promos = 0
    for seed in range(30):
        phone = _phone(nuisances=True, seed=seed)
        phone.open_url("https://www.ebay.com/")
        phone.advance(5.0)
        phone.top_frame["dialog"] = None
        if "web/ebay/cookies/accept" in _ids(phone):
            banners += 1
            tap(phone, "web/ebay/cookies/accept")
            assert "web/ebay/cookies" not in _ids(phone)
            assert _chrome(phone)["cookies"]["ebay.com"] == "accepted"
        for _ in range(3):
            top = navigate(phone.context(CHROME), SHOPS["ebay.com"].search_url("apple watch"))
            ads += bool(top.args["ad"])
            if top.frame["dialog"] is not None:
                promos += 1
                assert top.frame["dialog"]["buttons"] == ["Not now", "Get the app"]
    assert 5 <= banners <= 20
    assert 10 <= ads <= 60
    assert 3 <= promos <= 25


def test_bestbuy_country_dialog_can_lead_to_canada() -> None:
    phone = _phone()
    phone.open_url("https://www.bestbuy.com/")
    ctx = phone.context(CHROME)
    ctx.dialog("promo", "Hello! Choose a country.", "", ["United States", "Canada"])
    tap(phone, "dialog/button/Canada")
    assert current_url(phone.state()) == "https://www.bestbuy.ca/"


def test_screens_fit_the_phone() -> None:
    """Dialog titles fit on one line; pages keep to 60 elements even with an ad and a cookie banner."""
    for dialog in (*FIRST_RUN_DIALOGS, *((None, *promo) for promo in PROMOTIONS.values())):
        assert text_width_dp(str(dialog[1]), 20) <= 308, dialog
    urls = [
        "https://www.google.com/",
        "https://www.google.com/search?q=weather+in+paris",
        "chrome://history/",
    ]
    for shop in SHOPS.values():
        urls += [shop.home_url, shop.search_url("razer"), shop.product_url(PRODUCTS[0])]
        urls += [shop.cart_add_url(product) for product in PRODUCTS[1:5]]
    for height in (2400, 2280):
        phone = Phone(PhoneConfig(height=height, nuisances=False))
        for url in urls:
            phone.open_url(url)
            phone.top_frame["args"]["ad"] = True
            _chrome(phone)["cookies"] = dict.fromkeys(SHOPS, "pending")
            for _ in range(8):
                assert len(phone.elements()) <= 60, url
                phone.swipe(540, 1700, 540, 1100)


# ---------------------------------------------------------------------- the suites' checks
def _templates() -> dict[str, Template]:
    return {t.name: t for t in (*WEB_SHOPPING.templates, *web_search.TEMPLATES)}


def test_suite_sizes_and_splits() -> None:
    shop_tasks = [(t, p) for t in WEB_SHOPPING.templates for p in t.params()]
    search_tasks = [(t, p) for t in web_search.TEMPLATES for p in t.params()]
    assert WEB_SHOPPING.max_steps == 20
    for tasks in (shop_tasks, search_tasks):
        unseen_share = sum(t.split_of(p) == "unseen" for t, p in tasks) / len(tasks)
        test_share = sum(t.split_of(p) == "test" for t, p in tasks) / len(tasks)
        assert 0.2 <= unseen_share <= 0.4
        assert 0.1 <= test_share <= 0.3
        assert len({t.name for t, _ in tasks}) == len({id(t) for t, _ in tasks})
    assert len(shop_tasks) >= 400
    assert len(search_tasks) >= 120
    assert sum(t.split_of(p) == "test" for t, p in shop_tasks) >= 128
    goals = [t.goal(p) for t, p in shop_tasks]
    assert len(set(goals)) == len(goals)
    assert 'Go to newegg.com, search for "razer thresher", and select the first entry' in goals
    assert all(t.split == "unseen" for t, p in shop_tasks if p.get("site") in UNSEEN_SITES)
    assert all(p.get("site") in (*TRAIN_SITES, *UNSEEN_SITES) for _, p in shop_tasks)
    held = {p["product"] for t, p in shop_tasks if t.split_of(p) == "test"}
    assert held == set(HELD_OUT_QUERIES)
    assert all(p.get("site") in TRAIN_SITES for t, p in shop_tasks if t.split_of(p) == "test")
    assert [t.params() for t in WEB_SHOPPING.templates] == [t.params() for t in WEB_SHOPPING.templates]
    for _, p in search_tasks:
        assert all(isinstance(v, str) for v in p.values())


def _at(url: str, *, history: tuple[str, ...] = (), searches: tuple[tuple[str, str], ...] = ()) -> Phone:
    """A phone showing ``url`` in Chrome, having visited ``history`` first."""
    phone = _phone()
    for earlier in (*history, url):
        phone.open_url(earlier)
    data = _chrome(phone)
    for site, query in searches:
        data["searches"].append({"site": site, "query": normalise_query(query)})
    return phone


def test_shopping_checks_need_the_exact_site_query_and_entry() -> None:
    t = _templates()
    p: Params = {"site": "newegg.com", "product": "razer thresher"}
    shop = SHOPS["newegg.com"]
    found = search("newegg.com", "razer thresher")
    results_url = shop.search_url("razer thresher")
    assert t["search"].check(p, _at(results_url).state())
    assert t["search"].check(p, _at(shop.search_url("Razer  Thresher")).state())
    assert not t["search"].check(p, _at(shop.search_url("razer")).state())
    assert not t["search"].check(p, _at(SHOPS["ebay.com"].search_url("razer thresher")).state())
    assert not t["search"].check(p, _at("https://www.google.com/search?q=newegg+razer+thresher").state())
    home = _at(results_url)
    home.key(3)
    assert not t["search"].check(p, home.state()), "Chrome is not in front"

    first = _at(shop.product_url(found[0]), history=(results_url,))
    assert t["select_first"].check(p, first.state())
    second = _at(shop.product_url(found[1]), history=(results_url,))
    assert not t["select_first"].check(p, second.state())
    ad = _at(shop.product_url(sponsored("newegg.com", "razer thresher")), history=(results_url,))
    assert not t["select_first"].check(p, ad.state())
    unsearched = _at(shop.product_url(found[0]))
    assert not t["select_first"].check(p, unsearched.state())

    added = _at(shop.cart_add_url(found[0]), history=(results_url,))
    assert t["add_first"].check(p, added.state())
    assert not t["select_and_add"].check(p, added.state()), "never opened the product page"
    both = _at(shop.cart_add_url(found[0]), history=(results_url, shop.product_url(found[0])))
    assert t["select_and_add"].check(p, both.state())
    extra = _at(shop.cart_add_url(found[1]), history=(results_url, shop.cart_add_url(found[0])))
    assert not t["add_first"].check(p, extra.state())
    wrong = _at(shop.cart_add_url(found[1]), history=(results_url,))
    assert not t["add_first"].check(p, wrong.state())
    elsewhere = _at(SHOPS["ebay.com"].cart_add_url(found[0]), history=(results_url,))
    assert not t["add_first"].check(p, elsewhere.state())

    c: Params = {"site": "newegg.com", "items": 2}
    full = _at(shop.cart_add_url(PRODUCTS[0]))
    assert not t["clear_cart"].check(c, full.state())
    assert t["show_cart"].check(c, full.state())
    assert not t["show_cart"].check({"site": "ebay.com", "items": 2}, full.state())
    assert not t["show_cart"].check(c, _at(shop.home_url).state())
    empty = _at(shop.cart_add_url(PRODUCTS[0]))
    tap(empty, "web/newegg/cart/remove/0")
    assert t["clear_cart"].check(c, empty.state())


def test_search_checks_need_every_key_word_on_a_results_page() -> None:
    t = _templates()
    google = "https://www.google.com/search?q="
    p: Params = {"thing": "hotels in Washington DC"}
    assert t["search_google"].check(p, _at(google + "hotels+in+washington+dc").state())
    assert t["search_google"].check(p, _at(google + "washington+dc+hotel").state())
    assert not t["search_google"].check(p, _at(google + "hotels+in+washington").state())
    assert not t["search_google"].check(p, _at("https://www.google.com/").state())
    assert not t["search_google"].check(
        p, _at("https://en.wikipedia.org/wiki/Hotels_in_Washington_DC").state()
    )
    weather: Params = {"city": "Rio de Janeiro"}
    assert t["weather"].check(weather, _at(google + "weather+rio+de+janeiro").state())
    assert not t["weather"].check(weather, _at(google + "rio+de+janeiro").state())
    assert t["world_time"].check({"city": "Tokyo"}, _at(google + "time+in+tokyo").state())
    assert not t["world_time"].check({"city": "Tokyo"}, _at(google + "weather+tokyo").state())
    assert t["item_price"].check({"item": "iPad Air"}, _at(google + "ipad+air+price").state())
    restaurant: Params = {"cuisine": "Thai", "city": "Chicago"}
    assert t["restaurant"].check(restaurant, _at(google + "thai+restaurants+chicago").state())
    assert not t["restaurant"].check(restaurant, _at(google + "thai+food+chicago").state())
    site: Params = {"site": "espn.com"}
    assert t["open_site"].check(site, _at("https://www.espn.com/").state())
    assert t["open_site"].check(site, _at("https://www.espn.com/nba/scores").state())
    assert not t["open_site"].check(site, _at("https://www.google.com/search?q=espn.com").state())
    offline = _at(google + "hotels+in+washington+dc")
    offline.put_setting("global", "airplane_mode_on", "1")
    assert not t["search_google"].check(p, offline.state())


def test_goals_read_like_aitw() -> None:
    t = _templates()
    assert t["add_first"].goal({"site": "ebay.com", "product": "jbl flip 4"}) == (
        'Go to ebay.com, search for "jbl flip 4", and add the first entry to the cart'
    )
    assert t["item_price"].goal({"item": "iPad Air"}) == "How much does an iPad Air cost?"
    assert t["weather"].goal({"city": "Paris"}) == "What's the weather like in Paris?"
    assert Chrome().defaults()["carts"] == {}


# ---------------------------------------------------------------------- the expert solves every task
class _Nuisances(Counter[str]):
    def saw(self, phone: Phone) -> None:
        top = phone.top_frame
        if top["dialog"] is not None:
            self["dialog"] += 1
        if float(top.get("loading_until", 0.0)) > float(phone.data["clock_s"]):
            self["loading"] += 1
        if top["args"].get("ad"):
            self["ad"] += 1
        if "pending" in phone.data["apps"][CHROME]["cookies"].values():
            self["banner"] += 1


def _solve(template: Template, params: Params, seed: int, limit: int, seen: _Nuisances) -> int:
    """Steps the expert takes to finish (its final STATUS_TASK_COMPLETE included); fails if it does not."""
    phone = _phone(nuisances=True, seed=seed)
    for command in template.setup(params):
        assert run_shell(phone, command).exit_code == 0, command
    check: Callable[[Params, Json], bool] = template.check
    assert not check(params, phone.state()), f"{template.name} {params} is done before it starts"
    for step in range(1, limit + 1):
        action = template.expert(params, phone)
        if action.type is ActionType.STATUS_TASK_COMPLETE:
            assert check(params, phone.state()), f"{template.name} {params}: done too early"
            return step
        phone.perform(to_gesture(action, phone.width, phone.height))
        phone.advance(1.0)  # the screenshot between steps
        seen.saw(phone)
    raise AssertionError(f"{template.name} {params} (seed {seed}) is not solved in {limit} steps")


@pytest.mark.parametrize(
    ("name", "templates", "limit"),
    [("web_shopping", WEB_SHOPPING.templates, 20), ("web_search", web_search.TEMPLATES, 10)],
)
def test_expert_solves_every_task_with_nuisances(
    name: str, templates: tuple[Template, ...], limit: int
) -> None:
    seen = _Nuisances()
    steps: list[int] = []
    for number, template in enumerate(templates):
        for index, params in enumerate(template.params()):
            steps.append(_solve(template, params, number + index, limit, seen))
    assert max(steps) <= limit
    wanted = ("dialog", "loading", "ad", "banner") if name == "web_shopping" else ("dialog", "loading")
    assert all(seen[kind] > 10 for kind in wanted), seen
