"""Every exception distrl raises, and how errors cross the wire.

The tree::

    DistrlError                         base; carries structured ``fields``
    ├── ConfigError (ValueError)        bad inventory: ``path`` (TOML path), ``problem``, ``file``
    ├── TaskFileError (ValueError)      a bad task file: ``file``, ``line``, ``problem``
    ├── TransportError (ConnectionError)    host link: ``host``, ``phase``, ``exit_status``
    │   └── TransportTimeout (TimeoutError)     an operation on a host ran past ``timeout_s``
    ├── DeviceError                     one device: ``host``, ``device``, ``operation``
    │   ├── DeviceTimeout (TimeoutError)    ``timeout_s``
    │   ├── DeviceOffline (ConnectionError)
    │   │   └── DeviceCrashed               the device died; down until it is reset (rebooted)
    │   ├── BadScreenshot (ValueError)      unusable screen capture: ``reason``, ``attempts``
    │   └── EmulatorError                   emulators cannot be launched here (no SDK, AVD or KVM), or
    │                                       one did not boot
    ├── WireError (ValueError)          a frame that cannot be decoded: ``reason``
    │   ├── FrameTooLarge               ``size``, ``limit``
    │   ├── TruncatedFrame              ``expected``, ``received``
    │   └── ProtocolMismatch            ``ours``, ``theirs``: protocol versions, or distrl versions and builds
    ├── PolicyError                     model loading, generation: ``model``, ``phase``
    ├── WeightsError (ValueError)       an adapter blob that cannot be applied: ``reason``, ``version``,
    │                                   ``base_version``, ``expected``, ``tensor``
    ├── JudgeError                      the VLM judge gave no verdict: ``reason``, ``status``
    ├── CheckpointError                 a checkpoint that cannot be written or read back: ``path``, ``reason``
    ├── LearnerError (ArithmeticError)  an update refused whole: non-finite numbers, or an algorithm that
    │                                   raised or broke its contract: ``quantity``, ``update``
    ├── RankError (RuntimeError)        a learner rank that did not start, died or hung: ``rank``,
    │                                   ``reason``
    ├── DeployError (RuntimeError)      installing distrl on a host failed: ``host``, ``stage``,
    │                                   ``exit_status``, ``output`` (the last lines of its stderr)
    └── RemoteError                     from the other side, of a type unknown here: ``remote_type``

Each class also subclasses the builtin a caller already catches, so ``except TimeoutError`` sees a
``DeviceTimeout``. Errors travel between learner and workers by name: ``error_to_wire`` turns one into
a JSON-able dict and ``error_from_wire`` rebuilds the same class on the other side.
"""

from __future__ import annotations

from typing import Any, ClassVar

Scalar = str | int | float | bool | None


class DistrlError(Exception):
    """Base of every distrl error. ``fields`` names the structured attributes a subclass carries."""

    fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, message: str, **fields: Scalar) -> None:
        unknown = set(fields) - set(self.fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(unknown)}")
        super().__init__(message)
        self.message = message
        for name in self.fields:
            setattr(self, name, fields.get(name))

    def field_values(self) -> dict[str, Scalar]:
        """The structured fields, by name (unset ones are ``None``)."""
        return {name: getattr(self, name) for name in self.fields}

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only fields would otherwise be lost when copied.
        return (_rebuild, (type(self), self.message, self.field_values()))


def _rebuild(cls: type[DistrlError], message: str, fields: dict[str, Scalar]) -> DistrlError:
    return cls(message, **fields)


class ConfigError(DistrlError, ValueError):
    """The inventory is wrong. ``path`` is the TOML path (``hosts[1].devices``)."""

    fields: ClassVar[tuple[str, ...]] = ("path", "problem", "file")
    path: str | None
    problem: str | None
    file: str | None

    @classmethod
    def at(cls, path: str, problem: str, file: str | None = None) -> ConfigError:
        where = f"{file}: " if file else ""
        at = f"{path}: " if path else ""
        return cls(f"{where}{at}{problem}", path=path, problem=problem, file=file)


class TaskFileError(DistrlError, ValueError):
    """A task file that cannot be read; ``line`` is 1-based (0 for the file as a whole)."""

    fields: ClassVar[tuple[str, ...]] = ("file", "line", "problem")
    file: str | None
    line: int | None
    problem: str | None

    @classmethod
    def at(cls, file: str, line: int, problem: str) -> TaskFileError:
        where = f"{file}:{line}: " if line else f"{file}: "
        return cls(f"{where}{problem}", file=file, line=line, problem=problem)


class TransportError(DistrlError, ConnectionError):
    """The link to a host failed (connect, login, start of the worker, lost stream)."""

    fields: ClassVar[tuple[str, ...]] = ("host", "phase", "exit_status")
    host: str | None
    phase: str | None
    exit_status: int | None


class TransportTimeout(TransportError, TimeoutError):
    """An operation on a host link ran past its timeout."""

    fields: ClassVar[tuple[str, ...]] = ("host", "phase", "exit_status", "timeout_s")
    timeout_s: float | None


class DeviceError(DistrlError):
    """A device failed an operation."""

    fields: ClassVar[tuple[str, ...]] = ("host", "device", "operation")
    host: str | None
    device: str | None
    operation: str | None


class DeviceTimeout(DeviceError, TimeoutError):
    """A device operation ran past its timeout."""

    fields: ClassVar[tuple[str, ...]] = ("host", "device", "operation", "timeout_s")
    timeout_s: float | None


class DeviceOffline(DeviceError, ConnectionError):
    """The device is gone (adb lost it, the emulator died)."""


class DeviceCrashed(DeviceOffline):
    """The device crashed; it stays down until it is reset, which reboots it."""


class BadScreenshot(DeviceError, ValueError):
    """A screen capture is unusable: corrupt image data, or white frames past the retry budget."""

    fields: ClassVar[tuple[str, ...]] = ("host", "device", "operation", "reason", "attempts")
    reason: str | None
    """``corrupt`` (cannot be decoded) or ``white`` (every pixel the same)."""
    attempts: int | None
    """Captures taken before giving up."""


class EmulatorError(DeviceError):
    """Emulators cannot be launched on this host (no SDK, no such AVD, no acceleration), or one failed to
    start or boot."""


class WireError(DistrlError, ValueError):
    """A frame could not be decoded or may not be sent. Closes the link it came from, only that."""

    fields: ClassVar[tuple[str, ...]] = ("reason",)
    reason: str | None


class FrameTooLarge(WireError):
    """A frame announced or needed more bytes than the limit allows."""

    fields: ClassVar[tuple[str, ...]] = ("reason", "size", "limit")
    size: int | None
    limit: int | None


class TruncatedFrame(WireError):
    """The stream ended inside a frame."""

    fields: ClassVar[tuple[str, ...]] = ("reason", "expected", "received")
    expected: int | None
    received: int | None


class ProtocolMismatch(WireError):
    """The peer speaks another protocol version, or runs another distrl (version and build)."""

    fields: ClassVar[tuple[str, ...]] = ("reason", "ours", "theirs")
    ours: int | str | None
    theirs: int | str | None


class PolicyError(DistrlError):
    """The policy could not be loaded or run."""

    fields: ClassVar[tuple[str, ...]] = ("model", "phase")
    model: str | None
    phase: str | None


class RemoteError(DistrlError):
    """An error raised on the other side of the wire whose type is unknown here."""

    fields: ClassVar[tuple[str, ...]] = ("remote_type",)
    remote_type: str | None


class WeightsError(DistrlError, ValueError):
    """An adapter snapshot or diff that cannot be encoded or applied; the caller's weights are unchanged."""

    fields: ClassVar[tuple[str, ...]] = ("reason", "version", "base_version", "expected", "tensor")
    reason: str | None
    """``truncated``, ``corrupt``, ``metadata``, ``base``, ``mismatch``, ``checksum`` or ``dtype``."""
    version: int | None
    """The version the blob would produce."""
    base_version: int | None
    """The version a diff applies to."""
    expected: int | None
    """The version the caller holds (a diff's base must equal it)."""
    tensor: str | None
    """The tensor at fault, where one is."""


class JudgeError(DistrlError):
    """The judge gave no verdict: the episode stays unscored (never failed) and is asked again later."""

    fields: ClassVar[tuple[str, ...]] = ("reason", "status")
    reason: str | None
    """``unreachable`` (connection, timeout), ``busy`` (429 or 5xx after every retry), ``refused``
    (another HTTP error: a wrong key, model or URL), ``garbage`` (an answer with no verdict)."""
    status: int | None
    """The last HTTP status, where there was one."""


class CheckpointError(DistrlError):
    """A checkpoint that cannot be written or read back; a failed write leaves the last good one in place."""

    fields: ClassVar[tuple[str, ...]] = ("path", "reason")
    path: str | None
    """The checkpoint folder or file at fault."""
    reason: str | None
    """``missing``, ``corrupt``, ``mismatch`` (it does not fit this run's model or settings) or ``io``."""


class LearnerError(DistrlError, ArithmeticError):
    """An update refused before it changed the learner: it met non-finite numbers (NaN or infinity), or its
    algorithm raised or broke its contract (``distrl.learner.contract``)."""

    fields: ClassVar[tuple[str, ...]] = ("quantity", "update")
    quantity: str | None
    """What was not finite (``logprob``, ``entropy``, ``value``, ``advantage``, ``priority``, ``critic_loss``
    or ``actor_loss``), or what of the algorithm failed (``plan``, ``targets`` or ``loss``)."""
    update: int | None
    """The update that was refused (1 for the first)."""


class RankError(DistrlError, RuntimeError):
    """A learner rank that did not start, died or stopped answering (``[learner] ranks``): the run ends."""

    fields: ClassVar[tuple[str, ...]] = ("rank", "reason")
    rank: int | None
    """The rank at fault (1 for the first after the learner's own), where it is known."""
    reason: str | None
    """``start`` (it did not join), ``died`` (its process ended), ``timeout`` (it did not answer within
    ``collective_timeout_s``) or ``mismatch`` (it holds another model)."""


class DeployError(DistrlError, RuntimeError):
    """``python -m distrl deploy`` could not install distrl on a host; the others go on."""

    fields: ClassVar[tuple[str, ...]] = ("host", "stage", "exit_status", "output")
    host: str | None
    stage: str | None
    """``settings``, ``connect``, ``wheel``, ``venv``, ``install`` or ``done`` (the marker)."""
    exit_status: int | None
    """The remote command's exit status, where one ran."""
    output: str | None
    """The last lines of the remote command's stderr (empty when it printed none)."""


def error_class(name: str) -> type[DistrlError] | None:
    """The error class called ``name`` in this tree, or None."""
    todo: list[type[DistrlError]] = [DistrlError]
    while todo:
        cls = todo.pop()
        if cls.__name__ == name:
            return cls
        todo.extend(cls.__subclasses__())
    return None


def error_to_wire(error: DistrlError) -> dict[str, Any]:
    """The JSON-able form of ``error``: its class name, message and fields."""
    return {"type": type(error).__name__, "message": error.message, "fields": error.field_values()}


def error_from_wire(data: object) -> DistrlError:
    """Rebuild an error sent by ``error_to_wire``. Never raises: odd input gives a ``RemoteError``."""
    if not isinstance(data, dict):
        return RemoteError(f"malformed remote error: {data!r:.200}", remote_type=None)
    name = data.get("type")
    message = data.get("message")
    fields = data.get("fields")
    message = message if isinstance(message, str) else repr(message)
    cls = error_class(name) if isinstance(name, str) else None
    if cls is None or not isinstance(fields, dict):
        return RemoteError(message, remote_type=name if isinstance(name, str) else None)
    clean = {
        key: value
        for key, value in fields.items()
        if key in cls.fields and (value is None or isinstance(value, str | int | float | bool))
    }
    return cls(message, **clean)
