"""``python -m distrl``."""

# (``distrl/__init__.py``, imported first, has let torch's OpenMP threads sleep while they wait)
from distrl.cli import main

raise SystemExit(main())
