"""In-process runs on in-process sim phones, no fleet: DESIGN's ``local``.

- ``play``: a policy playing sim phones, several at once with batched answers: ``evaluate`` and
  ``rollouts`` (trajectories with behaviour log-probs);
- ``evaluation``: what ``evaluate`` found (``Evaluation``): success rates with standard errors, pass@k,
  differences paired by task;
- ``train``: ``train_local``, rounds of rollouts and learner updates in one process;
- ``demos``: the sim expert's demonstrations (with mistakes, drills and contrasts);
- ``pretrain``: behaviour cloning of ``tiny`` on them (``tiny-bc``);
- ``judge_eval``: a VLM judge's verdicts against the sim's on the same episodes.

Each draws its tasks with the one task draw, ``distrl.tasks.draw``.
"""

from distrl.local.demos import demonstrations
from distrl.local.evaluation import Evaluation
from distrl.local.judge_eval import Calibration, calibrate, calibration_episodes
from distrl.local.play import evaluate, rollouts
from distrl.local.pretrain import pretrain
from distrl.local.train import Round, train_local

__all__ = [
    "Calibration",
    "Evaluation",
    "Round",
    "calibrate",
    "calibration_episodes",
    "demonstrations",
    "evaluate",
    "pretrain",
    "rollouts",
    "train_local",
]
