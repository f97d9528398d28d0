"""Serving with the adapter folded into the base weights (``Adapter.serve_merged``, what workers do): the
same answers and log-probs as the adapter applied unmerged, every version folded into a pristine base."""

from __future__ import annotations

import io

import pytest
import torch
from PIL import Image, ImageDraw

from distrl.config import PolicySettings
from distrl.errors import PolicyError
from distrl.policy import Policy, PolicyInput
from distrl.records import Observation


def _screen(color: tuple[int, int, int]) -> Observation:
    image = Image.new("RGB", (108, 240), color)
    ImageDraw.Draw(image).rectangle((10, 30, 60, 50), fill=(0, 0, 0))
    data = io.BytesIO()
    image.save(data, "PNG")
    return Observation(screenshot=data.getvalue(), width=108, height=240, image_format="png")


BATCH = [
    PolicyInput(goal="Open the settings app", observation=_screen((200, 30, 30))),
    PolicyInput(goal="Search for headphones", observation=_screen((20, 30, 200))),
]


def _policy() -> Policy:
    return Policy.load(
        PolicySettings(model="tiny-bc", max_new_tokens=48, temperature=0.0), device="cpu", seed=0
    )


def _adapter(policy: Policy, seed: int, scale: float = 0.05) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {
        name: torch.randn(t.shape, generator=generator, dtype=t.dtype) * scale
        for name, t in policy.adapter.state().items()
    }


def _base(policy: Policy) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in policy.model.named_parameters() if "lora_" not in name}


def test_merged_answers_and_log_probs_are_the_unmerged_ones() -> None:
    unmerged, merged = _policy(), _policy()
    merged.adapter.serve_merged()
    for seed in (1, 2):  # the start, then a new version folded in over it
        state = _adapter(unmerged, seed)
        unmerged.adapter.load_state(state)
        merged.adapter.load_state(state)
        assert merged.adapter.state().keys() == state.keys()
        assert all(torch.equal(merged.adapter.state()[name], state[name]) for name in state)
        plain, folded = unmerged.sample(BATCH), merged.sample(BATCH)
        assert [s.text for s in folded] == [s.text for s in plain]
        ours, _ = merged.logprobs(BATCH, [s.text for s in plain])
        theirs, _ = unmerged.logprobs(BATCH, [s.text for s in plain])
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-4)  # float32: the same up to rounding


def test_the_adapter_is_folded_in_not_applied_beside() -> None:
    policy = _policy()
    base = _base(policy)
    policy.adapter.serve_merged()
    policy.adapter.load_state(_adapter(policy, 1))
    changed = [
        name for name, p in policy.model.named_parameters() if name in base and not torch.equal(p, base[name])
    ]
    assert changed  # the base weights of adapted layers now hold W + s·B·A
    assert policy.adapter.merged
    with pytest.raises(PolicyError, match="cannot train"):
        policy.train(True)


def test_many_versions_leave_no_rounding_behind() -> None:
    """Each version is folded into the pristine base, not into the last fold: the zero adapter after many
    versions gives back the base weights bit for bit."""
    policy = _policy()
    zero = {name: torch.zeros_like(t) for name, t in policy.adapter.state().items()}
    policy.adapter.load_state(zero)
    base = _base(policy)
    policy.adapter.serve_merged()
    for seed in range(40):
        policy.adapter.load_state(_adapter(policy, seed, scale=0.5))
    policy.adapter.load_state(zero)
    after = _base(policy)
    assert all(torch.equal(after[name], base[name]) for name in base)
