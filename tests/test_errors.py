"""The error tree: builtin bases, structured fields, and the round trip over the wire."""

from __future__ import annotations

import copy
import pickle

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from distrl import errors
from distrl.errors import (
    ConfigError,
    DeviceError,
    DeviceOffline,
    DeviceTimeout,
    DistrlError,
    FrameTooLarge,
    ProtocolMismatch,
    RankError,
    RemoteError,
    TransportError,
    TransportTimeout,
    WireError,
    error_from_wire,
    error_to_wire,
)

ALL = [cls for cls in vars(errors).values() if isinstance(cls, type) and issubclass(cls, DistrlError)]


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (ConfigError, ValueError),
        (TransportError, ConnectionError),
        (TransportTimeout, TimeoutError),
        (TransportTimeout, TransportError),
        (DeviceTimeout, TimeoutError),
        (DeviceTimeout, DeviceError),
        (DeviceOffline, ConnectionError),
        (WireError, ValueError),
        (FrameTooLarge, WireError),
        (ProtocolMismatch, WireError),
        (RankError, RuntimeError),
    ],
)
def test_errors_are_caught_by_the_builtin_a_caller_expects(cls: type[DistrlError], builtin: type) -> None:
    assert issubclass(cls, builtin)
    assert issubclass(cls, DistrlError)


def test_fields_are_attributes_and_unknown_fields_are_refused() -> None:
    error = DeviceTimeout(
        "screenshot hung", host="h1", device="emulator-5554", operation="observe", timeout_s=3.0
    )
    assert (error.host, error.device, error.operation, error.timeout_s) == (
        "h1",
        "emulator-5554",
        "observe",
        3.0,
    )
    assert str(error) == "screenshot hung"
    unset = DeviceError("x")
    assert unset.device is None
    with pytest.raises(TypeError, match="no field"):
        DeviceError("x", colour="red")


def test_config_error_message_names_file_and_path() -> None:
    error = ConfigError.at("hosts[1].port", "must be at most 65535, got 70000", "hosts.toml")
    assert str(error) == "hosts.toml: hosts[1].port: must be at most 65535, got 70000"
    assert (error.path, error.file) == ("hosts[1].port", "hosts.toml")


@pytest.mark.parametrize("cls", ALL, ids=[c.__name__ for c in ALL])
def test_every_error_round_trips_through_json(cls: type[DistrlError]) -> None:
    values: dict[str, str | int | float | bool | None] = {
        name: (7 if name in {"size", "limit", "ours", "theirs", "exit_status"} else name)
        for name in cls.fields
    }
    original = cls("it broke", **values)
    rebuilt = error_from_wire(orjson.loads(orjson.dumps(error_to_wire(original))))
    assert type(rebuilt) is cls
    assert rebuilt.message == "it broke"
    assert rebuilt.field_values() == original.field_values()
    # Copies and pickles (used by anyio's thread and process helpers) keep the fields too.
    assert copy.copy(original).field_values() == original.field_values()
    assert pickle.loads(pickle.dumps(original)).field_values() == original.field_values()


def test_unknown_or_malformed_remote_errors_become_remote_error() -> None:
    unknown = error_from_wire({"type": "KeyboardMeltdown", "message": "boom", "fields": {}})
    assert isinstance(unknown, RemoteError)
    assert unknown.remote_type == "KeyboardMeltdown"
    assert unknown.message == "boom"
    bad_fields = error_from_wire(
        {"type": "DeviceError", "message": "m", "fields": {"device": [1], "nope": 1}}
    )
    assert isinstance(bad_fields, DeviceError)
    assert bad_fields.device is None


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_error_from_wire_never_raises(data: object) -> None:
    assert isinstance(error_from_wire(data), DistrlError)
