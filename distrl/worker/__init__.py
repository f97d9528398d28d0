"""The worker agent: ``python -m distrl worker``, one per host, speaking frames on stdin/stdout.

The learner starts it (as a subprocess, or over SSH, ``distrl.transport``), and it lives exactly as long
as its stdin. Its parts:

- ``agent.py``: the worker protocol on one frame stream (``serve``): the handshake, then ``Setup``,
  ``Weights``, ``EpisodeRequest`` and heartbeats, each in its own task; its devices, and each episode
  played by the one episode loop (``distrl.device.episode``), every step reported as it is taken;
- ``inference.py``: the policy replica behind one batcher (inference in one thread for all devices),
  the weights it holds, and the expert that needs no model;
- ``streams.py``: the process (``main``): stdin and stdout as the frame stream, prints on stderr.
"""

from distrl.worker.agent import serve
from distrl.worker.streams import main

__all__ = ["main", "serve"]
