"""Retrace targets, advantages and DigiRL's step advantage against values worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from distrl.learner.retrace import (
    actor_advantages,
    digirl_step_advantages,
    importance_ratios,
    normalise,
    priority,
    retrace,
    td_errors,
    traces,
)

REWARDS = torch.tensor([0.0, 0.0, 1.0])
VALUES = torch.tensor([0.2, 0.5, 0.7])
GAMMA = 0.9


def _close(actual: torch.Tensor, expected: list[float]) -> None:
    torch.testing.assert_close(actual, torch.tensor(expected), rtol=0, atol=1e-6)


def test_on_policy_with_lambda_one_is_the_monte_carlo_return() -> None:
    targets, advantages = retrace(REWARDS, VALUES, traces(torch.ones(3), 1.0), GAMMA)
    _close(targets, [0.81, 0.9, 1.0])  # γ², γ, 1
    _close(advantages, [0.9 * 0.9 - 0.2, 0.9 * 1.0 - 0.5, 1.0 - 0.7])


def test_on_policy_with_lambda_below_one_is_the_lambda_return() -> None:
    lam = 0.5
    targets, _ = retrace(REWARDS, VALUES, traces(torch.ones(3), lam), GAMMA)
    # G_t^λ = r_t + γ·((1 − λ)·V(s_{t+1}) + λ·G_{t+1}^λ), G_2 = 1
    g1 = 0.9 * (0.5 * 0.7 + 0.5 * 1.0)
    g0 = 0.9 * (0.5 * 0.5 + 0.5 * g1)
    _close(targets, [g0, g1, 1.0])
    assert g0 == pytest.approx(0.56925)


def test_off_policy_traces_cut_the_correction_where_rho_is_small() -> None:
    rho = torch.tensor([1.0, 0.2, 1.0])
    targets, advantages = retrace(REWARDS, VALUES, traces(rho, 1.0), GAMMA)
    # δ = [0.25, 0.13, 0.3]; v_1 − V_1 = 0.13 + 0.9·1·0.3 = 0.4; v_0 − V_0 = 0.25 + 0.9·0.2·0.4
    _close(targets, [0.2 + 0.25 + 0.9 * 0.2 * 0.4, 0.9, 1.0])
    _close(advantages, [0.9 * 0.9 - 0.2, 0.9 - 0.5, 0.3])
    # a trace of 0 leaves only the one-step TD target
    cut, _ = retrace(REWARDS, VALUES, torch.zeros(3), GAMMA)
    _close(cut, [0.9 * 0.5, 0.9 * 0.7, 1.0])


def test_ratios_above_one_are_truncated_in_the_traces() -> None:
    rho = torch.tensor([0.5, 3.0, 5.0])
    _close(traces(rho, 0.8), [0.4, 0.8, 0.8])
    high, _ = retrace(REWARDS, VALUES, traces(rho, 1.0), GAMMA)
    on, _ = retrace(REWARDS, VALUES, traces(torch.tensor([0.5, 1.0, 1.0]), 1.0), GAMMA)
    torch.testing.assert_close(high, on)


def test_importance_ratios_and_td_errors() -> None:
    logp = torch.tensor([-1.0, -2.0], requires_grad=True)
    rho = importance_ratios(logp, torch.tensor([-1.5, -1.0]))
    assert not rho.requires_grad
    _close(rho, [float(torch.exp(torch.tensor(0.5))), float(torch.exp(torch.tensor(-1.0)))])
    _close(td_errors(REWARDS, VALUES, GAMMA), [0.25, 0.13, 0.3])
    _close(td_errors(REWARDS, VALUES, GAMMA, bootstrap=0.5), [0.25, 0.13, 0.75])


def test_bootstrap_value_continues_a_cut_episode() -> None:
    targets, _ = retrace(torch.zeros(2), torch.tensor([0.1, 0.2]), torch.ones(2), 0.5, bootstrap=0.8)
    _close(targets, [0.5 * 0.5 * 0.8, 0.5 * 0.8])


def test_shapes_must_agree() -> None:
    with pytest.raises(ValueError, match="alike"):
        retrace(REWARDS, VALUES[:2], torch.ones(3), GAMMA)


def test_digirl_step_advantage_mixes_outcome_and_td_by_distance_to_the_end() -> None:
    adv = digirl_step_advantages(REWARDS, VALUES, final_reward=1.0, lam=0.5)
    # weights λ^(H−h) = [0.25, 0.5, 1]; TD parts V(s_{h+1}) + r_h − V(s_h) = [0.3, 0.2, 0.3]
    _close(adv, [0.25 + 0.75 * 0.3, 0.5 + 0.5 * 0.2, 1.0])
    failed = digirl_step_advantages(torch.zeros(3), VALUES, final_reward=0.0, lam=0.5)
    _close(failed, [0.3, 0.2, -0.7])
    # a reward on every step (a cost of 0.05) enters each TD part: V(s_{h+1}) + r_h − V(s_h)
    costly = digirl_step_advantages(torch.full((3,), -0.05), VALUES, final_reward=0.0, lam=0.5)
    _close(costly, [0.25, 0.15, -0.75])


def test_priority_weighs_td_error_ratio_and_surprise() -> None:
    deltas = torch.tensor([0.25, -0.13, 0.3])
    rho = torch.tensor([1.0, 0.5, 40.0])  # the last ratio is capped at 10
    logp = torch.tensor([-2.0, -4.0, -6.0])
    # 50·mean|δ| + 1·mean ρ + 0.01·mean(−log π) = 50·0.68/3 + 11.5/3 + 0.01·4
    assert priority(deltas, rho, logp, (50.0, 1.0, 0.01)) == pytest.approx(50 * 0.68 / 3 + 11.5 / 3 + 0.04)
    assert priority(deltas, rho, logp, (0.0, 0.0, 1.0)) == pytest.approx(4.0)
    assert priority(deltas, rho, logp, (0.0, 1.0, 0.0), rho_cap=100.0) == pytest.approx(41.5 / 3)


def test_normalise_centres_and_scales_with_the_weights() -> None:
    advantages = torch.tensor([-0.5, -0.5, -0.4, 0.7])
    weights = torch.tensor([1.0, 1.0, 0.5, 0.5])
    out = normalise(advantages, weights)
    # weighted mean (-0.5 - 0.5 - 0.2 + 0.35) / 3 = -0.85 / 3; by hand:
    mean = -0.85 / 3
    var = (2 * (-0.5 - mean) ** 2 + 0.5 * (-0.4 - mean) ** 2 + 0.5 * (0.7 - mean) ** 2) / 3
    expected = (advantages - mean) / math.sqrt(var)
    assert torch.allclose(out, expected, atol=1e-5)
    assert float((weights * out).sum()) == pytest.approx(0.0, abs=1e-5)
    # all-negative advantages (every episode failed) no longer push every answer down
    assert (out > 0).any()
    assert torch.equal(normalise(torch.full((3,), -0.3), torch.ones(3)), torch.zeros(3))


def test_actor_advantages_keep_the_positive_part_scaled_to_mean_one() -> None:
    advantages = torch.tensor([-0.5, 0.2, 0.6, 0.0])
    weights = torch.tensor([1.0, 1.0, 0.5, 1.0])
    # kept: 0.2 (weight 1) and 0.6 (weight 0.5); weighted mean (0.2 + 0.3) / 1.5 = 1/3
    _close(actor_advantages(advantages, weights, "positive"), [0.0, 0.6, 1.8, 0.0])
    # every episode failed and the critic saw it coming: nothing is raised
    assert torch.equal(actor_advantages(torch.full((3,), -0.3), torch.ones(3), "positive"), torch.zeros(3))
    assert torch.equal(actor_advantages(advantages, weights, "signed"), advantages)
    # binary: the same steps kept, each weighed 1 whatever its advantage or sample weight
    assert torch.equal(actor_advantages(advantages, weights, "binary"), torch.tensor([0.0, 1.0, 1.0, 0.0]))
    assert torch.equal(actor_advantages(advantages, weights, "normalised"), normalise(advantages, weights))
    with pytest.raises(ValueError, match="advantages mode"):
        actor_advantages(advantages, weights, "clipped")


def test_normalise_stays_finite_when_the_spread_is_as_small_as_its_eps() -> None:
    """eps is added to the spread: advantages that differ by about eps scale by about 1 / (2 eps), never by
    1 / 0 (eps taken away instead would divide by nothing)."""
    advantages = torch.tensor([0.0, 2e-6], dtype=torch.float64)  # weighted std 1e-6, the default eps
    out = normalise(advantages, torch.ones(2, dtype=torch.float64))
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, torch.tensor([-0.5, 0.5], dtype=torch.float64))
