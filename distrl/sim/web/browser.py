"""The browser as pages see it: the ``Browser`` protocol (what a page may read and do; the Chrome app
implements it over the phone's state), the cart's lines, and the height of the browser's own bar.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

__all__ = ["BAR_HEIGHT", "Browser", "CartItem"]

BAR_HEIGHT = 56.0
"""Height of the browser's own bar (address field, tabs, menu) above every page."""


@dataclass(frozen=True, slots=True)
class CartItem:
    """One line of a shopping cart."""

    product: str
    """The product's slug (``distrl.sim.web.catalogue``)."""
    qty: int


class Browser(Protocol):
    """What a page may read and do; the Chrome app implements it over the phone's state."""

    @property
    def now(self) -> datetime:
        """The phone's clock (UTC)."""
        ...

    @property
    def viewport(self) -> float:
        """Height of the content area in dp, browser bar included."""
        ...

    @property
    def ad(self) -> bool:
        """Whether this results page shows a sponsored entry (drawn when the page opened)."""
        ...

    def go(self, url: str) -> None:
        """Open ``url`` as a new page (BACK returns here)."""
        ...

    def field(self, field_id: str) -> str:
        """Text typed into a field of this page."""
        ...

    @property
    def focused(self) -> str | None: ...

    def edit(self, field_id: str) -> None:
        """Focus ``field_id`` with its text selected (typing replaces it)."""
        ...

    def cart(self, domain: str) -> list[CartItem]: ...

    def add_to_cart(self, domain: str, slug: str) -> None: ...

    def remove_from_cart(self, domain: str, slug: str) -> None: ...

    def cookie_banner(self, domain: str) -> bool:
        """Whether the site still waits for an answer to its cookie banner."""
        ...

    def answer_cookies(self, domain: str, accepted: bool) -> None: ...

    def toast(self, text: str) -> None: ...
