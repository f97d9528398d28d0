"""Each term of the actor losses, on batches small enough to work out by hand (``distrl.learner.losses``).

For every term: the loss's value, and the direction its gradient pushes (gradient descent moves a
quantity against its gradient: a negative ∂L/∂log π raises that action's likelihood).
"""

from __future__ import annotations

import math

import pytest
import torch

from distrl.learner.losses import (
    a_ride_weights,
    clipped_surrogate,
    digirl_keep,
    filtered_bc_keep,
    group_advantages,
    kl_anchor,
    kl_to_reference,
    top_trajectories,
    weighted_likelihood,
)
from distrl.learner.retrace import actor_advantages
from distrl.learner.rewards import outcome_rewards, rewarded, shaped_rewards
from distrl.records import Action, ActionType, EndReason, InvalidAction, Step, Task, Trajectory


def _t(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)


def a_ride_actor_loss(
    logprob: torch.Tensor,
    entropy: torch.Tensor,
    weights: torch.Tensor,
    sample_weights: torch.Tensor,
    *,
    entropy_coef: float,
    steps: int,
) -> torch.Tensor:
    """Eq. 1's loss with one weight on the whole answer: ``weighted_likelihood`` with all of log π as the
    decision."""
    zeros = torch.zeros_like(logprob)
    return weighted_likelihood(
        logprob, zeros, entropy, weights, zeros, sample_weights, entropy_coef=entropy_coef, steps=steps
    )


def imitation_loss(logprob: torch.Tensor, *, steps: int) -> torch.Tensor:
    ones, zeros = torch.ones_like(logprob), torch.zeros_like(logprob)
    return weighted_likelihood(logprob, zeros, zeros, ones, ones, ones, entropy_coef=0.0, steps=steps)


def test_the_rho_clip_caps_each_steps_ratio() -> None:
    rho, advantages, valid = _t(0.5, 2.0, 4.0), _t(1.0, 1.0, -1.0), _t(0.0, 0.0, 0.0)
    clipped = a_ride_weights(rho, advantages, valid, rho_clip=1.5, invalid_penalty=1.0)
    # min(ρ, 1.5)·A: 0.5·1, 1.5·1, 1.5·(−1); the ratio below the clip passes as it is
    torch.testing.assert_close(clipped, _t(0.5, 1.5, -1.5))
    unclipped = a_ride_weights(rho, advantages, valid, rho_clip=math.inf, invalid_penalty=1.0)
    torch.testing.assert_close(unclipped, _t(0.5, 2.0, -4.0))


def test_the_invalid_penalty_lowers_invalid_answers_by_kappa_times_rho() -> None:
    rho, advantages, invalid = _t(1.0, 1.0, 0.5), _t(0.2, 0.0, 0.0), _t(0.0, 1.0, 1.0)
    weights = a_ride_weights(rho, advantages, invalid, rho_clip=1.0, invalid_penalty=2.0)
    # a valid step keeps ρ·A; an invalid one gets ρ·(A − κ): −2 at ρ = 1, −1 at ρ = 0.5
    torch.testing.assert_close(weights, _t(0.2, -2.0, -1.0))
    logprob = _t(-1.0, -2.0, -3.0).requires_grad_()
    loss = a_ride_actor_loss(logprob, _t(0, 0, 0), weights, _t(1, 1, 1), entropy_coef=0.0, steps=3)
    # L = −(0.2·(−1) − 2·(−2) − 1·(−3)) / 3 = −(−0.2 + 4 + 3) / 3
    assert loss.item() == pytest.approx(-6.8 / 3)
    loss.backward()  # type: ignore[no-untyped-call]
    assert logprob.grad is not None
    torch.testing.assert_close(logprob.grad, _t(-0.2 / 3, 2.0 / 3, 1.0 / 3))
    # descent raises the valid answer's likelihood and lowers the invalid ones', the likelier one more
    assert logprob.grad[0] < 0 < logprob.grad[2] < logprob.grad[1]
    none = a_ride_weights(rho, advantages, invalid, rho_clip=1.0, invalid_penalty=0.0)
    torch.testing.assert_close(none, _t(0.2, 0.0, 0.0))


def test_the_entropy_bonus_raises_entropy_by_beta_times_w() -> None:
    logprob = _t(-1.0, -2.0).requires_grad_()
    entropy = _t(0.5, 1.5).requires_grad_()
    weights, sample_weights = _t(1.0, 0.5), _t(1.0, 2.0)
    loss = a_ride_actor_loss(logprob, entropy, weights, sample_weights, entropy_coef=0.1, steps=2)
    # L = −(1·(1·(−1) + 0.1·0.5) + 2·(0.5·(−2) + 0.1·1.5)) / 2 = −(−0.95 − 1.7) / 2
    assert loss.item() == pytest.approx(1.325)
    loss.backward()  # type: ignore[no-untyped-call]
    assert entropy.grad is not None
    assert logprob.grad is not None
    # ∂L/∂H = −β·w / N: descent raises the entropy of every step, twice as much where w is twice
    torch.testing.assert_close(entropy.grad, _t(-0.05, -0.1))
    torch.testing.assert_close(logprob.grad, _t(-0.5, -0.5))
    without = a_ride_actor_loss(logprob, entropy, weights, sample_weights, entropy_coef=0.0, steps=2)
    assert without.item() == pytest.approx(1.5)  # the bonus lowered the loss by β·Σ w·H / N = 0.175


def test_the_loss_is_a_mean_over_the_steps_trained() -> None:
    logprob, entropy = _t(-1.0, -1.0), _t(0.0, 0.0)
    one = a_ride_actor_loss(logprob, entropy, _t(1.0, 1.0), _t(1.0, 1.0), entropy_coef=0.0, steps=2)
    four = a_ride_actor_loss(logprob, entropy, _t(1.0, 1.0), _t(1.0, 1.0), entropy_coef=0.0, steps=4)
    assert (one.item(), four.item()) == pytest.approx((1.0, 0.5))


def test_positive_advantages_keep_the_better_steps_at_weighted_mean_one() -> None:
    advantages, weights = _t(-1.0, 0.5, 1.5), _t(1.0, 1.0, 2.0)
    positive = actor_advantages(advantages, weights, "positive")
    # max(A, 0) = (0, 0.5, 1.5), divided by its weighted mean over the kept steps, (0.5 + 2·1.5) / 3
    torch.testing.assert_close(positive, _t(0.0, 0.5 * 3 / 3.5, 1.5 * 3 / 3.5))
    torch.testing.assert_close(actor_advantages(advantages, weights, "signed"), advantages)
    normalised = actor_advantages(advantages, weights, "normalised")
    assert float((weights * normalised).sum()) == pytest.approx(0.0, abs=1e-5)
    torch.testing.assert_close(actor_advantages(_t(-1.0, 0.0), _t(1.0, 1.0), "positive"), _t(0.0, 0.0))
    with pytest.raises(ValueError, match="not decision, positive, binary, normalised or signed"):
        actor_advantages(advantages, weights, "clipped")


def test_decision_advantages_are_centred_and_scaled_whatever_the_critics_bias() -> None:
    advantages, weights = _t(-1.0, 0.0, 2.0), _t(1.0, 1.0, 2.0)
    decision = actor_advantages(advantages, weights, "decision")
    # weighted mean (−1 + 0 + 2·2) / 4 = 0.75, weighted variance (1.75² + 0.75² + 2·1.25²) / 4 = 1.6875
    std = 1.6875**0.5
    torch.testing.assert_close(decision, _t(-1.75 / std, -0.75 / std, 1.25 / std), atol=1e-5, rtol=1e-5)
    # a critic biased high (every advantage 0.5 lower) changes nothing: the batch pushes up as it pushes down
    torch.testing.assert_close(
        actor_advantages(advantages - 0.5, weights, "decision"), decision, atol=1e-5, rtol=1e-5
    )


def test_the_decision_and_the_shared_format_take_their_own_weights() -> None:
    """A failed step pushes its decision tokens down and leaves its format alone; a good one raises both."""
    decision = _t(-2.0, -1.0).requires_grad_()  # Σ log π over each answer's decision tokens
    shared = _t(-0.5, -0.25).requires_grad_()  # … and over its format tokens
    advantages = _t(-0.5, 1.0)
    loss = weighted_likelihood(
        decision,
        shared,
        _t(0.0, 0.0),
        advantages,
        advantages.clamp(min=0.0),
        _t(1.0, 1.0),
        entropy_coef=0.0,
        steps=2,
    )
    # L = −((−0.5·(−2) + 0·(−0.5)) + (1·(−1) + 1·(−0.25))) / 2 = −(1 − 1.25) / 2
    assert loss.item() == pytest.approx(0.125)
    loss.backward()  # type: ignore[no-untyped-call]
    assert decision.grad is not None
    assert shared.grad is not None
    torch.testing.assert_close(decision.grad, _t(0.25, -0.5))  # descent lowers the failure's decision
    torch.testing.assert_close(shared.grad, _t(0.0, -0.5))  # and never its format


def test_the_anchor_adds_kappa_times_the_mean_kl_and_pulls_it_down() -> None:
    logprob, entropy = _t(-1.0, -1.0), _t(0.0, 0.0)
    kl = _t(0.2, 0.6).requires_grad_()
    ones, zeros = _t(1.0, 1.0), _t(0.0, 0.0)
    free = weighted_likelihood(logprob, zeros, entropy, ones, ones, _t(1.0, 0.5), entropy_coef=0.0, steps=2)
    anchored = free + kl_anchor(kl, _t(1.0, 0.5), kl_coef=2.0, steps=2)
    # L = −(1·(−1) + 0.5·(−1)) / 2 + 2·(1·0.2 + 0.5·0.6) / 2 = 0.75 + 0.5
    assert (anchored.item(), free.item()) == pytest.approx((1.25, 0.75))
    anchored.backward()  # type: ignore[no-untyped-call]
    assert kl.grad is not None
    torch.testing.assert_close(kl.grad, _t(1.0, 0.5))  # ∂L/∂KL = κ·w / N > 0: descent lowers the KL


def test_the_kl_to_the_reference_sums_each_answer_tokens_kl_and_skips_tokens_both_forbid() -> None:
    # one answer of two tokens over a vocabulary of three, the third token forbidden in both
    inf = math.inf
    policy = torch.log(torch.tensor([[[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]]]))
    reference = torch.log(torch.tensor([[[0.25, 0.75, 0.0], [0.25, 0.75, 0.0]]]))
    assert bool(torch.isneginf(policy[..., 2]).all())
    answer = torch.tensor([[True, True]])
    kl = kl_to_reference(policy, reference, answer)
    # token 1: 0.5·ln(0.5/0.25) + 0.5·ln(0.5/0.75); token 2: the same distribution, 0
    expected = 0.5 * math.log(2) + 0.5 * math.log(0.5 / 0.75)
    assert kl.tolist() == pytest.approx([expected])
    # a position outside the answer adds nothing
    assert kl_to_reference(policy, reference, torch.tensor([[False, True]])).tolist() == pytest.approx([0.0])
    with pytest.raises(ValueError, match="the reference is"):
        kl_to_reference(policy, reference[:, :1], answer)
    assert -inf < float(kl) < inf


def test_the_clipped_surrogate_clips_the_ratio_on_the_side_the_advantage_pushes() -> None:
    # classic form (ratio to μ): ρ = e^(log π − log μ) = 2, 0.5 and 1.1; ε = 0.2
    logprob = torch.log(_t(0.4, 0.1, 0.22)).requires_grad_()
    behaviour = torch.log(_t(0.2, 0.2, 0.2))
    advantages = _t(1.0, -1.0, 1.0)
    loss, clipped = clipped_surrogate(
        logprob,
        logprob.detach(),
        behaviour,
        advantages,
        clip=0.2,
        behaviour_cap=5.0,
        decoupled=False,
        steps=3,
    )
    # min(2·1, 1.2·1) = 1.2; min(0.5·(−1), 0.8·(−1)) = −0.8; min(1.1, 1.1) = 1.1 → L = −(1.2 − 0.8 + 1.1)/3
    assert loss.item() == pytest.approx(-(1.2 - 0.8 + 1.1) / 3)
    assert clipped.tolist() == [True, True, False]
    loss.backward()  # type: ignore[no-untyped-call]
    assert logprob.grad is not None
    # clipped steps give no gradient; the unclipped one: ∂L/∂log π = −ρ·A/3
    torch.testing.assert_close(logprob.grad, _t(0.0, 0.0, -1.1 / 3))


def test_the_decoupled_surrogate_weighs_each_step_by_its_capped_staleness() -> None:
    # π_θ = π_prox (the update's first step): ratio 1, so the loss is −Σ min(π_prox/μ, c)·A / N
    proximal = torch.log(_t(0.4, 0.3))
    behaviour = torch.log(_t(0.2, 0.01))  # π_prox/μ = 2 and 30, capped at 5
    logprob = proximal.clone().requires_grad_()
    loss, clipped = clipped_surrogate(
        logprob, proximal, behaviour, _t(1.0, -1.0), clip=0.2, behaviour_cap=5.0, decoupled=True, steps=2
    )
    assert loss.item() == pytest.approx(-(2.0 * 1.0 + 5.0 * -1.0) / 2)
    assert clipped.tolist() == [False, False]
    loss.backward()  # type: ignore[no-untyped-call]
    assert logprob.grad is not None
    torch.testing.assert_close(logprob.grad, _t(-1.0, 2.5))  # the weight is a constant; ∂r/∂log π = r = 1


def test_group_advantages_contrast_plays_of_one_task_and_drop_uniform_groups() -> None:
    rewards = _t(1.0, 0.0, 0.0, 1.0, 1.0, 0.0)
    groups = ["a", "a", "a", "b", "b", "c"]
    grpo, informative = group_advantages(rewards, groups, scale=True)
    # group a: mean 1/3, population std √(2/9); b: all successes (uniform); c: a group of one
    std = math.sqrt(2 / 9)
    torch.testing.assert_close(grpo, _t((2 / 3) / std, (-1 / 3) / std, (-1 / 3) / std, 0.0, 0.0, 0.0))
    assert informative.tolist() == [True, True, True, False, False, False]
    centred, _ = group_advantages(rewards, groups, scale=False)
    torch.testing.assert_close(centred, _t(2 / 3, -1 / 3, -1 / 3, 0.0, 0.0, 0.0))
    # RLOO: R_i minus the mean of the others: 1 − 0 = 1; 0 − (1 + 0)/2 = −1/2
    rloo, _ = group_advantages(rewards, groups, scale=False, leave_one_out=True)
    torch.testing.assert_close(rloo, _t(1.0, -0.5, -0.5, 0.0, 0.0, 0.0))


def test_digirl_keeps_steps_above_one_over_h_of_trajectories_that_beat_their_instruction_value() -> None:
    step_advantages = _t(0.05, 0.1, 0.2, 0.5)
    kept = digirl_keep(step_advantages, final_reward=1.0, instruction_value=0.4, max_steps=10)
    # 1/H = 0.1: strictly above it
    assert kept.tolist() == [False, False, True, True]
    for reward, value in ((1.0, 1.0), (0.0, 0.4), (1.0, 1.2)):  # r − V_instr ≤ 0: nothing at all
        none = digirl_keep(step_advantages, final_reward=reward, instruction_value=value, max_steps=10)
        assert not none.any()
        assert none.dtype == torch.bool  # a mask: it indexes the steps
    assert digirl_keep(step_advantages, final_reward=1.0, instruction_value=0.4, max_steps=4).tolist() == [
        False,
        False,
        False,
        True,
    ]


def test_filtered_bc_imitates_every_step_of_successes_only() -> None:
    assert filtered_bc_keep(True, 3).tolist() == [True, True, True]
    assert filtered_bc_keep(False, 3).tolist() == [False, False, False]
    assert filtered_bc_keep(False, 3).dtype == torch.bool  # a mask: it indexes the steps
    logprob = _t(-1.0, -3.0).requires_grad_()
    loss = imitation_loss(logprob, steps=4)
    assert loss.item() == pytest.approx(1.0)  # −(−1 − 3) / 4
    loss.backward()  # type: ignore[no-untyped-call]
    assert logprob.grad is not None
    torch.testing.assert_close(logprob.grad, _t(-0.25, -0.25))  # descent raises both


def test_the_curricula_keep_the_top_share_of_a_batch_by_their_score() -> None:
    scores = _t(0.2, -0.5, 0.9, 0.2, 0.4)
    assert top_trajectories(scores, 0.4).tolist() == [False, False, True, False, True]  # ⌈0.4·5⌉ = 2
    assert top_trajectories(scores, 0.1).tolist() == [False, False, True, False, False]  # at least one
    assert top_trajectories(scores, 0.6).tolist() == [True, False, True, False, True]  # the first of equals
    assert top_trajectories(scores, 1.0).all()
    # DigiRL's: of the top share, only advantages above 0
    assert top_trajectories(scores, 1.0, above=0.0).tolist() == [True, False, True, True, True]
    assert not top_trajectories(_t(-0.1, -0.2), 1.0, above=0.0).any()
    # both at once: the top share, then of those only the ones strictly above
    assert top_trajectories(scores, 0.4, above=0.1).tolist() == [False, False, True, False, True]
    assert top_trajectories(scores, 1.0, above=0.4).tolist() == [False, False, True, False, False]
    # the share still counts when every score clears ``above``; a score equal to it is not above
    assert top_trajectories(_t(3.0, 2.0, 1.0, 0.5), 0.5, above=0.0).tolist() == [True, True, False, False]
    assert top_trajectories(_t(1.0, 0.0), 1.0, above=0.0).tolist() == [True, False]


def _played(*actions: Action | InvalidAction, success: bool | None, reward: float = 0.0) -> Trajectory:
    steps = tuple(
        Step(
            index=i,
            observation=None,  # type: ignore[arg-type]  # the rewards read actions and the outcome only
            output="",
            action=action,
            reward=reward,
            behaviour_logprob=0.0,
            policy_version=0,
        )
        for i, action in enumerate(actions)
    )
    task = Task(id="t", suite="general", goal="g")
    return Trajectory(
        id="x",
        task=task,
        host="h",
        device="d",
        steps=steps,
        final_observation=None,
        end_reason=EndReason.COMPLETE,
        success=success,
    )


def test_the_reward_is_decided_from_the_outcome_not_from_what_steps_carry() -> None:
    back = Action(type=ActionType.PRESS_BACK)
    won = _played(back, back, back, success=True, reward=7.0)  # a stored reward is a record, not read
    assert outcome_rewards(won) == [0.0, 0.0, 1.0]
    assert shaped_rewards(won, step_cost=0.0, invalid_reward=0.0, repeat_penalty=0.0) == [0.0, 0.0, 1.0]
    assert [step.reward for step in rewarded(won).steps] == [0.0, 0.0, 1.0]
    for outcome in (False, None):  # a failure and an unscored episode earn nothing
        assert outcome_rewards(_played(back, back, success=outcome, reward=1.0)) == [0.0, 0.0]
    assert outcome_rewards(_played(success=True)) == []


def test_a_rides_reward_takes_the_step_cost_invalid_answers_and_growing_repeats_off() -> None:
    tap = Action(type=ActionType.DUAL_POINT, touch=(0.5, 0.5), lift=(0.5, 0.5))
    back = Action(type=ActionType.PRESS_BACK)
    garbage = InvalidAction(text="??", reason="not an action")
    done = Action(type=ActionType.STATUS_TASK_COMPLETE)
    trajectory = _played(tap, tap, garbage, tap, back, tap, done, success=True)
    plain = shaped_rewards(trajectory, step_cost=0.0, invalid_reward=0.0, repeat_penalty=0.0)
    assert plain == [0, 0, 0, 0, 0, 0, 1]  # the outcome alone when nothing is shaped
    shaped = shaped_rewards(trajectory, step_cost=0.05, invalid_reward=1.0, repeat_penalty=0.4)
    # tap; tap again (1st repeat); garbage (invalid, the last valid action stays tap); tap (2nd repeat in
    # a row: the invalid answer between does not break it); back; tap (not a repeat of back); done, +1
    expected = [-0.05, -0.45, -1.05, -0.85, -0.05, -0.05, 0.95]
    assert shaped == pytest.approx(expected)
    failed = _played(back, back, back, success=False)
    assert shaped_rewards(failed, step_cost=0.0, invalid_reward=0.0, repeat_penalty=0.4) == pytest.approx(
        [0.0, -0.4, -0.8]  # cumulative: 0.4 for the first repeat, 0.8 for the second
    )
