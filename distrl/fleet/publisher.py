"""The weight publisher: each version the trainer makes reaches every worker, and no one waits for it.

``publish`` takes the new version and returns at once. Each link has its own pusher (``serve``): when the
link is free and behind, it sends the newest version, as a diff from the version that link acked (or in
full when it has none, or when the worker refused the diff), and the versions in between are skipped. A
slow link therefore falls behind in version (the learner refuses trajectories more than
``run.max_policy_lag`` versions old), but it never delays an update, nor another link.

Each blob is encoded once, whichever links it goes to; only the current version's are kept. Snapshots
are kept for the current version and for every version some link holds or is being sent, so that
diffs can be made.
"""

from __future__ import annotations

import collections
import logging
import time
from typing import TYPE_CHECKING, Literal

import anyio

from distrl.errors import DistrlError, WeightsError
from distrl.fleet.link import Link, LinkLost
from distrl.wire import ErrorReport, Weights

if TYPE_CHECKING:
    import torch

    from distrl.weights import Encoded

    Tensors = dict[str, torch.Tensor]

__all__ = ["Publisher", "snapshot"]

log = logging.getLogger(__name__)


def snapshot(adapter_state: Tensors, dtype: str) -> Tensors:
    """The adapter's weights as published: in ``run.publish_dtype``."""
    import torch

    target = torch.bfloat16 if dtype == "bfloat16" else torch.float32
    return {name: tensor.to(target) for name, tensor in adapter_state.items()}


class Publisher:
    """The published versions, the version each link acked, and the pushes that bring links up to date."""

    def __init__(self, version: int, tensors: Tensors, *, push_timeout_s: float) -> None:
        self.version = version
        self._snapshots: dict[int, Tensors] = {version: tensors}
        self._timeout_s = push_timeout_s
        self._acked: dict[Link, int | None] = {}
        """The version each link's worker holds (None: none yet, or unknown after a failed push)."""
        self._sending: dict[Link, int] = {}
        """The version on its way to each link: likely the base of that link's next diff."""
        self._blobs: dict[tuple[int, int | None], Encoded] = {}
        """Encoded weights by (version, base version or None for full)."""
        self._encoding = anyio.Lock()
        self._published = anyio.Event()
        """Set (and replaced) at each publication."""
        self._acks = anyio.Event()
        """Set (and replaced) at each ack, and when a link leaves."""
        self.bytes = 0
        self.pushes = 0
        self.push_s: collections.deque[float] = collections.deque(maxlen=100)
        """Seconds each recent push took, from sending to the worker's ack."""

    def publish(self, version: int, tensors: Tensors) -> None:
        """Make ``tensors`` the newest version; the links' pushers take it from here. Never waits."""
        self._snapshots[version] = tensors
        self.version = version
        self._prune()
        self._published.set()
        self._published = anyio.Event()

    async def catch_up(self, link: Link) -> None:
        """Bring a new link to the current version before its sessions start (waits for this link only)."""
        self._acked[link] = None
        try:
            while self._acked[link] != self.version:  # a publication may land while this push travels
                await self._push(link)
        except BaseException:
            self._acked.pop(link, None)
            raise

    async def serve(self, link: Link) -> None:
        """Keep ``link`` up to date until it is lost or cancelled; then forget it."""
        try:
            while not link.lost:
                if self._acked.get(link) == self.version:
                    await self._published.wait()
                    continue
                published = self._published
                try:
                    await self._push(link)
                except LinkLost:
                    return
                except (TimeoutError, DistrlError) as exc:
                    log.warning("host %s: weights v%d not delivered: %s", link.name, self.version, exc)
                    self._acked[link] = None  # unknown now: the next push is in full
                    await published.wait()  # try again with the next version
        finally:
            self._acked.pop(link, None)
            self._prune()
            self._ack_changed()

    async def delivered(self, version: int) -> None:
        """Wait until every link served holds ``version`` or later (sync mode's broadcast), at most the
        push timeout."""
        with anyio.move_on_after(self._timeout_s):
            while any(v is None or v < version for v in self._acked.values()):
                acks = self._acks
                await acks.wait()

    async def _push(self, link: Link) -> None:
        """Send the current version to ``link``: a diff from the version it acked where it can be."""
        # read together, before any wait: a publication may prune them while this push travels
        version, base = self.version, self._acked.get(link)
        new, old = self._snapshots[version], None if base is None else self._snapshots.get(base)
        if old is None:
            base = None
        kind: Literal["full", "diff"] = "full" if base is None else "diff"
        blob = await self._blob(version, new, base, old)
        message = Weights(
            id=link.next_id(),
            version=version,
            base_version=base,
            kind=kind,
            checksum=blob.checksum,
            blob=blob.blob,
        )
        started = time.monotonic()
        self._sending[link] = version
        try:
            reply = await link.request(message, self._timeout_s)
        finally:
            del self._sending[link]
        self.push_s.append(time.monotonic() - started)
        self.bytes += len(blob.blob)
        self.pushes += 1
        if isinstance(reply, ErrorReport):
            if kind == "diff" and isinstance(reply.error, WeightsError):
                self._acked[link] = None  # the worker holds something else: in full, next time round
                return
            raise reply.error
        self._acked[link] = version
        self._prune()
        self._ack_changed()

    def _ack_changed(self) -> None:
        self._acks.set()
        self._acks = anyio.Event()

    async def _blob(self, version: int, new: Tensors, base: int | None, old: Tensors | None) -> Encoded:
        """``version`` in full (``base`` None) or as a diff from ``base``, encoded once for every link."""
        from distrl import weights

        async with self._encoding:
            blob = self._blobs.get((version, base))
            if blob is None:
                diff_from = None if old is None else base
                blob = await anyio.to_thread.run_sync(
                    lambda: weights.encode(new, version, old=old, base_version=diff_from)
                )
                self._blobs = {key: b for key, b in self._blobs.items() if key[0] == self.version}
                if version == self.version:
                    self._blobs[version, base] = blob
        return blob

    def _prune(self) -> None:
        """Keep the snapshots of the current version and of the versions links hold or are being sent;
        nothing else."""
        keep = {self.version, *self._sending.values(), *(v for v in self._acked.values() if v is not None)}
        self._snapshots = {v: t for v, t in self._snapshots.items() if v in keep}
