"""Everyday apps that general tasks open: Gmail, Maps, Photos, Contacts, Phone, Messages, Calendar, ...

Each is a ``ListApp``: it opens on a recognisable first screen (an app bar with the app's name, a
search field where the real app has one, sections of plausible items, a bottom navigation bar where the
real app has one). Searching records the query and shows a results page; a floating button opens a
small form whose submissions are kept; tapping an item opens it. Pop-ups and slow first loads come only
with the phone's ``nuisances``. ``basic_apps()`` adds Camera and Calculator (their own modules) in
launcher order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from distrl.sim.app import App, BaseApp, Context, Json
from distrl.sim.apps.calculator import Calculator
from distrl.sim.apps.camera import Camera
from distrl.sim.apps.widgets import (
    ACCENT_BG,
    BAR_H,
    ON_ACCENT,
    W,
    app_bar,
    fab,
    ignore_text,
    launch_nuisance,
    list_row,
    section_header,
    slug,
    spacer,
    text_block,
)
from distrl.sim.ui import Box, Colour, Element, Palette

__all__ = ["BASIC_APPS", "ListApp", "ListSpec", "basic_apps"]


@dataclass(frozen=True, kw_only=True)
class ListSpec:
    """What a list app shows: its identity, first screen, search and floating-button form."""

    package: str
    activity: str
    label: str
    icon: str
    colour: Colour
    slug: str
    """Prefix of the app's element ids (``gmail``)."""
    title: str
    """The app bar's title on the first screen."""
    search_hint: str = ""
    """The search field's hint; empty: the app has no search."""
    sections: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    """``(header, ((title, subtitle), ...))``; an empty header draws none."""
    avatars: bool = True
    """Rows start with a round badge of the item's initial."""
    tabs: tuple[str, ...] = ()
    """A bottom navigation bar (the first tab is the list; the others are simple pages)."""
    form: tuple[str, tuple[str, ...], str] | None = None
    """The floating button's form: ``(title, field labels, submit label)``; None: no floating button."""
    fab_text: str = ""
    dialog: tuple[str, str, str, tuple[str, ...]] | None = None
    """The pop-up a fresh launch may show (with nuisances)."""
    p_loading: float = 0.0
    """Chance of a slow first load on a fresh launch (with nuisances)."""
    results: tuple[str, ...] = ("{q}", "{q} - top result", "Best {q} near you", "{q} reviews")
    """Result titles for a query (``{q}`` is the query)."""


_AVATAR_COLOURS: tuple[Colour, ...] = (
    (26, 115, 232),
    (217, 48, 37),
    (30, 142, 62),
    (249, 171, 0),
    (161, 66, 244),
    (0, 137, 123),
)


class ListApp(BaseApp):
    """An app whose first screen is a list: a search field, sections of rows, an optional form.

    Screens: ``main`` (the list; arg ``tab``), ``search`` (the search field, focused), ``results`` (arg
    ``q``), ``item`` (args ``title``, ``subtitle``), ``form``. Data: ``searches`` (every submitted
    query) and ``submitted`` (every submitted form, field label -> text).
    """

    def __init__(self, spec: ListSpec) -> None:
        self.spec = spec
        self.package = spec.package
        self.activity = spec.activity
        self.label = spec.label
        self.icon = spec.icon
        self.colour = spec.colour

    def defaults(self) -> Json:
        return {"searches": [], "submitted": []}

    def on_launch(self, ctx: Context) -> None:
        launch_nuisance(ctx, self.spec.dialog, p_loading=self.spec.p_loading)

    def view(self, ctx: Context) -> list[Element]:
        screen = ctx.screen
        if screen == "search":
            return self._search(ctx)
        if screen == "results":
            return self._results(ctx)
        if screen == "item":
            return self._item(ctx)
        if screen == "form":
            return self._form(ctx)
        return self._main(ctx)

    # --- screens ---
    def _main(self, ctx: Context) -> list[Element]:
        s = self.spec
        tab = str(ctx.args.get("tab", s.tabs[0] if s.tabs else ""))
        out = app_bar(ctx, s.slug, s.title, back=False)
        y = BAR_H
        if s.search_hint:
            out.append(
                Element(
                    id=f"{s.slug}/search",
                    box=Box(16, y + 4, W - 16, y + 52),
                    kind="field",
                    hint=s.search_hint,
                    radius=24,
                    fill=Palette.CARD,
                    on_tap=lambda: self._open_search(ctx),
                )
            )
            y += 64
        if s.tabs and tab != s.tabs[0]:
            rows, y = text_block(f"{s.slug}/empty", y + 24, f"Nothing in {tab} yet.", lines=1)
            out.extend(rows)
        else:
            for section, items in s.sections:
                if section:
                    rows, y = section_header(f"{s.slug}/section/{slug(section)}", y, section)
                    out.extend(rows)
                for title, subtitle in items:
                    rows, y = self._row(ctx, y, title, subtitle)
                    out.extend(rows)
        bottom = 0.0
        if s.tabs:
            bottom = 72.0
            out.extend(self._tabs(ctx, tab))
        if s.form is not None:
            out.extend(fab(f"{s.slug}/fab", ctx, s.fab_text, lambda: ctx.push("form"), bottom=bottom + 20))
        out.append(spacer(s.slug, y + bottom + 90))
        return out

    def _row(self, ctx: Context, y: float, title: str, subtitle: str) -> tuple[list[Element], float]:
        s = self.spec

        def open_item() -> None:
            ctx.push("item", title=title, subtitle=subtitle)

        if s.avatars:
            colour = _AVATAR_COLOURS[sum(title.encode()) % len(_AVATAR_COLOURS)]
            initial = title[:1].upper() if title[:1].isalpha() else "#"
            return list_row(
                f"{s.slug}/row/{slug(title)}",
                y,
                title,
                subtitle,
                on_tap=open_item,
                icon=initial,
                icon_fill=colour,
            )
        return list_row(f"{s.slug}/row/{slug(title)}", y, title, subtitle, on_tap=open_item)

    def _tabs(self, ctx: Context, current: str) -> list[Element]:
        s = self.spec
        top = ctx.viewport_height - 72
        out = [
            Element(
                id=f"{s.slug}/tabs",
                box=Box(0, top, W, ctx.viewport_height),
                kind="bar",
                fill=Palette.BAR,
                fixed=True,
            )
        ]
        width = W / len(s.tabs)
        for i, name in enumerate(s.tabs):
            box = Box(i * width, top, (i + 1) * width, ctx.viewport_height)
            chosen = name == current
            pill = Box(box.centre[0] - 30, top + 10, box.centre[0] + 30, top + 38)
            out.append(
                Element(
                    id=f"{s.slug}/tab/{slug(name)}/icon",
                    box=pill,
                    kind="icon",
                    icon=name[0],
                    fill=ACCENT_BG if chosen else Palette.BAR,
                    colour=ON_ACCENT if chosen else Palette.MUTED,
                    radius=14,
                    fixed=True,
                )
            )

            def choose(name: str = name) -> None:
                ctx.frame["args"]["tab"] = name
                ctx.frame["scroll"] = 0.0

            out.append(
                Element(
                    id=f"{s.slug}/tab/{slug(name)}/label",
                    box=Box(box.x0, top + 40, box.x1, top + 64),
                    text=name,
                    size=13,
                    bold=chosen,
                    align="centre",
                    fixed=True,
                )
            )
            out.append(Element(id=f"{s.slug}/tab/{slug(name)}", box=box, text="", fixed=True, on_tap=choose))
        return out

    def _open_search(self, ctx: Context) -> None:
        ctx.push("search")
        ctx.phone.top_frame["focus"] = f"{self.spec.slug}/query"

    def _search(self, ctx: Context) -> list[Element]:
        s = self.spec
        field_id = f"{s.slug}/query"
        out = app_bar(ctx, s.slug, "")
        out.append(
            Element(
                id=field_id,
                box=Box(64, 8, W - 16, 56),
                text=ctx.field(field_id),
                kind="field",
                hint=s.search_hint,
                radius=24,
                fill=Palette.CARD,
                fixed=True,
                on_tap=lambda: ctx.focus(field_id),
                on_submit=lambda text: self._submit(ctx, text),
            )
        )
        y = BAR_H + 8
        history: list[str] = [str(q) for q in ctx.data.get("searches", [])][-4:]
        if history:
            rows, y = section_header(f"{s.slug}/recent", y, "Recent searches")
            out.extend(rows)
            for q in reversed(history):
                rows, y = list_row(f"{s.slug}/recent/{slug(q)}", y, q, on_tap=partial(self._submit, ctx, q))
                out.extend(rows)
        return out

    def _submit(self, ctx: Context, text: str) -> None:
        query = " ".join(text.split())
        if not query:
            return
        ctx.data.setdefault("searches", []).append(query)
        ctx.replace("results", q=query)
        ctx.set_loading(0.3)

    def _results(self, ctx: Context) -> list[Element]:
        s = self.spec
        query = str(ctx.args.get("q", ""))
        field_id = f"{s.slug}/results/query"
        out = app_bar(ctx, s.slug, "")
        out.append(
            Element(
                id=field_id,
                box=Box(64, 8, W - 16, 56),
                text=query,
                kind="field",
                radius=24,
                fill=Palette.CARD,
                fixed=True,
                on_tap=lambda: self._open_search(ctx),
            )
        )
        rows, y = text_block(f"{s.slug}/results/count", BAR_H, f'Results for "{query}"', lines=1)
        out.extend(rows)
        for i, template in enumerate(s.results):
            title = template.format(q=query.title() if i else query)
            rows, y = self._row(ctx, y, title, _RESULT_SUBTITLES[i % len(_RESULT_SUBTITLES)])
            out.extend(rows)
        return out

    def _item(self, ctx: Context) -> list[Element]:
        s = self.spec
        title = str(ctx.args.get("title", ""))
        subtitle = str(ctx.args.get("subtitle", ""))
        out = app_bar(ctx, s.slug, s.label)
        colour = _AVATAR_COLOURS[sum(title.encode()) % len(_AVATAR_COLOURS)]
        out.append(
            Element(
                id=f"{s.slug}/item/badge",
                box=Box(W / 2 - 44, 88, W / 2 + 44, 176),
                kind="icon",
                icon=title[:1].upper(),
                fill=colour,
                colour=Palette.ON_PRIMARY,
                radius=44,
            )
        )
        out.append(
            Element(
                id=f"{s.slug}/item/title",
                box=Box(24, 192, W - 24, 236),
                text=title,
                size=24,
                align="centre",
                lines=1,
            )
        )
        out.append(
            Element(
                id=f"{s.slug}/item/subtitle",
                box=Box(24, 240, W - 24, 300),
                text=subtitle,
                size=16,
                colour=Palette.MUTED,
                align="centre",
                lines=2,
            )
        )
        return out

    def _form(self, ctx: Context) -> list[Element]:
        s = self.spec
        assert s.form is not None
        title, labels, submit = s.form
        width = 40 + len(submit) * 10.0
        send = Element(
            id=f"{s.slug}/form/submit",
            box=Box(W - 16 - width, 12, W - 16, 52),
            kind="button",
            colour=Palette.ON_PRIMARY,
            text=submit,
            size=15,
            bold=True,
            align="centre",
            fixed=True,
            on_tap=lambda: self._send(ctx),
        )
        out = app_bar(ctx, s.slug, title, actions=[send])
        y = BAR_H + 8
        for label in labels:
            field_id = f"{s.slug}/form/{slug(label)}"
            out.append(
                Element(
                    id=field_id,
                    box=Box(16, y, W - 16, y + 52),
                    text=ctx.field(field_id),
                    kind="field",
                    hint=label,
                    on_tap=partial(ctx.focus, field_id),
                    on_submit=ignore_text,
                )
            )
            y += 64
        return out

    def _send(self, ctx: Context) -> None:
        s = self.spec
        assert s.form is not None
        title, labels, _ = s.form
        entry = {label: ctx.field(f"{s.slug}/form/{slug(label)}") for label in labels}
        if not any(entry.values()):
            ctx.toast("Nothing to save")
            return
        ctx.data.setdefault("submitted", []).append(entry)
        ctx.focus(None)
        ctx.back()
        ctx.toast("Sent" if title.lower().startswith(("compose", "new message")) else "Saved")


_RESULT_SUBTITLES = (
    "Top result",
    "4.6 (1.2K reviews)",
    "Popular right now",
    "Updated this week",
)

_BLUE: Colour = (26, 115, 232)

# fmt: off
BASIC_APPS: tuple[ListSpec, ...] = (
    ListSpec(
        package="com.google.android.gm", activity=".ConversationListActivityGmail", label="Gmail", icon="M",
        colour=(234, 67, 53), slug="gmail", title="Gmail", search_hint="Search in mail",
        sections=(
            ("Primary", (
                ("Google", "Security alert: new sign-in on Pixel 6"),
                ("Maria Lopez", "Dinner on Friday? Let me know by Thursday"),
                ("Amazon.com", "Your order has shipped"),
                ("GitHub", "[distrl] Pull request merged"),
                ("Kevin Chen", "Photos from the weekend"),
                ("Calendar", "Reminder: Dentist appointment tomorrow"),
                ("LinkedIn", "You appeared in 12 searches this week"),
                ("Netflix", "New arrivals this week"),
            )),
        ),
        form=("Compose", ("To", "Subject", "Compose email"), "Send"), fab_text="Compose",
        dialog=("gmail_meet", "Meet in Gmail", "Start or join video meetings right from Gmail.", ("Got it",)),
        p_loading=0.3, results=("{q}", "Re: {q}", "Fwd: {q}", "{q} - receipt"),
    ),
    ListSpec(
        package="com.google.android.apps.maps", activity="com.google.android.maps.MapsActivity", label="Maps",
        icon="Ma", colour=(52, 168, 83), slug="maps", title="Maps", search_hint="Search here", avatars=False,
        sections=(
            ("Explore nearby", (
                ("Restaurants", "Open now - 4.4 average"),
                ("Coffee", "12 places within 1 mi"),
                ("Gas", "Lowest $3.89/gal"),
                ("Groceries", "Open until 10 PM"),
                ("Hotels", "From $129/night"),
            )),
            ("Recent", (
                ("Home", "1600 Amphitheatre Pkwy, Mountain View"),
                ("Work", "345 Spear St, San Francisco"),
                ("San Francisco Airport (SFO)", "San Francisco, CA 94128"),
            )),
        ),
        tabs=("Explore", "Go", "Saved", "Contribute"),
        dialog=("maps_location", "Turn on location accuracy",
                "For a better experience, turn on device location, which uses Google's location service.",
                ("No thanks", "Turn on")),
        p_loading=0.3, results=("{q}", "{q} - 0.4 mi", "{q} - 1.2 mi", "{q} - 2.8 mi"),
    ),
    ListSpec(
        package="com.google.android.apps.photos", activity=".home.HomeActivity", label="Photos", icon="Ph",
        colour=(244, 160, 0), slug="photos", title="Google Photos", search_hint="Search your photos",
        sections=(
            ("Today", (("Beach sunset", "6 photos - Half Moon Bay"), ("Coffee with Sam", "2 photos"))),
            ("Yesterday", (("Hiking trip", "24 photos - Mount Tam"), ("Screenshots", "3 items"))),
            ("Oct 10", (("Birthday party", "18 photos and 2 videos"), ("Receipts", "4 photos"))),
        ),
        tabs=("Photos", "Search", "Library"),
        dialog=("photos_backup", "Back up your photos?",
                "Keep your photos and videos safe by backing them up to your Google Account.",
                ("Not now", "Back up")),
    ),
    ListSpec(
        package="com.google.android.contacts", activity="com.android.contacts.activities.PeopleActivity",
        label="Contacts", icon="Co", colour=(66, 133, 244), slug="contacts", title="Contacts",
        search_hint="Search contacts",
        sections=(
            ("A", (("Alex Johnson", "(650) 555-0134"), ("Amy Park", "(415) 555-0172"))),
            ("B", (("Ben Carter", "(212) 555-0198"),)),
            ("D", (("David Kim", "(310) 555-0110"),)),
            ("E", (("Emma Wilson", "(650) 555-0157"),)),
            ("M", (("Maria Lopez", "(408) 555-0123"), ("Mom", "(650) 555-0100"))),
            ("S", (("Sam Rivera", "(415) 555-0188"),)),
        ),
        form=("Create contact", ("First name", "Last name", "Phone"), "Save"),
        dialog=("contacts_sync", "Sync contacts?", "Back up and sync your contacts with your Google Account.",
                ("Not now", "Turn on")),
    ),
    ListSpec(
        package="com.google.android.dialer", activity=".extensions.GoogleDialtactsActivity", label="Phone",
        icon="P", colour=(30, 142, 62), slug="dialer", title="Phone", search_hint="Search contacts & places",
        sections=(
            ("Recents", (
                ("Mom", "Mobile - 2 hours ago"),
                ("Maria Lopez", "Missed call - Yesterday"),
                ("(800) 555-0199", "Spam risk - Yesterday"),
                ("Ben Carter", "Outgoing - Oct 12"),
                ("David Kim", "Incoming - Oct 11"),
            )),
        ),
        tabs=("Favorites", "Recents", "Contacts"), form=("Keypad", ("Phone number",), "Call"),
        dialog=("dialer_default", "Set Phone as default app?",
                "Set Phone as your default caller ID & spam app to see who's calling.",
                ("Cancel", "Set as default")),
    ),
    ListSpec(
        package="com.google.android.apps.messaging", activity=".ui.ConversationListActivity",
        label="Messages", icon="Me", colour=_BLUE, slug="messages", title="Messages",
        search_hint="Search conversations",
        sections=(
            ("", (
                ("Mom", "Call me when you land"),
                ("Maria Lopez", "See you at 7!"),
                ("Sam Rivera", "Haha that's great"),
                ("22000", "Your verification code is 482913"),
                ("Kevin Chen", "Sent a photo"),
                ("Pharmacy", "Your prescription is ready"),
            )),
        ),
        form=("New message", ("To", "Text message"), "Send"), fab_text="Start chat",
        dialog=("messages_rcs", "Chat features", "Send and receive messages over Wi-Fi and mobile data.",
                ("Later", "Turn on")),
    ),
    ListSpec(
        package="com.google.android.calendar", activity="com.android.calendar.AllInOneActivity",
        label="Calendar", icon="31", colour=(66, 133, 244), slug="calendar", title="October 2023",
        search_hint="Search events", avatars=False,
        sections=(
            ("Sun, Oct 15", (("Brunch with Maria", "11:00 AM - 12:30 PM"), ("Call Mom", "6:00 - 6:30 PM"))),
            ("Mon, Oct 16", (("Team standup", "9:30 - 9:45 AM"), ("Dentist", "2:00 - 3:00 PM"))),
            ("Tue, Oct 17", (("Gym", "7:00 - 8:00 AM"),)),
            ("Wed, Oct 18", (("Project review", "1:00 - 2:00 PM"), ("Yoga class", "6:30 - 7:30 PM"))),
        ),
        form=("New event", ("Add title", "Location"), "Save"),
        dialog=("calendar_welcome", "Welcome to Google Calendar",
                "Events from Gmail and your other calendars show up here.", ("Got it",)),
    ),
    ListSpec(
        package="com.google.android.youtube",
        activity="com.google.android.apps.youtube.app.WatchWhileActivity", label="YouTube", icon="YT",
        colour=(255, 0, 0), slug="youtube", title="YouTube",
        search_hint="Search YouTube",
        sections=(
            ("", (
                ("Lofi hip hop radio - beats to relax/study to", "Lofi Girl - 38K watching"),
                ("How to make perfect pancakes", "Tasty - 2.1M views - 3 years ago"),
                ("Top 10 hidden features of Android 13", "Tech Tips - 812K views"),
                ("NBA highlights: Warriors vs Lakers", "NBA - 1.4M views - 1 day ago"),
                ("10-minute morning yoga", "Yoga with Adriene - 9M views"),
                ("Learn Python in 1 hour", "Programming with Mosh - 15M views"),
            )),
        ),
        tabs=("Home", "Shorts", "Subscriptions", "Library"),
        dialog=("youtube_premium", "Try YouTube Premium", "Ad-free videos, downloads and background play.",
                ("No thanks", "Try it free")),
        p_loading=0.35, results=("{q}", "{q} - full video", "Best of {q}", "{q} explained"),
    ),
    ListSpec(
        package="com.android.vending", activity="com.google.android.finsky.activities.MainActivity",
        label="Play Store", icon="PS", colour=(1, 135, 95), slug="playstore", title="Google Play",
        search_hint="Search for apps & games",
        sections=(
            ("Recommended for you", (
                ("Spotify: Music and Podcasts", "Music & Audio - 4.4 stars"),
                ("Duolingo: Language Lessons", "Education - 4.7 stars"),
                ("Instagram", "Social - 4.1 stars"),
                ("Candy Crush Saga", "Casual - 4.6 stars"),
                ("Google Drive", "Productivity - 4.4 stars"),
                ("WhatsApp Messenger", "Communication - 4.3 stars"),
            )),
        ),
        tabs=("Apps", "Games", "Books"),
        dialog=("play_update", "Updates available", "12 apps have updates. Update them now over Wi-Fi?",
                ("Not now", "Update all")),
        p_loading=0.3, results=("{q}", "{q} Lite", "{q} - Editor's choice", "{q} alternatives"),
    ),
    ListSpec(
        package="com.google.android.documentsui", activity="com.android.documentsui.files.FilesActivity",
        label="Files", icon="F", colour=_BLUE, slug="files", title="Files", search_hint="Search files",
        avatars=False,
        sections=(
            ("Categories", (
                ("Images", "142 items"), ("Videos", "18 items"), ("Audio", "36 items"),
                ("Documents", "27 items"), ("Downloads", "9 items"),
            )),
            ("Recent files", (
                ("boarding_pass.pdf", "212 KB - Oct 14"),
                ("IMG_20231014_1830.jpg", "3.1 MB - Oct 14"),
                ("notes.txt", "2 KB - Oct 12"),
            )),
        ),
    ),
)
# fmt: on
"""The list apps, in launcher order (Camera and Calculator are separate classes)."""


def basic_apps() -> list[App]:
    """A fresh instance of every everyday app, in launcher order."""
    apps: dict[str, App] = {spec.label: ListApp(spec) for spec in BASIC_APPS}
    apps.update(Camera=Camera(), Calculator=Calculator())
    order = ("Gmail", "Maps", "Photos", "Camera", "Contacts", "Phone", "Messages", "Calendar", "YouTube",
             "Play Store", "Calculator", "Files")  # fmt: skip
    return [apps[label] for label in order]
