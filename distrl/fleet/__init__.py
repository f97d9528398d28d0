"""The learner side of distrl: a fleet of hosts driven from one event loop, one module per part.

- ``probe``: start every host's worker, shake hands, time heartbeats (``python -m distrl probe``);
- ``link``: one worker's link (requests, episodes streamed step by step, heartbeats, loss);
- ``host``: one supervised host (start, setup, catch-up push, restarts with backoff);
- ``session``: one coroutine per device, and sync mode's rounds;
- ``scoring``: the run's tasks with their evaluators, and the judge's queue before the ledger (the
  task sampler itself is ``distrl.tasks.sampler``);
- ``publisher``: weight versions to every worker, newest first, never holding up training;
- ``training``: arrivals into the learner, updates in a thread, publish and checkpoint cadence;
- ``ledger``: scoring and counting each arrival once, ``RunStats``;
- ``board``: the run's numbers read from the parts that own them (``Gauges``), progress lines and
  TensorBoard (``Curves``);
- ``recorder``: the run's episodes to disk, off the sessions' path;
- ``stop``: the run's stop, which remembers why it was set;
- ``wiring``: the chain of parts every run is made of, built once for ``train`` and ``collect``;
- ``run``: the composition root, ``train`` and ``collect``.
"""

from distrl.fleet.ledger import RunStats
from distrl.fleet.probe import HostReport, handshake, probe_fleet, probe_host
from distrl.fleet.run import CollectResult, collect, train

__all__ = [
    "CollectResult",
    "HostReport",
    "RunStats",
    "collect",
    "handshake",
    "probe_fleet",
    "probe_host",
    "train",
]
