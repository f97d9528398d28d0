"""The ``Device`` protocol every phone implements, and the ``Gate`` that holds each device to it.

A device is driven one operation at a time by one episode loop. Every operation runs under the
``config.Timeouts`` limit that names it and raises ``DeviceTimeout`` past it; a closed device raises
``DeviceOffline``; every other failure is a ``DeviceError`` carrying ``host``, ``device`` and
``operation``. ``Gate`` puts those rules in one place for the implementations.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import anyio

from distrl.errors import DeviceError, DeviceOffline, DeviceTimeout
from distrl.records import Action, Observation, Task

__all__ = ["CommandOutput", "Device", "ExpertDevice", "Gate"]


@dataclass(frozen=True, slots=True)
class CommandOutput:
    """What a shell command on a device gave."""

    status: int | None
    """Its exit status; None where the device cannot tell (``adb shell`` before Android 7)."""
    output: str
    """Its standard output, decoded as UTF-8 (bad bytes replaced)."""


class Device(Protocol):
    """One phone an agent drives: an Android emulator through adb, or a simulated phone."""

    @property
    def name(self) -> str:
        """The device's name on its host: an adb serial (``emulator-5554``) or ``sim-N``."""
        ...

    async def reset(self, task: Task) -> Observation:
        """Back to a clean phone, then ``task``'s start state, then the first observation."""
        ...

    async def observe(self) -> Observation:
        """A screenshot of what the phone shows now."""
        ...

    async def act(self, action: Action) -> None:
        """Perform ``action`` (a tap, swipe, text, key); the STATUS actions do nothing on the device."""
        ...

    async def state(self) -> dict[str, Any] | None:
        """The phone's state for programmatic success checks; None where the device cannot report it."""
        ...

    async def shell(self, command: str) -> CommandOutput:
        """Run ``command`` as ``adb shell`` would (the ``adb`` evaluator's checks), under
        ``timeouts.device_observe_s``. A failing command is an answer, not an error."""
        ...

    async def aclose(self) -> None:
        """Release the device; every later operation raises ``DeviceOffline``. Idempotent."""
        ...


@runtime_checkable
class ExpertDevice(Protocol):
    """A device whose kind knows how to solve its tasks: the simulated phone and its scripted expert,
    which plays ``policy.model = "expert"`` (demonstrations, and proof that every task is solvable)."""

    def expert_action(self, task: Task) -> Action:
        """The expert's next action for ``task`` on this device as it is now."""
        ...


class Gate:
    """One device's operations: one at a time, each under its timeout, none after ``close``."""

    def __init__(self, *, host: str, device: str) -> None:
        self.host = host
        """Inventory name of the host, for errors."""
        self.device = device
        """The device's name, for errors."""
        self.closed = False
        """True once ``close`` was called."""
        self._lock = anyio.Lock()

    def close(self) -> None:
        """Refuse every operation from now on."""
        self.closed = True

    def error(self, cls: type[DeviceError], operation: str, problem: str, **fields: Any) -> DeviceError:
        """A ``cls`` about this device, its message starting with the device's name."""
        return cls(
            f"{self.device}: {problem}", host=self.host, device=self.device, operation=operation, **fields
        )

    def offline(self, operation: str) -> DeviceError:
        """The error for an operation on a closed device."""
        return self.error(DeviceOffline, operation, f"{operation} on a closed device")

    @contextlib.asynccontextmanager
    async def operation(self, operation: str, timeout_s: float) -> AsyncIterator[None]:
        """Run the body alone on this device and within ``timeout_s`` (waiting for the device counts)."""
        if self.closed:
            raise self.offline(operation)
        async with self.deadline(operation, timeout_s), self._lock:
            if self.closed:
                raise self.offline(operation)
            yield

    @contextlib.asynccontextmanager
    async def deadline(self, operation: str, timeout_s: float) -> AsyncIterator[None]:
        """Run the body within ``timeout_s``, else raise ``DeviceTimeout`` naming ``operation``."""
        try:
            with anyio.fail_after(timeout_s):
                yield
        except DeviceError:
            raise
        except TimeoutError as exc:
            raise self.error(
                DeviceTimeout, operation, f"{operation} took longer than {timeout_s:g} s", timeout_s=timeout_s
            ) from exc
