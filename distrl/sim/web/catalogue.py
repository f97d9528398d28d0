"""The products every shopping site sells: a fixed catalogue of brands, product lines and variants.

A product line (``Razer Thresher 7.1``, a wireless gaming headset, $149.99) comes in a few variants
(colours, sizes, editions); each variant is one ``Product`` with a title such as
``Razer Thresher 7.1 Wireless Gaming Headset - Black``. The list is plain data: the catalogue is the
same in every process, with no randomness at import. Sites price and order it their own way
(``distrl.sim.web.shops``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from distrl.sim.web.text import STOP_WORDS, tokens

__all__ = ["CATEGORIES", "PRODUCTS", "Product", "by_slug"]


@dataclass(frozen=True, slots=True)
class Product:
    """One thing a shop sells."""

    slug: str
    """Unique, URL-safe (``razer-thresher-7-1-wireless-gaming-headset-black``)."""
    index: int
    """Position in ``PRODUCTS``; sites derive their item numbers from it."""
    brand: str
    line: str
    """The model line without the brand (``Thresher 7.1``)."""
    category: str
    """A key of ``CATEGORIES``."""
    title: str
    price: float
    """List price in US dollars; each site adds its own markup or discount."""
    words: frozenset[str]
    """Stemmed words a search matches against (title words plus the category's synonyms)."""


CATEGORIES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    # key: (what follows the model in a title, extra search words)
    "headset": ("Wireless Gaming Headset", ("headphones", "gaming")),
    "wired_headset": ("Gaming Headset", ("headphones", "gaming", "wired")),
    "headphones": ("Wireless Noise Cancelling Headphones", ("headset", "bluetooth", "over-ear")),
    "on_ear": ("Wireless On-Ear Headphones", ("headset", "bluetooth")),
    "earbuds": ("True Wireless Earbuds", ("headphones", "bluetooth", "earphones")),
    "speaker": ("Portable Bluetooth Speaker", ("wireless", "waterproof")),
    "smart_speaker": ("Smart Speaker", ("wifi", "voice", "assistant")),
    "laptop": ("Laptop", ("notebook", "computer", "pc")),
    "gaming_laptop": ("Gaming Laptop", ("notebook", "computer", "pc")),
    "desktop": ("Gaming Desktop", ("computer", "pc", "tower")),
    "phone": ("Smartphone", ("phone", "cell", "unlocked")),
    "tablet": ("Tablet", ("ipad", "android")),
    "ereader": ("E-Reader", ("ebook", "reader", "tablet")),
    "mouse": ("Gaming Mouse", ("mice", "wireless", "gaming")),
    "office_mouse": ("Wireless Mouse", ("mice", "bluetooth")),
    "keyboard": ("Mechanical Gaming Keyboard", ("rgb", "gaming")),
    "office_keyboard": ("Wireless Keyboard", ("bluetooth", "office")),
    "monitor": ("Gaming Monitor", ("display", "screen")),
    "office_monitor": ("4K USB-C Monitor", ("display", "screen")),
    "tv": ("Smart TV", ("television", "4k", "uhd")),
    "console": ("Console", ("gaming", "video", "game")),
    "camera": ("Digital Camera", ("photo", "dslr", "mirrorless")),
    "action_camera": ("Action Camera", ("video", "waterproof")),
    "drone": ("Camera Drone", ("quadcopter", "video")),
    "watch": ("Smartwatch", ("watch", "fitness", "tracker")),
    "tracker": ("Fitness Tracker", ("watch", "band", "health")),
    "ssd": ("Internal SSD", ("storage", "drive", "nvme")),
    "memory_card": ("Memory Card", ("storage", "microsd", "card")),
    "external_drive": ("Portable External Hard Drive", ("storage", "usb", "hdd")),
    "gpu": ("Graphics Card", ("gpu", "video", "card")),
    "cpu": ("Desktop Processor", ("cpu", "processor")),
    "ram": ("Desktop Memory", ("ram", "ddr5", "memory")),
    "power_bank": ("Portable Charger", ("power", "bank", "battery")),
    "cable": ("Cable", ("charger", "charging", "usb")),
    "battery": ("Batteries", ("battery", "alkaline")),
    "webcam": ("HD Webcam", ("camera", "video", "usb")),
    "router": ("WiFi 6 Router", ("wifi", "wireless", "internet")),
}

# (brand, model line, category, list price, variants); a variant of "" means the plain product.
_LINES: tuple[tuple[str, str, str, float, tuple[str, ...]], ...] = (
    ("Razer", "Thresher 7.1", "headset", 149.99, ("Black", "for Xbox One", "for PS4")),
    ("Razer", "Kraken X", "wired_headset", 49.99, ("Black", "Mercury White", "Quartz Pink")),
    ("Razer", "BlackShark V2", "wired_headset", 99.99, ("Black", "Special Edition")),
    ("Logitech", "G933 Artemis Spectrum", "headset", 129.99, ("Black", "Snow White")),
    ("Logitech", "G Pro X", "wired_headset", 129.99, ("Black", "League of Legends Edition")),
    ("SteelSeries", "Arctis 7", "headset", 149.99, ("Black", "White")),
    ("HyperX", "Cloud II", "wired_headset", 99.99, ("Red", "Gun Metal")),
    ("Corsair", "HS80 RGB", "headset", 149.99, ("Carbon", "White")),
    ("Sony", "WH-1000XM5", "headphones", 399.99, ("Black", "Silver", "Midnight Blue")),
    ("Sony", "WH-1000XM4", "headphones", 349.99, ("Black", "Silver")),
    ("Bose", "QuietComfort 45", "headphones", 329.00, ("Black", "White Smoke")),
    ("Bose", "QuietComfort 35 II", "headphones", 299.00, ("Black", "Silver")),
    ("Beats", "Solo3", "on_ear", 199.99, ("Black", "Rose Gold", "Red")),
    ("Beats", "Studio3", "headphones", 349.99, ("Matte Black", "Blue")),
    ("Apple", "AirPods Pro (2nd Generation)", "earbuds", 249.00, ("",)),
    ("Apple", "AirPods (3rd Generation)", "earbuds", 169.00, ("",)),
    ("Samsung", "Galaxy Buds2 Pro", "earbuds", 229.99, ("Graphite", "White", "Bora Purple")),
    ("Jabra", "Elite 85t", "earbuds", 229.99, ("Titanium Black", "Grey")),
    ("JBL", "Flip 4", "speaker", 99.95, ("Black", "Blue", "Red")),
    ("JBL", "Flip 6", "speaker", 129.95, ("Black", "Blue", "Teal")),
    ("JBL", "Charge 5", "speaker", 179.95, ("Black", "Camo")),
    ("Bose", "SoundLink Mini II", "speaker", 199.00, ("Carbon", "Pearl")),
    ("Bose", "SoundLink Flex", "speaker", 149.00, ("Black", "Stone Blue")),
    ("Ultimate Ears", "BOOM 3", "speaker", 149.99, ("Night Black", "Sunset Red")),
    ("Sonos", "One (Gen 2)", "smart_speaker", 219.00, ("Black", "White")),
    ("Amazon", "Echo Dot (5th Gen)", "smart_speaker", 49.99, ("Charcoal", "Glacier White")),
    ("Apple", "MacBook Air 13.6-inch M2", "laptop", 1099.00, ("8GB 256GB Midnight", "8GB 512GB Silver")),
    ("Apple", "MacBook Air 13.3-inch M1", "laptop", 999.00, ("8GB 256GB Space Gray", "8GB 256GB Gold")),
    ("Apple", "MacBook Pro 14-inch M2 Pro", "laptop", 1999.00, ("16GB 512GB", "16GB 1TB")),
    ("Dell", "XPS 13", "laptop", 999.99, ("i5 8GB 512GB", "i7 16GB 512GB")),
    ("Dell", "XPS 15", "laptop", 1499.99, ("i7 16GB 512GB", "i9 32GB 1TB")),
    ("Alienware", "m15 R7", "gaming_laptop", 1799.99, ("RTX 3070 Ti", "RTX 3080 Ti")),
    ("Alienware", "Area-51", "desktop", 2999.99, ("RTX 3080", "RTX 3090")),
    ("Alienware", "Aurora R15", "desktop", 2199.99, ("RTX 4070 Ti", "RTX 4080")),
    ("HP", "Spectre x360 14", "laptop", 1399.99, ("i7 16GB 1TB", "i7 16GB 512GB")),
    ("HP", "Pavilion 15", "laptop", 649.99, ("i5 8GB 256GB", "Ryzen 7 16GB 512GB")),
    ("Lenovo", "ThinkPad X1 Carbon Gen 10", "laptop", 1649.00, ("i5 16GB 256GB", "i7 16GB 512GB")),
    ("Lenovo", "IdeaPad 3", "laptop", 449.99, ("Ryzen 5 8GB 256GB", "i3 8GB 256GB")),
    ("Lenovo", "Legion 5 Pro", "gaming_laptop", 1399.99, ("RTX 3060", "RTX 3070")),
    ("ASUS", "ROG Strix G15", "gaming_laptop", 1299.99, ("RTX 3060", "RTX 3070")),
    ("ASUS", "ZenBook 14 OLED", "laptop", 899.99, ("i5 8GB 512GB", "i7 16GB 512GB")),
    ("ASUS", "TUF Gaming F15", "gaming_laptop", 899.99, ("RTX 3050", "RTX 4050")),
    ("Acer", "Predator Helios 300", "gaming_laptop", 1499.99, ("RTX 3060", "RTX 3070 Ti")),
    ("Acer", "Aspire 5", "laptop", 499.99, ("i5 8GB 256GB", "Ryzen 5 8GB 512GB")),
    ("Acer", "Nitro 5", "gaming_laptop", 799.99, ("RTX 3050", "RTX 3060")),
    ("Microsoft", "Surface Laptop 5", "laptop", 999.99, ("13.5-inch Platinum", "15-inch Black")),
    ("Microsoft", "Surface Pro 9", "tablet", 999.99, ("Platinum", "Graphite")),
    ("Razer", "Blade 15", "gaming_laptop", 2499.99, ("RTX 3070 Ti", "RTX 4070")),
    ("Apple", "iPhone 14", "phone", 799.00, ("128GB Midnight", "128GB Blue", "256GB Purple")),
    ("Apple", "iPhone 14 Pro", "phone", 999.00, ("128GB Deep Purple", "256GB Space Black")),
    ("Samsung", "Galaxy S23", "phone", 799.99, ("128GB Phantom Black", "256GB Cream")),
    ("Samsung", "Galaxy S23 Ultra", "phone", 1199.99, ("256GB Phantom Black", "512GB Green")),
    ("Samsung", "Galaxy A54 5G", "phone", 449.99, ("128GB Awesome Graphite", "128GB Awesome Violet")),
    ("Google", "Pixel 7", "phone", 599.00, ("128GB Obsidian", "128GB Snow", "256GB Lemongrass")),
    ("Google", "Pixel 7 Pro", "phone", 899.00, ("128GB Obsidian", "256GB Hazel")),
    ("OnePlus", "11 5G", "phone", 699.99, ("128GB Titan Black", "256GB Eternal Green")),
    ("Apple", "iPad Air (5th Generation)", "tablet", 599.00, ("64GB Space Gray", "256GB Blue")),
    ("Apple", "iPad Pro 11-inch", "tablet", 799.00, ("128GB Silver", "256GB Space Gray")),
    ("Samsung", "Galaxy Tab S8", "tablet", 699.99, ("128GB Graphite", "256GB Silver")),
    ("Amazon", "Kindle Paperwhite", "ereader", 139.99, ("8GB Black", "16GB Agave Green")),
    ("Amazon", "Fire HD 10", "tablet", 149.99, ("32GB Black", "64GB Denim")),
    ("Logitech", "G502 HERO", "mouse", 79.99, ("Black",)),
    ("Logitech", "G502 LIGHTSPEED", "mouse", 149.99, ("Black",)),
    ("Logitech", "G Pro X Superlight", "mouse", 159.99, ("Black", "White", "Magenta")),
    ("Logitech", "MX Master 3S", "office_mouse", 99.99, ("Graphite", "Pale Gray")),
    ("Razer", "DeathAdder V3 Pro", "mouse", 149.99, ("Black", "White")),
    ("Razer", "Basilisk V3", "mouse", 69.99, ("Black",)),
    ("Corsair", "M65 RGB Ultra", "mouse", 79.99, ("Black", "White")),
    ("SteelSeries", "Rival 3", "mouse", 29.99, ("Black",)),
    ("Corsair", "K70 RGB PRO", "keyboard", 169.99, ("Cherry MX Red", "Cherry MX Brown")),
    ("Corsair", "K95 RGB Platinum XT", "keyboard", 199.99, ("Cherry MX Blue", "Cherry MX Speed")),
    ("Logitech", "G915 TKL", "keyboard", 229.99, ("Tactile", "Linear")),
    ("Logitech", "MX Keys", "office_keyboard", 119.99, ("Graphite", "Pale Gray")),
    ("Razer", "BlackWidow V3", "keyboard", 139.99, ("Green Switch", "Yellow Switch")),
    ("Razer", "Huntsman Mini", "keyboard", 119.99, ("Black", "Mercury White")),
    ("SteelSeries", "Apex Pro", "keyboard", 199.99, ("Full Size", "TKL")),
    ("LG", "UltraGear 27GN950", "monitor", 799.99, ("27-inch 4K",)),
    ("LG", "UltraGear 27GP850", "monitor", 449.99, ("27-inch QHD",)),
    ("Samsung", "Odyssey G7", "monitor", 699.99, ("27-inch", "32-inch")),
    ("Dell", "UltraSharp U2723QE", "office_monitor", 579.99, ("27-inch",)),
    ("ASUS", "TUF Gaming VG27AQ", "monitor", 329.99, ("27-inch",)),
    ("Acer", "Nitro XV272U", "monitor", 299.99, ("27-inch",)),
    ("Samsung", "Q80B QLED", "tv", 1299.99, ("55-inch", "65-inch")),
    ("LG", "C2 OLED", "tv", 1499.99, ("55-inch", "65-inch", "77-inch")),
    ("Sony", "Bravia X80K", "tv", 899.99, ("55-inch", "65-inch")),
    ("TCL", "4-Series 4K", "tv", 299.99, ("43-inch", "55-inch")),
    ("Vizio", "V-Series 4K", "tv", 349.99, ("50-inch", "65-inch")),
    ("Nintendo", "Switch OLED Model", "console", 349.99, ("White", "Neon Red and Blue")),
    ("Nintendo", "Switch Lite", "console", 199.99, ("Turquoise", "Coral", "Gray")),
    ("Sony", "PlayStation 5", "console", 499.99, ("Disc Edition", "Digital Edition")),
    ("Microsoft", "Xbox Series X", "console", 499.99, ("1TB",)),
    ("Microsoft", "Xbox Series S", "console", 299.99, ("512GB",)),
    ("Canon", "EOS Rebel T7", "camera", 479.99, ("with 18-55mm Lens", "Body Only")),
    ("Sony", "Alpha a7 IV", "camera", 2499.99, ("Body Only", "with 28-70mm Lens")),
    ("Nikon", "Z50", "camera", 859.95, ("with 16-50mm Lens",)),
    ("GoPro", "HERO11 Black", "action_camera", 399.99, ("", "Creator Edition")),
    ("DJI", "Mini 3 Pro", "drone", 759.00, ("with RC Controller", "Fly More Kit")),
    ("Apple", "Watch Series 8", "watch", 399.00, ("41mm Midnight", "45mm Starlight")),
    ("Samsung", "Galaxy Watch5", "watch", 279.99, ("40mm Graphite", "44mm Silver")),
    ("Fitbit", "Charge 5", "tracker", 149.95, ("Black", "Lunar White")),
    ("Garmin", "Forerunner 255", "watch", 349.99, ("Slate Gray", "Whitestone")),
    ("Samsung", "970 EVO Plus", "ssd", 89.99, ("500GB", "1TB", "2TB")),
    ("WD", "Black SN850X", "ssd", 119.99, ("1TB", "2TB")),
    ("SanDisk", "Ultra microSDXC", "memory_card", 19.99, ("128GB", "256GB", "512GB")),
    ("WD", "My Passport", "external_drive", 69.99, ("2TB", "4TB", "5TB")),
    ("Seagate", "Portable", "external_drive", 64.99, ("2TB", "4TB")),
    ("NVIDIA", "GeForce RTX 4070 Founders Edition", "gpu", 599.99, ("",)),
    ("ASUS", "TUF Gaming GeForce RTX 4070 Ti", "gpu", 849.99, ("",)),
    ("AMD", "Radeon RX 7900 XT", "gpu", 899.99, ("",)),
    ("AMD", "Ryzen 7 7700X", "cpu", 399.00, ("",)),
    ("Intel", "Core i7-13700K", "cpu", 409.99, ("",)),
    ("Corsair", "Vengeance DDR5", "ram", 119.99, ("32GB 5600MHz", "32GB 6000MHz")),
    ("Anker", "PowerCore 10000", "power_bank", 25.99, ("Black", "White")),
    ("Anker", "USB-C to USB-C", "cable", 12.99, ("3 ft", "6 ft")),
    ("Belkin", "USB-C to Lightning", "cable", 19.99, ("3 ft", "6 ft")),
    ("Duracell", "Coppertop AA", "battery", 12.49, ("8 Pack", "16 Pack", "24 Pack")),
    ("Energizer", "MAX AAA", "battery", 10.99, ("8 Pack", "16 Pack")),
    ("Logitech", "C920", "webcam", 69.99, ("",)),
    ("Netgear", "Nighthawk AX5400", "router", 229.99, ("",)),
    ("TP-Link", "Archer AX21", "router", 89.99, ("",)),
)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _build() -> tuple[Product, ...]:
    out: list[Product] = []
    for brand, line, category, price, variants in _LINES:
        suffix, synonyms = CATEGORIES[category]
        for i, variant in enumerate(variants):
            base = f"{brand} {line} {suffix}"
            title = f"{base} - {variant}" if variant else base
            words = {*tokens(title), *(w for s in synonyms for w in tokens(s))} - STOP_WORDS
            out.append(
                Product(
                    slug=_slug(title),
                    index=len(out),
                    brand=brand,
                    line=line,
                    category=category,
                    title=title,
                    price=round(price + 10.0 * i * (price > 100), 2),
                    words=frozenset(words),
                )
            )
    return tuple(out)


PRODUCTS: tuple[Product, ...] = _build()
"""Every product, in a fixed order."""

_BY_SLUG = {product.slug: product for product in PRODUCTS}
if len(_BY_SLUG) != len(PRODUCTS):  # pragma: no cover - a data error, caught on import
    raise RuntimeError("duplicate product slugs in the catalogue")


def by_slug(slug: str) -> Product | None:
    """The product called ``slug``, or None."""
    return _BY_SLUG.get(slug)
