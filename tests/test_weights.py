"""Adapter snapshots and diffs: exact after any number of updates, and a bad blob changes nothing."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest
import safetensors.torch
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from distrl import weights
from distrl.errors import WeightsError
from distrl.weights import apply, blobs, checksum, describe, encode_diff, encode_full, planes
from distrl.wire import Weights, decode, encode

Tensors = dict[str, torch.Tensor]
RANK = 4
MODULES = {"q_proj": (32, 32), "v_proj": (32, 16), "up_proj": (32, 64), "down_proj": (64, 32)}


def lora(seed: int = 0) -> Tensors:
    """A small adapter as peft initialises it: A kaiming-uniform, B zeros, and a tensor that never trains."""
    generator = torch.Generator().manual_seed(seed)
    found: Tensors = {}
    for layer in range(2):
        for module, (fan_in, fan_out) in MODULES.items():
            prefix = f"base_model.model.layers.{layer}.{module}"
            a = torch.empty(RANK, fan_in)
            torch.nn.init.kaiming_uniform_(a, a=math.sqrt(5), generator=generator)
            found[f"{prefix}.lora_A.default.weight"] = a
            found[f"{prefix}.lora_B.default.weight"] = torch.zeros(fan_out, RANK)
    found["base_model.model.frozen_scale"] = torch.ones(8)
    return found


def adam_steps(master: Tensors, steps: int, lr: float = 1e-4, seed: int = 1) -> list[Tensors]:
    """Snapshots (float32) after each of ``steps`` Adam updates on random gradients; the first is step 0."""
    generator = torch.Generator().manual_seed(seed)
    trained = [t for name, t in master.items() if "lora" in name]
    optimizer = torch.optim.Adam(trained, lr=lr)
    history = [{name: t.clone() for name, t in master.items()}]
    for _ in range(steps):
        for t in trained:
            t.grad = torch.randn(t.shape, generator=generator)
        optimizer.step()
        history.append({name: t.clone() for name, t in master.items()})
    return history


def same_bits(a: Tensors, b: Tensors) -> bool:
    def raw(t: torch.Tensor) -> torch.Tensor:
        return t.detach().contiguous().reshape(-1).view(torch.uint8)

    return a.keys() == b.keys() and all(
        a[n].dtype == b[n].dtype and a[n].shape == b[n].shape and torch.equal(raw(a[n]), raw(b[n])) for n in a
    )


def copy(tensors: Tensors) -> Tensors:
    return {name: t.clone() for name, t in tensors.items()}


def metadata(blob: bytes) -> dict[str, str]:
    (length,) = struct.unpack_from("<Q", blob)
    found: dict[str, str] = json.loads(blob[8 : 8 + length])["__metadata__"]
    return found


# --- exactness -------------------------------------------------------------------------------------------


def test_full_snapshot_round_trips_every_dtype_and_any_safetensors_reader_can_load_it() -> None:
    tensors = {
        "f32": torch.randn(3, 5),
        "bf16": torch.randn(7).to(torch.bfloat16),
        "f16": torch.randn(2, 2, 2).to(torch.float16),
        "f64": torch.randn(4, dtype=torch.float64),
        "f8": torch.randn(6).to(torch.float8_e4m3fn),
        "scalar": torch.tensor(-0.0),
        "empty": torch.empty(0, 3),
    }
    blob = encode_full(tensors, 7)
    restored, version = apply({}, blob, expected_base=None)
    assert version == 7
    assert same_bits(restored, tensors)
    assert same_bits(safetensors.torch.load(blob), tensors)
    info = describe(blob)
    assert (info.kind, info.version, info.base_version) == ("full", 7, None)
    assert info.checksum == checksum(tensors)


@pytest.mark.parametrize("published", [torch.float32, torch.bfloat16])
def test_diffs_are_bitwise_exact_across_20_adam_updates(published: torch.dtype) -> None:
    history = [
        {name: t.to(published) for name, t in snapshot.items()}
        for snapshot in adam_steps(lora(), 20, lr=3e-5)
    ]
    worker, version = apply({}, encode_full(history[0], 0), expected_base=None)
    for step in range(1, len(history)):
        blob = encode_diff(history[step - 1], history[step], step - 1, step)
        worker, version = apply(worker, blob, expected_base=version)
        assert version == step
        assert same_bits(worker, history[step])
        assert checksum(worker) == describe(blob).checksum == checksum(history[step])
    assert not same_bits(worker, history[0])


def test_a_diff_may_span_several_versions() -> None:
    history = adam_steps(lora(), 5)
    tensors, version = apply(history[1], encode_diff(history[1], history[5], 1, 5), expected_base=1)
    assert version == 5
    assert same_bits(tensors, history[5])


def test_values_a_float_delta_would_lose_come_back_exactly() -> None:
    # old + (new - old) gives 0.0 back for 1.0 -> 1e-30; NaN payloads, infinities and -0.0 are just bits.
    nan_payload = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)
    old = {"w": torch.tensor([1.0, 0.0, float("inf"), 3.0, float("nan"), 1e-45])}
    new = {
        "w": torch.cat(
            [torch.tensor([1e-30, -0.0, -float("inf"), float("nan")]), nan_payload, torch.tensor([0.0])]
        )
    }
    assert (old["w"][0] + (new["w"][0] - old["w"][0])).item() == 0.0
    tensors, _ = apply(old, encode_diff(old, new, 0, 1), expected_base=0)
    assert same_bits(tensors, new)


dtypes = st.sampled_from([torch.float32, torch.bfloat16, torch.float16, torch.float64])


@st.composite
def tensor_pairs(draw: st.DrawFn) -> tuple[Tensors, Tensors]:
    old: Tensors = {}
    new: Tensors = {}
    for i in range(draw(st.integers(1, 4))):
        dtype = draw(dtypes)
        shape = tuple(draw(st.lists(st.integers(0, 5), max_size=3)))
        size = math.prod(shape) * dtype.itemsize
        before = draw(st.binary(min_size=size, max_size=size))
        after = draw(st.one_of(st.just(before), st.binary(min_size=size, max_size=size)))
        old[f"t{i}"] = torch.frombuffer(bytearray(before) or bytearray(1), dtype=torch.uint8)[:size]
        new[f"t{i}"] = torch.frombuffer(bytearray(after) or bytearray(1), dtype=torch.uint8)[:size]
        old[f"t{i}"] = old[f"t{i}"].view(dtype).reshape(shape)
        new[f"t{i}"] = new[f"t{i}"].view(dtype).reshape(shape)
    return old, new


@settings(max_examples=60, deadline=None)
@given(tensor_pairs())
def test_any_bits_come_back_exactly(pair: tuple[Tensors, Tensors]) -> None:
    old, new = pair
    tensors, version = apply(old, encode_diff(old, new, 3, 4), expected_base=3)
    assert version == 4
    assert same_bits(tensors, new)


def test_many_chunks_both_stored_and_compressed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planes, "CHUNK_BYTES", 1000)
    old = {"a": torch.randn(64, 100), "b": torch.randn(3000).to(torch.bfloat16)}
    new = {"a": old["a"] + 1e-4 * torch.randn(64, 100), "b": (old["b"].float() * 1.01).to(torch.bfloat16)}
    blob = encode_diff(old, new, 0, 1)
    codecs = [c[1] for chunks in json.loads(metadata(blob)["manifest"])["chunks"].values() for c in chunks]
    assert len(codecs) > 10
    assert {"raw", "zlib"} <= set(codecs)
    tensors, _ = apply(old, blob, expected_base=0)
    assert same_bits(tensors, new)


def test_unchanged_tensors_cost_only_their_manifest_line() -> None:
    tensors = {f"layer{i}": torch.randn(256, 256) for i in range(10)}
    nothing = encode_diff(tensors, copy(tensors), 0, 1)
    assert safetensors.torch.load(nothing) == {}
    assert len(nothing) < 2000 < 256 * 256 * 4
    one = {**tensors, "layer3": tensors["layer3"] + 1e-3 * torch.randn(256, 256)}
    blob = encode_diff(tensors, one, 0, 1)
    assert len(blob) < 256 * 256 * 4  # one changed tensor, compressed: less than its raw bytes
    assert list(safetensors.torch.load(blob)) == ["delta.float32"]
    assert same_bits(apply(tensors, nothing, expected_base=0).tensors, tensors)
    assert same_bits(apply(tensors, blob, expected_base=0).tensors, one)


def test_inputs_may_be_parameters_or_views_and_results_share_nothing() -> None:
    base = torch.nn.Parameter(torch.randn(8, 4))
    old = {"w": base, "t": base.detach().t()}
    new = {"w": base.detach() + 1, "t": base.detach().t() * 2}
    tensors, _ = apply(old, encode_diff(old, new, 0, 1), expected_base=0)
    assert same_bits(tensors, new)
    unchanged, _ = apply(
        old, encode_diff(old, {k: v.detach() for k, v in old.items()}, 0, 1), expected_base=0
    )
    with torch.no_grad():
        base.add_(1)
    assert not torch.equal(unchanged["w"], base)
    assert not unchanged["w"].requires_grad


def test_blobs_travel_in_the_weights_message() -> None:
    history = adam_steps(lora(), 2)
    blob = encode_diff(history[1], history[2], 1, 2)
    info = describe(blob)
    message = Weights(
        version=info.version,
        base_version=info.base_version,
        kind=info.kind,
        checksum=info.checksum,
        blob=blob,
    )
    received = decode(encode(message))
    assert isinstance(received, Weights)
    tensors, version = apply(history[1], received.blob, expected_base=received.base_version)
    assert version == received.version
    assert checksum(tensors) == received.checksum


# --- atomicity -------------------------------------------------------------------------------------------


@pytest.fixture
def update() -> tuple[Tensors, Tensors, bytes]:
    """Weights at version 4, the learner's version 5, and the diff from 4 to 5."""
    history = adam_steps(lora(), 5)
    return history[4], history[5], encode_diff(history[4], history[5], 4, 5)


def test_encode_says_the_checksum_it_wrote(update: tuple[Tensors, Tensors, bytes]) -> None:
    old, new, blob = update
    full = weights.encode(new, 5)
    diff = weights.encode(new, 5, old=old, base_version=4)
    assert describe(full.blob).kind == "full"
    assert describe(diff.blob).kind == "diff"
    assert full.checksum == describe(full.blob).checksum == checksum(new)
    assert diff.checksum == describe(diff.blob).checksum == describe(blob).checksum


def rejected(tensors: Tensors, blob: bytes, expected_base: int | None = 4) -> WeightsError:
    before = copy(tensors)
    with pytest.raises(WeightsError) as caught:
        apply(tensors, blob, expected_base=expected_base)
    assert same_bits(tensors, before), "a rejected blob changed the weights"
    return caught.value


@pytest.mark.parametrize("flip", [0x01, 0x80])
def test_a_flipped_bit_anywhere_is_rejected(update: tuple[Tensors, Tensors, bytes], flip: int) -> None:
    old, _, blob = update
    reasons = set()
    (header,) = struct.unpack_from("<Q", blob)
    # every byte of the length and the header, and every 7th of the data (8 KB in all): all the parsing
    # sees, and the data's checks in a tenth of the time (each byte of data is guarded alike)
    positions = [*range(8 + header), *range(8 + header, len(blob), 7), len(blob) - 1]
    for position in positions:
        corrupt = bytearray(blob)
        corrupt[position] ^= flip
        reasons.add(rejected(old, bytes(corrupt)).reason)
    assert reasons <= {"corrupt", "truncated", "metadata", "checksum", "mismatch", "base"}
    assert {"corrupt", "checksum"} <= reasons


def test_several_flipped_bytes_in_the_compressed_data_are_rejected(
    update: tuple[Tensors, Tensors, bytes],
) -> None:
    old, _, blob = update
    corrupt = bytearray(blob)
    for position in (len(blob) - 1, len(blob) - 500, len(blob) - 2000):
        corrupt[position] ^= 0xFF
    assert rejected(old, bytes(corrupt)).reason == "checksum"


def test_a_truncated_blob_is_rejected(update: tuple[Tensors, Tensors, bytes]) -> None:
    old, _, blob = update
    (header,) = struct.unpack_from("<Q", blob)
    for length in (0, 1, 7, 8, 9, 8 + header - 1, 8 + header, len(blob) // 2, len(blob) - 1):
        assert rejected(old, blob[:length]).reason == "truncated", length
    assert rejected(old, blob + b"\0").reason == "corrupt"


def test_a_diff_for_another_base_is_rejected(update: tuple[Tensors, Tensors, bytes]) -> None:
    old, _, blob = update
    error = rejected(old, blob, expected_base=3)
    assert (error.reason, error.base_version, error.expected, error.version) == ("base", 4, 3, 5)
    assert isinstance(error, ValueError)
    assert rejected(old, blob, expected_base=None).reason == "base"


def test_a_diff_on_weights_that_drifted_fails_the_checksum(update: tuple[Tensors, Tensors, bytes]) -> None:
    old, _, blob = update
    drifted = copy(old)
    name = next(iter(drifted))
    drifted[name][0, 0] = torch.nextafter(drifted[name][0, 0], torch.tensor(1.0))
    assert rejected(drifted, blob).reason == "checksum"


def test_a_diff_for_other_tensors_is_rejected(update: tuple[Tensors, Tensors, bytes]) -> None:
    old, _, blob = update
    name = sorted(old)[1]
    missing = {k: v for k, v in old.items() if k != name}
    extra = {**copy(old), "base_model.model.extra": torch.zeros(2)}
    reshaped = {**copy(old), name: old[name].reshape(-1)}
    retyped = {**copy(old), name: old[name].to(torch.float16)}
    for tensors, tensor in (
        (missing, name),
        (extra, "base_model.model.extra"),
        (reshaped, name),
        (retyped, name),
    ):
        error = rejected(tensors, blob)
        assert (error.reason, error.tensor) == ("mismatch", tensor)


def test_a_full_snapshot_of_another_adapter_is_rejected_unless_starting_fresh() -> None:
    old = lora()
    other = {"w": torch.zeros(3)}
    blob = encode_full(other, 9)
    error = rejected(old, blob, expected_base=None)
    assert error.reason == "mismatch"
    assert same_bits(apply({}, blob, expected_base=None).tensors, other)
    assert apply(old, encode_full(lora(seed=5), 9), expected_base=None).version == 9  # a resync: any base


def forged(blob: bytes, **changes: str | None) -> bytes:
    """The blob with its metadata changed, re-saved as a consistent safetensors file."""
    tensors = safetensors.torch.load(blob)
    meta = {**metadata(blob), **changes}
    return safetensors.torch.save(tensors, metadata={k: v for k, v in meta.items() if v is not None})


@pytest.mark.parametrize(
    "changes",
    [
        {"format": "other"},
        {"format_version": "2"},
        {"kind": "partial"},
        {"kind": "full"},
        {"encoding": "xor/zlib"},
        {"version": "five"},
        {"version": "4"},
        {"version": "-5"},
        {"base_version": None},
        {"checksum": None},
        {"checksum": "not hex"},
        {"manifest": None},
        {"payload_checksum": "0" * 63},
        {"extra": "key"},
    ],
)
def test_bad_metadata_is_rejected(
    update: tuple[Tensors, Tensors, bytes], changes: dict[str, str | None]
) -> None:
    old, _, blob = update
    assert rejected(old, forged(blob, **changes)).reason == "metadata"


def test_metadata_changed_without_the_key_is_caught_by_the_payload_checksum(
    update: tuple[Tensors, Tensors, bytes],
) -> None:
    old, _, blob = update
    assert rejected(old, forged(blob, version="6")).reason == "checksum"
    assert rejected(old, forged(blob, checksum="0" * 64)).reason == "checksum"


def test_a_bad_manifest_is_rejected_even_with_a_valid_payload_checksum(
    update: tuple[Tensors, Tensors, bytes],
) -> None:
    old, _, blob = update
    manifest = json.loads(metadata(blob)["manifest"])
    broken = [
        "not json",
        json.dumps({"tensors": manifest["tensors"]}),
        json.dumps({**manifest, "chunks": {}}),
        json.dumps({**manifest, "chunks": {"float32": [[9, "zlib", 1, 1]]}}),
        json.dumps({**manifest, "chunks": {"float32": [[0, "lzma", 1, 1]]}}),
    ]
    for text in broken:
        meta = {**metadata(blob), "manifest": text}
        meta.pop("payload_checksum")
        resealed = blobs._save(safetensors.torch.load(blob), meta)
        assert rejected(old, resealed).reason == "metadata", text


def test_something_else_entirely_is_rejected(update: tuple[Tensors, Tensors, bytes]) -> None:
    old, _, _ = update
    assert rejected(old, b"\xff" * 64).reason in {"corrupt", "truncated"}
    assert rejected(old, struct.pack("<Q", 2) + b"[]").reason == "corrupt"
    assert rejected(old, safetensors.torch.save({"w": torch.zeros(2)})).reason == "metadata"
    assert rejected(old, np.arange(100, dtype=np.uint8).tobytes()).reason in {"corrupt", "truncated"}


def test_encoding_refuses_what_it_cannot_encode() -> None:
    old = {"w": torch.zeros(3)}
    with pytest.raises(WeightsError) as caught:
        encode_diff(old, {"w": torch.zeros(4)}, 0, 1)
    assert (caught.value.reason, caught.value.tensor) == ("mismatch", "w")
    with pytest.raises(WeightsError) as caught:
        encode_diff(old, {"v": torch.zeros(3)}, 0, 1)
    assert caught.value.reason == "mismatch"
    with pytest.raises(WeightsError) as caught:
        encode_full({"steps": torch.zeros(3, dtype=torch.int64)}, 0)
    assert (caught.value.reason, caught.value.tensor) == ("dtype", "steps")
    for base, version in ((1, 1), (2, 1), (-1, 0), (True, 2)):
        with pytest.raises(WeightsError) as caught:
            encode_diff(old, old, base, version)
        assert caught.value.reason == "metadata"
    with pytest.raises(WeightsError):
        encode_full({"__metadata__": torch.zeros(1)}, 0)


def test_a_full_snapshot_refuses_a_bad_version_or_a_tensor_with_no_name() -> None:
    tensors = {"a": torch.ones(2)}
    with pytest.raises(WeightsError, match=r"^version must be an integer >= 0, not -1$"):
        encode_full(tensors, -1)
    with pytest.raises(WeightsError, match="'' cannot name a tensor"):
        encode_full({"": torch.ones(2)}, 1)
    with pytest.raises(WeightsError, match="'__metadata__' cannot name a tensor"):
        encode_full({"__metadata__": torch.ones(2)}, 1)
