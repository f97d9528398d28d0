"""Screenshots: encoding and decoding them in the worker's screen format (``[screen]``, ``screen_options``),
checking what a device sends, and the white-frame retries of a capture. The simulated phone encodes its
screens with ``encode`` and ``fit`` too.

Image work is CPU-bound, so devices run these functions in worker threads behind ``image_limiter()``,
one ``CapacityLimiter`` per event loop sized to the machine's cores: hundreds of devices share a few
threads and the event loop stays free.
"""

from __future__ import annotations

import io
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.lowlevel import RunVar
from PIL import Image

from distrl.config import ScreenSettings
from distrl.device.protocol import Gate
from distrl.errors import BadScreenshot
from distrl.records import Observation

__all__ = [
    "IMAGE_FORMATS",
    "WHITE_FRAME_RETRIES",
    "Frame",
    "capture",
    "decode",
    "encode",
    "fit",
    "image_limiter",
    "is_blank",
    "screen_options",
]

WHITE_FRAME_RETRIES = 5
"""Captures retried after a white frame before giving up (DigiRL retries up to 5 times)."""

Frame = tuple[bytes, int, int]
"""A captured screenshot: the observation's bytes, its width and height in pixels."""

log = logging.getLogger(__name__)

IMAGE_FORMATS = ("png", "jpeg")
"""The encodings an ``Observation`` may carry."""


def screen_options(screen: ScreenSettings) -> dict[str, Any]:
    """The keywords of a device (``AdbDevice``, ``SimDevice``) that give its screens the ``screen``
    format: ``image_format``, ``jpeg_quality``, ``max_pixels``."""
    return {
        "image_format": screen.image_format,
        "jpeg_quality": screen.jpeg_quality,
        "max_pixels": screen.max_pixels,
    }


def encode(image: Image.Image, image_format: str, quality: int = 85) -> bytes:
    """``image`` as ``png`` (fast compression) or ``jpeg`` bytes; ValueError for another format."""
    out = io.BytesIO()
    if image_format == "png":
        image.save(out, "PNG", compress_level=1)
    elif image_format == "jpeg":
        image.save(out, "JPEG", quality=quality)
    else:
        raise ValueError(f"image format {image_format!r} is not one of {', '.join(IMAGE_FORMATS)}")
    return out.getvalue()


def fit(image: Image.Image, max_pixels: int) -> Image.Image:
    """``image`` scaled down, keeping its shape, to at most ``max_pixels`` pixels (as it is if it fits)."""
    width, height = image.size
    if width * height <= max_pixels:
        return image
    scale = (max_pixels / (width * height)) ** 0.5
    size = (max(1, int(width * scale)), max(1, int(height * scale)))
    return image.resize(size, Image.Resampling.LANCZOS)


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"
"""The IEND chunk every whole PNG ends with (Pillow decodes a PNG cut short of it without a word)."""
_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("distrl.device.image_limiter")


def image_limiter() -> anyio.CapacityLimiter:
    """This event loop's limiter for image threads (one token per CPU core)."""
    try:
        return _LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(max(1, os.cpu_count() or 1))
        _LIMITER.set(limiter)
        return limiter


def is_blank(image: Image.Image) -> bool:
    """True when every pixel of ``image`` is the same colour (a white frame, a blank screen)."""
    width, height = image.size
    first = image.getpixel((0, 0))
    for i in range(1, 64):  # a screen with content differs somewhere on this diagonal: no full scan
        if image.getpixel((i * (width - 1) // 63, i * (height - 1) // 63)) != first:
            return False
    extrema = image.getextrema()
    bands = extrema if isinstance(extrema[0], tuple) else (extrema,)
    return all(low == high for low, high in bands)


def decode(data: bytes) -> Image.Image:
    """A PNG screenshot as an RGB image. Raises ValueError, never returns a black image, on bad data."""
    if not data.startswith(_PNG_SIGNATURE):
        head = data[:40]
        raise ValueError(f"not a PNG ({len(data)} bytes starting {head!r})")
    if not data.endswith(_PNG_END):
        raise ValueError(f"corrupt PNG ({len(data)} bytes): cut short, no IEND chunk at the end")
    try:
        with Image.open(io.BytesIO(data), formats=["PNG"]) as image:
            image.load()
            return image.convert("RGB")
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise ValueError(f"corrupt PNG ({len(data)} bytes): {exc}") from exc


async def capture(
    grab: Callable[[int], Awaitable[Frame | None]],
    *,
    gate: Gate,
    operation: str,
    image_format: str,
    retries: int = WHITE_FRAME_RETRIES,
) -> Observation:
    """An observation of ``grab(attempt)``'s frame, grabbing again while it gives None (a white frame),
    ``1 + retries`` times in all; then ``BadScreenshot`` with ``reason="white"``."""
    attempts = 1 + retries
    for attempt in range(1, attempts + 1):
        frame = await grab(attempt)
        if frame is not None:
            data, width, height = frame
            return Observation(
                screenshot=data,
                width=width,
                height=height,
                image_format=image_format,
                timestamp_s=time.time(),
            )
        log.debug("%s: white frame (capture %d of %d)", gate.device, attempt, attempts)
    raise gate.error(
        BadScreenshot, operation, f"{attempts} white frames in a row", reason="white", attempts=attempts
    )
