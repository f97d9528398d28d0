"""The Gymnasium environment: a phone (the simulated one, or any adb device) playing distrl's tasks.

Importing this package registers ``distrl/Phone-v0``::

    import gymnasium
    import distrl.env

    env = gymnasium.make("distrl/Phone-v0", suite="general", split="train")
    observation, info = env.reset(seed=0)

``PhoneEnv`` (``distrl.env.phone``) is the environment; ``distrl.env.spaces`` its spaces.
``distrl/PhoneFlat-v0`` (``distrl.env.flat``) is the same phone behind two wrappers, ``GoalTokens`` and
``GridActions``: the goal as token ids and a ``MultiDiscrete`` action, for libraries that take no text
(Stable-Baselines3). It needs the ``gym`` extra: ``pip install 'distrl[gym]'``.
"""

try:
    import gymnasium
except ModuleNotFoundError as exc:  # the optional extra is missing: say which
    raise ModuleNotFoundError("distrl.env needs gymnasium: pip install 'distrl[gym]'", name=exc.name) from exc

from distrl.env.flat import GoalTokens, GridActions
from distrl.env.phone import PhoneEnv

__all__ = ["ENV_ID", "FLAT_ENV_ID", "GoalTokens", "GridActions", "PhoneEnv"]

ENV_ID = "distrl/Phone-v0"
"""The id ``gymnasium.make`` knows the environment by."""
FLAT_ENV_ID = "distrl/PhoneFlat-v0"
"""The id of the phone with a token-id goal and a ``MultiDiscrete`` action (``distrl.env.flat``), for
libraries that take no text, such as Stable-Baselines3."""

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="distrl.env.phone:PhoneEnv")
if FLAT_ENV_ID not in gymnasium.registry:
    gymnasium.register(id=FLAT_ENV_ID, entry_point="distrl.env.flat:phone_flat")
