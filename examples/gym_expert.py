"""The simulated phone's expert, played through the Gymnasium environment, CleanRL style: one file, the
settings at the top, the loop in plain sight. Prints the success rate.

    python examples/gym_expert.py                       # 20 general train tasks
    python examples/gym_expert.py --suite web_shopping --split test --episodes 50

An agent of your own replaces ``expert_action`` with its answer to ``observation`` (the screen, the
goal, the step): AutoUI's action text, as the expert's action is written here.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import gymnasium

from distrl.actions import format_action
from distrl.env import PhoneEnv  # importing distrl.env registers distrl/Phone-v0
from distrl.sim.device import SimDevice
from distrl.sim.suites import expert_action


@dataclass
class Args:
    suite: str = "general"
    """The task suite: general or web_shopping."""
    split: str = "train"
    """train, test or unseen."""
    episodes: int = 20
    """Episodes to play, each a task drawn by the env."""
    seed: int = 1
    """Seeds the first reset: the tasks drawn and the phone."""


def main(args: Args) -> None:
    env = gymnasium.make(
        "distrl/Phone-v0", suite=args.suite, split=args.split, screen_width=270, screen_height=600
    )
    phone_env = env.unwrapped  # the PhoneEnv under gymnasium's checks: its task and its phone
    assert isinstance(phone_env, PhoneEnv)
    successes, steps, started = 0, 0, time.perf_counter()
    for episode in range(args.episodes):
        observation, info = env.reset(seed=args.seed if episode == 0 else None)
        done, success = False, False
        while not done:
            # the expert reads the phone's state; an agent of yours answers `observation` instead
            task, device = phone_env.task, phone_env.device
            assert task is not None
            assert isinstance(device, SimDevice)
            action = format_action(expert_action(task, device.phone))
            observation, reward, terminated, truncated, info = env.step(action)
            steps += 1
            done, success = terminated or truncated, float(reward) == 1.0
        successes += success
        outcome = "success" if success else "failure"
        print(f"episode {episode}: {info['task_id']}, {observation['step']} steps: {outcome}")
    env.close()
    rate = steps / (time.perf_counter() - started)
    print(f"success rate {successes / args.episodes:.1%} over {args.episodes} episodes ({rate:.0f} steps/s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        parser.add_argument(f"--{name}", type=type(default), default=default)
    main(Args(**vars(parser.parse_args())))
