"""``python -m distrl``."""

import os

# OpenMP threads that spin while waiting take whole cores from the emulators, the other workers and the
# learner on a shared machine (inference measured 100 times slower here): let them sleep. Set before
# torch is imported, which reads it once; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from distrl.cli import main

raise SystemExit(main())
