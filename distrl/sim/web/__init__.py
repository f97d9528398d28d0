"""The simulated web: URLs, a search engine, shopping sites and their pages (pure functions and data).

- ``route``: what the address bar makes of typed text; which page a URL names (``parse`` -> ``Route``).
- ``catalogue``: the products every shop sells (fixed lists, a few hundred products).
- ``shops``: eBay, Newegg, Best Buy, Walmart and Costco: looks, URLs, prices, search, sponsored entries,
  and the cart deep links task setups use (``<cart url>?add=<item number>``, ``<cart url>?clear=1``).
- ``google``: Google's results and answer boxes (weather, time, prices), generated from the query.
- ``pages``, ``google_pages``, ``shop_pages`` (with ``shop_look``, what every shop page shares): pages as
  ``Element``s, through the ``Browser`` protocol that the Chrome app (``distrl.sim.apps.chrome``) implements.
- ``widgets``: what the pages (and Chrome's own screens) are drawn with: text, buttons, cards, title rows,
  empty states.
"""

from distrl.sim.web.browser import CartItem
from distrl.sim.web.catalogue import PRODUCTS, Product, by_slug
from distrl.sim.web.route import Route, parse, resolve
from distrl.sim.web.shops import SHOPS, Shop, search, sponsored

__all__ = [
    "PRODUCTS",
    "SHOPS",
    "CartItem",
    "Product",
    "Route",
    "Shop",
    "by_slug",
    "parse",
    "resolve",
    "search",
    "sponsored",
]
