"""The benchmarks' figures: matplotlib without a display, one row of panels, saved where asked."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def saved_figure(path: Path, columns: int = 1, *, size: tuple[float, float], **options: Any) -> Iterator[Any]:
    """A figure of ``columns`` panels (the axes: one, or an array of them) of ``size`` inches, laid out and
    written to ``path`` (PNG, 110 dpi) when the block ends without an error; closed either way."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, columns, figsize=size, **options)
    try:
        yield axes
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=110)
    finally:
        plt.close(figure)
