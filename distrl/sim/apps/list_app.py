"""``ListApp``: an everyday app whose first screen is a list, drawn from its ``ListSpec`` (``basic`` holds
the specs of Gmail, Maps, Photos, ...).

It opens on a recognisable first screen (an app bar with the app's name, a search field where the real
app has one, sections of plausible items, a bottom navigation bar where the real app has one). Searching
records the query and shows a results page; a floating button opens a small form whose submissions are
kept; tapping an item opens it. Pop-ups and slow first loads come only with the phone's ``nuisances``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from distrl.sim.app import BaseApp, Context, Json
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

__all__ = ["ListApp", "ListSpec"]


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
