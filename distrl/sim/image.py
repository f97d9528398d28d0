"""Encoding screenshots: what a simulated phone sends, and what a device re-encodes for observations.

Here rather than in ``distrl.device.screen`` (which re-exports it) because the sim imports nothing of
the device layer.
"""

from __future__ import annotations

import io

from PIL import Image

__all__ = ["IMAGE_FORMATS", "encode"]

IMAGE_FORMATS = ("png", "jpeg")
"""The encodings an ``Observation`` may carry."""


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
