"""The grammar of the commands that run on this machine alone, without an inventory's fleet: parse an
action, the worker agent, simulated phones, pretraining, evaluation, episodes' pages and datasets, saving a
built-in model, and measuring a judge (``add_local_commands``; the commands are in ``distrl.cli.local`` and
``distrl.cli.evaluate``)."""

from __future__ import annotations

import argparse
from typing import TypeAlias

from distrl.cli.common import (
    ADAPTER_HELP,
    adapter_folder,
    fault_rates,
    fraction,
    non_negative_float,
    non_negative_int,
    path_argument,
    path_text,
    port_number,
    positive_float,
    positive_int,
    positive_seconds,
    screen_size,
    seed_number,
)
from distrl.cli.evaluate import eval_command
from distrl.cli.local import (
    action_command,
    export_command,
    judge_eval_command,
    pretrain_command,
    save_model_command,
    sim_command,
    view_command,
    worker_command,
)

__all__ = ["Commands", "add_local_commands"]

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``ArgumentParser.add_subparsers`` returns."""


def add_local_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add this machine's commands to ``commands``, each with ``common``'s options."""
    action = commands.add_parser(
        "action",
        parents=[common],
        help="parse a model's text action and show the gesture it makes",
        description='Parse an AitW/AutoUI action, e.g. \'Action Decision: "action_type": "DUAL_POINT", '
        '"touch_point": "[0.5, 0.5]", "lift_point": "[0.5, 0.5]", "typed_text": ""\'. '
        "Exits 1 if the text is not a valid action.",
    )
    action.add_argument("text", help="the model output")
    action.add_argument(
        "--screen", type=screen_size, default=(1080, 2400), help="screen size WxH (default 1080x2400)"
    )
    action.set_defaults(command=action_command)

    # internal: no help, so that --help's list of commands leaves it out (the docs' reference keeps it)
    worker = commands.add_parser(
        "worker",
        parents=[common],
        description="Speak the worker protocol on stdin/stdout until shutdown or end of input. The learner "
        "starts this on every host; running it by hand is for debugging.",
    )
    worker.add_argument("--host", required=True, help="this host's name in the inventory")
    worker.add_argument(
        "--handshake-timeout",
        type=positive_seconds,
        default=60.0,
        metavar="S",
        help="seconds to wait for the learner",
    )
    worker.add_argument(
        "--silence-timeout",
        type=positive_seconds,
        default=60.0,
        metavar="S",
        help="seconds without a byte from the learner before leaving (its heartbeat_timeout_s)",
    )
    worker.set_defaults(command=worker_command)

    sim = commands.add_parser(
        "sim",
        parents=[common],
        help="serve simulated phones that the real adb server lists as emulators",
        description="Serve simulated phones as emulators: phone k's console on BASE+2k and its adbd on "
        "BASE+2k+1 (loopback only), so `adb devices` lists emulator-BASE, emulator-BASE+2, ... and adb, "
        "adbutils and the emulator console drive them like real ones. Each phone announces itself to the "
        "adb server, as an emulator does. Runs until Ctrl-C.",
    )
    sim.add_argument(
        "--devices", type=positive_int, default=1, metavar="N", help="phones to serve (default 1)"
    )
    sim.add_argument(
        "--base-port",
        type=port_number,
        default=5554,
        metavar="PORT",
        help="first console port (default 5554)",
    )
    sim.add_argument(
        "--size", type=screen_size, default=(1080, 2400), help="screen size WxH (default 1080x2400)"
    )
    sim.add_argument("--seed", type=seed_number, default=0, help="phone k is seeded with SEED+k (default 0)")
    sim.add_argument(
        "--time-scale",
        type=non_negative_float,
        default=1.0,
        metavar="F",
        help="wall seconds per simulated second of latency (default 1; 0: no waiting)",
    )
    sim.add_argument(
        "--latency",
        choices=["off", "calibrated"],
        default="off",
        help="device latency: none, or a real emulator's (default off)",
    )
    sim.add_argument(
        "--faults",
        type=fault_rates,
        default="",
        metavar="RATES",
        help="fault probabilities per operation, e.g. hang=0.01,crash=0.001,offline=0.001,white_frame=0.02",
    )
    sim.add_argument(
        "--token-file",
        default="~/.emulator_console_auth_token",
        metavar="PATH",
        help="console auth token (created if missing; an empty file turns auth off)",
    )
    sim.add_argument(
        "--adb-server-port",
        type=port_number,
        default=None,
        metavar="PORT",
        help="the adb server to announce the phones to (default $ANDROID_ADB_SERVER_PORT or 5037)",
    )
    sim.add_argument("--no-register", action="store_true", help="do not announce the phones to an adb server")
    sim.add_argument(
        "--boot-s",
        type=non_negative_float,
        default=0.0,
        metavar="S",
        help="seconds each phone boots, listed by adb but sys.boot_completed not yet 1 (default 0)",
    )
    sim.add_argument(
        "--snapshots",
        type=path_argument,
        default=None,
        metavar="DIR",
        help="keep console snapshots in DIR, one folder each, as an AVD keeps them (default: memory only)",
    )
    sim.add_argument(
        "--snapshot",
        default="",
        metavar="NAME",
        help="boot into this snapshot of --snapshots, if there",
    )
    sim.add_argument(
        "--read-only", action="store_true", help="as emulator -read-only: snapshots load but are never saved"
    )
    sim.set_defaults(command=sim_command)

    pretrain = commands.add_parser(
        "pretrain",
        parents=[common],
        help="train the built-in tiny policy by behaviour cloning on the sim's expert",
        description="Build a fresh tiny policy (or take --start) and train all its weights to imitate the "
        "simulated phone's expert (with a share of plausible mistakes), within a time budget, then save it "
        "as a model folder that policy.model can name. Nothing is written until training has finished.",
    )
    pretrain.add_argument(
        "--out", type=path_text, required=True, metavar="FOLDER", help="the model folder to create"
    )
    pretrain.add_argument(
        "--suite",
        action="append",
        metavar="NAME",
        help="task suite to learn from, general or web_shopping; repeat for both (default general)",
    )
    pretrain.add_argument(
        "--minutes", type=positive_float, default=10.0, metavar="M", help="time budget (default 10)"
    )
    pretrain.add_argument(
        "--steps", type=positive_int, default=None, metavar="N", help="most optimiser steps"
    )
    pretrain.add_argument(
        "--episodes",
        type=positive_int,
        default=1000,
        metavar="N",
        help="demonstration episodes (default 1000)",
    )
    pretrain.add_argument(
        "--mistake-rate",
        type=fraction,
        default=0.1,
        metavar="P",
        help="share of mistaken actions (default 0.1)",
    )
    pretrain.add_argument(
        "--randomise",
        type=fraction,
        default=0.5,
        metavar="P",
        help="share of episodes playing drawn tasks: the train templates with fresh values and wordings, "
        "never held-out ones (default 0.5, as the built-in tiny-bc)",
    )
    pretrain.add_argument(
        "--drills",
        type=non_negative_int,
        default=16,
        metavar="N",
        help="at each step where the expert types, N more examples of its screen with the goal of a task "
        "drawn from the same template, and what the expert types for that (default 16, as the built-in "
        "tiny-bc; 0: none)",
    )
    pretrain.add_argument(
        "--contrasts",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="N other tasks of each episode's template, each one more example where the expert's action "
        "for it first parts from the demonstration's: that screen with its goal (default 0: none, as the "
        "built-in tiny-bc; 8 measured no better)",
    )
    pretrain.add_argument(
        "--lr", type=positive_float, default=3e-3, metavar="LR", help="peak learning rate (default 3e-3)"
    )
    pretrain.add_argument(
        "--start",
        type=path_text,
        default=None,
        metavar="MODEL",
        help="go on training this model (tiny-bc, tiny-weak or a model folder, as policy.model names them) "
        "instead of a fresh tiny: more steps, other demonstrations (a lower --lr, such as 1e-3, keeps what "
        "it knows)",
    )
    pretrain.add_argument(
        "--seed", type=seed_number, default=0, help="seed of the weights and the data (default 0)"
    )
    pretrain.set_defaults(command=pretrain_command)

    view = commands.add_parser(
        "view",
        parents=[common],
        help="write an HTML page to look at the episodes in a folder",
        description="Write DIR/index.html: every episode in DIR (a run's episodes folder, or collect's "
        "--out) with its goal, outcome, the judge's verdict, and its steps: each screen, where the tap "
        "went, the model's answer and the reward. Open it in a browser; nothing else is needed.",
    )
    view.add_argument("folder", metavar="DIR", type=path_argument, help="a folder of episodes")
    view.add_argument(
        "--strict", action="store_true", help="fail on a malformed episode (default: skip it with a warning)"
    )
    view.set_defaults(command=view_command)

    export = commands.add_parser(
        "export",
        parents=[common],
        help="make a folder of episodes a dataset that Hugging Face datasets loads",
        description="Write DIR/metadata.jsonl, a row per step beside its screen, so that "
        'datasets.load_dataset("imagefolder", data_dir=DIR) reads the episodes as a dataset.',
    )
    export.add_argument("folder", metavar="DIR", type=path_argument, help="a folder of episodes")
    export.add_argument(
        "--strict", action="store_true", help="fail on a malformed episode (default: skip it with a warning)"
    )
    export.set_defaults(command=export_command)

    save_model = commands.add_parser(
        "save-model",
        parents=[common],
        help="write a built-in model (tiny, tiny-bc, tiny-weak) to a folder, as any Hugging Face model",
        description="Write the built-in tiny, tiny-bc or tiny-weak model, with its tokenizer and image "
        "processor, to DIR as an ordinary Qwen2-VL model folder: the base of adapters trained from it (their "
        "config names tiny-bc), for transformers and peft without distrl.",
    )
    save_model.add_argument("model", choices=["tiny", "tiny-bc", "tiny-weak"], help="which built-in model")
    save_model.add_argument("out", type=path_text, metavar="DIR", help="an empty or new folder")
    save_model.add_argument(
        "--seed", type=seed_number, default=None, help="tiny's weights seed (default 0; tiny alone)"
    )
    save_model.set_defaults(command=save_model_command)

    evaluate = commands.add_parser(
        "eval",
        parents=[common],
        help="measure a policy's success rate on simulated tasks",
        description="Load a model folder (e.g. one pretrain wrote) and let it play tasks of a suite on "
        "simulated phones, greedily and at temperature 1 (the same tasks), or at --temperature alone; prints "
        "each success rate with its standard error (±), and with --samples K pass@k for k = 1..K (K plays of "
        "each task at temperature 1, seeded SEED, SEED+1, ...) and the tasks solved at least once, per "
        "template.",
    )
    evaluate.add_argument(
        "model", type=path_text, metavar="MODEL", help="a local model folder, tiny, tiny-bc or tiny-weak"
    )
    evaluate.add_argument("--adapter", default="", type=adapter_folder, metavar="FOLDER", help=ADAPTER_HELP)
    evaluate.add_argument("--suite", default="general", help="general or web_shopping (default general)")
    evaluate.add_argument(
        "--split",
        default="test",
        choices=["train", "test", "unseen"],
        help="train; test: held-out values and wordings of the train tasks; unseen: held-out kinds of task "
        "(default test)",
    )
    evaluate.add_argument(
        "--episodes",
        type=positive_int,
        default=None,
        metavar="N",
        help="tasks to play, each once (default: all)",
    )
    evaluate.add_argument(
        "--temperature",
        type=non_negative_float,
        default=None,
        metavar="T",
        help="decode at T alone, 0 being greedy (default: greedy, then temperature 1)",
    )
    evaluate.add_argument(
        "--samples",
        type=positive_int,
        default=1,
        metavar="K",
        help="plays of each task at temperature 1 (or --temperature above 0), for pass@1..K (default 1)",
    )
    evaluate.add_argument(
        "--seed", type=seed_number, default=0, help="task order and sampling seed (default 0)"
    )
    evaluate.add_argument(
        "--against-start",
        action="store_true",
        help="with --adapter: also play MODEL without it on the same tasks and seeds, and report the "
        "adapter's difference from it paired by task, with its standard error",
    )
    evaluate.add_argument(
        "--checkpoints",
        type=positive_int,
        default=0,
        metavar="K",
        help="with --adapter naming a run (or one of its checkpoints): play the adapters of its last K "
        "checkpoints (up to that one) on the same tasks and seeds, and report each and their mean, each "
        "task's success its mean over them: steadier than one checkpoint, whose figure carries the "
        "training's own noise",
    )
    evaluate.add_argument("--per-task", action="store_true", help="also print each task's outcome")
    evaluate.add_argument(
        "--json", action="store_true", help="print the figures as one JSON object (--per-task: with outcomes)"
    )
    evaluate.set_defaults(command=eval_command)

    judge_eval = commands.add_parser(
        "judge-eval",
        parents=[common],
        help="measure the inventory's judge against the sim's truth before a run",
        description="Play simulated episodes (half by the expert with mistakes, half by the inventory's "
        "policy, so that both outcomes occur), ask the inventory's [judge] about each as a run would, and "
        "report its agreement with the sim's own success checks (accuracy, precision, recall, the confusion "
        "table), its cost per episode and how long an episode waits for its score.",
    )
    judge_eval.add_argument(
        "inventory", type=path_text, metavar="HOSTS_TOML", help="an inventory with a [judge] table"
    )
    judge_eval.add_argument(
        "--episodes", type=positive_int, default=64, metavar="N", help="episodes to judge (default 64)"
    )
    judge_eval.add_argument("--suite", default=None, help="general or web_shopping (default: run.suite)")
    judge_eval.add_argument(
        "--split", default="test", choices=["train", "test", "unseen"], help="(default test)"
    )
    judge_eval.add_argument(
        "--seed", type=seed_number, default=0, help="task order and play seed (default 0)"
    )
    judge_eval.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    judge_eval.set_defaults(command=judge_eval_command)
