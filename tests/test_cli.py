"""``python -m distrl`` as a user meets it: help, one-sentence errors, exit codes, the demo run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "hosts.example.toml"


def distrl(*args: str, cwd: Path = ROOT, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "distrl", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )


def assert_one_sentence_error(result: subprocess.CompletedProcess[str], status: int, *words: str) -> None:
    assert result.returncode == status, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("distrl: error: ")
    for word in words:
        assert word in lines[0]


def test_help_lists_the_commands() -> None:
    result = distrl("--help")
    assert result.returncode == 0
    for command in (
        "run",
        "collect",
        "probe",
        "deploy",
        "check",
        "init",
        "view",
        "export",
        "judge-eval",
    ):
        assert f"    {command} " in result.stdout
    assert "    worker " not in result.stdout  # internal: the learner starts it (documented as such)
    assert "python -m distrl init" in result.stdout  # where a new user (a wheel install too) starts


def test_probe_the_example_inventory() -> None:
    result = distrl("probe", str(EXAMPLE), "--heartbeats", "3")
    assert result.returncode == 0, result.stderr
    assert "1 host, 32 devices, mode async" in result.stdout
    assert "local            ok    32 devices" in result.stdout
    assert "shut down cleanly" in result.stdout


def test_check_prints_hosts_and_devices() -> None:
    result = distrl("check", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert "local subprocess" in result.stdout
    assert "sim-0, sim-1" in result.stdout
    assert "screens: JPEG at quality 85, at most 2,592,000 pixels, from every device" in result.stdout
    assert "inventory ok" in result.stdout


def test_check_refuses_a_key_that_moved_and_names_its_place(tmp_path: Path) -> None:
    old = tmp_path / "hosts.toml"
    old.write_text(
        '[sim]\nimage_format = "png"\n[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = { sim = 1 }\n'
    )
    assert_one_sentence_error(distrl("check", str(old)), 2, "sim.image_format is now screen.image_format")
    old.write_text(old.read_text().replace("[sim]", "[screen]"))
    assert "screens: PNG, at most 2,592,000 pixels" in distrl("check", str(old)).stdout


def test_bad_inventory_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "hosts.toml"
    bad.write_text('[[hosts]]\nname = "a"\naddress = "localhost"\nport = "22"\ndevices = { sim = 1 }\n')
    for command in ("run", "probe", "check"):
        result = distrl(command, str(bad))
        assert_one_sentence_error(result, 2, str(bad), "hosts[0].port", "expected an integer")


def test_missing_inventory_is_one_sentence(tmp_path: Path) -> None:
    assert_one_sentence_error(distrl("run", str(tmp_path / "nope.toml")), 2, "file not found")


def test_unreachable_kind_of_host_fails_clearly(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        '[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 2 }\n'
        '[[hosts]]\nname = "far"\naddress = "192.0.2.1"\ndevices = { sim = 2 }\n'
    )
    result = distrl("probe", str(inventory), "--heartbeats", "1")
    # The local host still works; the SSH host is reported, and the run fails as a whole.
    assert "local            ok" in result.stdout
    assert "far              FAIL" in result.stdout
    assert "host 'far': cannot connect to 192.0.2.1 port 22" in result.stdout
    assert_one_sentence_error(result, 1, "1 of 2 host(s) failed: far")


def test_worker_that_cannot_start_is_reported(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        '[[hosts]]\nname = "a"\naddress = "localhost"\npython = "/nonexistent/python"\n'
        "devices = { sim = 1 }\n"
    )
    result = distrl("probe", str(inventory))
    command = "/nonexistent/python -m distrl worker --host a --silence-timeout 30 --handshake-timeout 30"
    assert f"cannot start the worker ({command})" in result.stdout
    assert_one_sentence_error(result, 1, "1 of 1 host(s) failed")


def test_check_names_a_local_path_that_does_not_exist(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.toml"
    ssh = (
        '[[hosts]]\nname = "gpu"\naddress = "10.0.0.9"\nidentity_file = "keys/nope"\ndevices = { sim = 1 }\n'
    )
    inventory.write_text(ssh)
    result = distrl("check", str(inventory))
    assert_one_sentence_error(
        result, 2, "hosts[0].identity_file", "keys/nope", "does not exist on this machine"
    )
    inventory.write_text(
        '[policy]\nmodel = "models/mine"\n' + ssh.replace('identity_file = "keys/nope"\n', "")
    )
    result = distrl("check", str(inventory))
    assert_one_sentence_error(result, 2, "policy.model", "models/mine")
    (tmp_path / "models" / "mine").mkdir(parents=True)
    assert distrl("check", str(inventory)).returncode == 0
    inventory.write_text(
        '[[hosts]]\nname = "here"\naddress = "localhost"\npython = "/nonexistent/python3"\n'
        "devices = { sim = 1 }\n"
    )
    result = distrl("check", str(inventory))
    assert_one_sentence_error(result, 2, "hosts[0].python", "/nonexistent/python3", "is no program")


def test_a_run_whose_every_host_is_given_up_fails_and_says_why(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        f'[run]\noutput_dir = "{tmp_path / "runs"}"\nmax_restarts = 0\n'
        '[[hosts]]\nname = "a"\naddress = "localhost"\npython = "/nonexistent/python"\n'
        "devices = { sim = 1 }\n"
    )
    result = distrl("run", str(inventory))
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("distrl: error: the run stopped before its goal: every host was given up (a: ")
    assert "cannot start the worker" in last
    assert "0 episodes" in result.stdout


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'Action Decision: "action_type": "DUAL_POINT", "touch_point": "[0.5, 0.25]", '
            '"lift_point": "[0.5, 0.25]", "typed_text": ""',
            "Tap(x=270, y=1200)",
        ),
        ('Action Decision: "action_type": "PRESS_HOME"', "KeyEvent(keycode=3)"),
    ],
)
def test_action_shows_the_gesture(text: str, expected: str) -> None:
    result = distrl("action", text, "--screen", "1080x2400")
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


def test_invalid_action_and_bad_arguments() -> None:
    result = distrl("action", 'Action Decision: "action_type": "CLICK"')
    assert_one_sentence_error(result, 1, "not a valid action", "unknown action type")
    bad_screen = distrl("action", "x", "--screen", "wide")
    assert bad_screen.returncode == 2
    assert "expected WIDTHxHEIGHT" in bad_screen.stderr
    assert distrl("frobnicate").returncode == 2


STOPS = [
    pytest.param(signal.SIGINT, "Ctrl-C", "interrupted", 130, id="ctrl-c"),
    pytest.param(signal.SIGTERM, "SIGTERM", "terminated", 143, id="sigterm"),
]
"""How a user stops a command (Ctrl-C, or ``kill``, systemd and batch schedulers' SIGTERM): the signal,
its name in the command's last line, the error word and the exit status."""


@pytest.mark.parametrize(("stop", "name", "error", "status"), STOPS)
def test_a_stop_ends_the_run_and_its_workers(
    stop: signal.Signals, name: str, error: str, status: int
) -> None:
    command = [sys.executable, "-m", "distrl", "probe", str(EXAMPLE), "--heartbeats", "100000000"]
    # Started with SIGINT at its default, as from a terminal (a test runner may have it ignored).
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as learner:
        assert learner.stdout is not None
        assert "1 host" in learner.stdout.readline()
        worker_pid = _wait_for_worker(learner.pid)
        learner.send_signal(stop)
        _, stderr = learner.communicate(timeout=30)
    assert learner.returncode == status
    assert stderr.strip().splitlines() == [f"distrl: error: {error}"]
    deadline = time.monotonic() + 15
    while Path(f"/proc/{worker_pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{worker_pid}").exists(), "the worker outlived the interrupted run"


_CLEANUP = """
import anyio
from distrl.cli.common import run_async

async def work():
    try:
        print("ready", flush=True)
        await anyio.sleep(60)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(2)  # a checkpoint being written
        print("cleaned", flush=True)

try:
    run_async(work)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.parametrize(
    ("gap_s", "out", "err", "status"),
    [
        (0.05, ["ready", "cleaned", "interrupted"], [], 0),  # one stop heard twice: the cleanup runs
        (1.5, ["ready"], ["distrl: error: interrupted again: stopped at once"], 130),
    ],
    ids=["heard-twice", "pressed-again"],
)
def test_a_second_ctrl_c_is_the_same_stop_at_once_and_ends_the_cleanup_later(
    gap_s: float, out: list[str], err: list[str], status: int
) -> None:
    """``timeout -s INT`` signals the process, then its group: asyncio raised KeyboardInterrupt on the second
    wherever its loop was (the cleanup cut short; in tools/demo a cancel scope's exit broke into a
    traceback). A Ctrl-C pressed again later ends the process at once, in one line."""
    with subprocess.Popen(
        [sys.executable, "-c", _CLEANUP],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as process:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        process.send_signal(signal.SIGINT)
        time.sleep(gap_s)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    assert ["ready", *stdout.split()] == out
    assert stderr.strip().splitlines() == err
    assert process.returncode == status


@pytest.mark.parametrize(("stop", "name", "error", "status"), STOPS)
def test_a_stopped_run_writes_a_checkpoint_and_says_how_to_resume(
    stop: signal.Signals, name: str, error: str, status: int, tmp_path: Path
) -> None:
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        '[run]\nname = "t"\noutput_dir = "runs"\n[policy]\nmax_new_tokens = 24\n'
        '[sim]\nwidth = 270\nheight = 600\nlatency = "off"\n'
        '[[hosts]]\nname = "local"\naddress = "localhost"\n[hosts.devices]\nsim = 2\n'
    )
    board = tmp_path / "runs" / "t" / "tensorboard"
    with subprocess.Popen(
        [sys.executable, "-m", "distrl", "run", str(inventory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as learner:
        deadline = time.monotonic() + 60
        while not board.exists() and time.monotonic() < deadline:  # the learner is loaded, the run is on
            time.sleep(0.1)
        assert board.exists(), "the run never started"
        _wait_for_worker(learner.pid)
        learner.send_signal(stop)
        stdout, stderr = learner.communicate(timeout=60)
    assert learner.returncode == status
    assert "error" not in stderr
    assert f"stopped ({name}); checkpoints in {tmp_path / 'runs' / 't' / 'checkpoints'}" in stdout
    assert f"python -m distrl run {inventory} --resume" in stdout
    checkpoints = list((tmp_path / "runs" / "t" / "checkpoints").glob("step-*"))
    assert checkpoints
    several = f" --checkpoints {min(len(checkpoints), 3)}" if len(checkpoints) > 1 else ""
    hint = stdout.strip().splitlines()[-1]
    assert hint == (
        f"did training help? python -m distrl eval tiny --adapter {tmp_path / 'runs' / 't'}"
        f" --against-start{several} --split test"
    )


def _wait_for_worker(parent: int) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("the run started no worker")


def test_verbose_run_shows_the_workers_log_too() -> None:
    quiet = distrl("probe", str(EXAMPLE), "--heartbeats", "1")
    assert "INFO" not in quiet.stderr
    verbose = distrl("probe", str(EXAMPLE), "--heartbeats", "1", "-v")
    assert verbose.returncode == 0
    assert "INFO distrl.worker.agent: worker local: serving 32 device(s)" in verbose.stderr


def test_a_bad_number_argument_is_named_in_words() -> None:
    result = distrl("eval", "tiny", "--episodes", "abc")
    assert result.returncode == 2
    assert "argument --episodes: expected a whole number, got 'abc'" in result.stderr
    assert "positive_int" not in result.stderr


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["eval", "tiny", "--seed", "1" + "0" * 30],
            "argument --seed: must be a seed from 0 to 9223372036854775807",
        ),
        (
            ["pretrain", "--out", "m", "--seed", "-1"],
            "argument --seed: must be a seed from 0 to 9223372036854775807",
        ),
        (["eval", ""], "argument MODEL: expected a path, got ''"),
        (["pretrain", "--out", ""], "argument --out: expected a path, got ''"),
        (["pretrain", "--out", "m", "--start", " "], "argument --start: expected a path, got ' '"),
        (["check", ""], "argument inventory: expected a path, got ''"),
        (["collect", "h.toml", "--episodes", "1", "--out", ""], "argument --out: expected a path, got ''"),
        (["save-model", "tiny", ""], "argument DIR: expected a path, got ''"),
    ],
)
def test_a_seed_out_of_range_or_an_empty_path_is_refused_by_the_parser(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, a seed past 64 bits was torch's traceback (after pretrain had begun), and "" was the folder
    run from: "'.' already exists", "'.' is not a model folder"."""
    from distrl.cli import main

    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 2
    assert f"error: {said}" in capsys.readouterr().err.splitlines()[-1]


def test_a_new_run_never_mixes_with_an_earlier_one_in_its_folder(tmp_path: Path) -> None:
    from distrl.config import load_inventory
    from distrl.fleet.run import _fresh_folder
    from distrl.learner.checkpoint import MANIFEST

    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        f'[run]\nname = "t"\noutput_dir = "{tmp_path / "runs"}"\n'
        '[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 1 }\n'
    )
    earlier = tmp_path / "runs" / "t" / "checkpoints" / "step-000000028"
    earlier.mkdir(parents=True)
    (earlier / MANIFEST).write_text("{}")
    result = distrl("run", str(inventory))
    assert_one_sentence_error(result, 2, "holds an earlier run (its latest checkpoint: step-000000028)")
    assert "--resume" in result.stderr
    assert "--new" in result.stderr
    assert earlier.is_dir()  # untouched
    assert distrl("run", str(inventory), "--resume", "--new").returncode == 2  # one or the other
    loaded = load_inventory(inventory)
    (tmp_path / "runs" / "t.1").mkdir()  # taken
    fresh = _fresh_folder(loaded, resume=False, new=True)
    assert fresh.output_dir == tmp_path / "runs" / "t.2"
    assert (earlier / MANIFEST).is_file()  # the earlier run stays where it is
    assert _fresh_folder(loaded, resume=True, new=False) == loaded


def test_init_writes_the_documented_inventory_and_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "hosts.toml"
    made = distrl("init", str(target))
    assert made.returncode == 0, made.stderr
    _is_the_example_made_by_init(target)
    assert f"python -m distrl run {target}" in made.stdout
    target.write_text("# mine\n")
    again = distrl("init", str(target))
    assert_one_sentence_error(again, 2, "exists; --force to overwrite it")
    assert target.read_text() == "# mine\n"
    assert distrl("init", str(target), "--force").returncode == 0
    _is_the_example_made_by_init(target)
    under_a_file = distrl("init", str(target / "hosts.toml"))
    assert_one_sentence_error(under_a_file, 2, f"{target / 'hosts.toml'}: Not a directory")
    folder = distrl("init", f"{tmp_path}/new/")
    assert_one_sentence_error(folder, 2, f"names a folder: name the file, e.g. {tmp_path}/new/hosts.toml")
    long = distrl("init", str(tmp_path / ("a" * 300)))
    assert_one_sentence_error(long, 2, "File name too long")
    not_utf8 = distrl("init", os.fsdecode(bytes(tmp_path) + b"/y\xff.toml"))
    assert_one_sentence_error(not_utf8, 2, "is not a UTF-8 file name: name it in UTF-8")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["hosts.toml"]  # nothing else made
    if Path("/dev/full").exists():  # a full disk is no usage error: exit 1
        assert_one_sentence_error(
            distrl("init", "/dev/full", "--force"), 1, "/dev/full: No space left on device"
        )


def _is_the_example_made_by_init(target: Path) -> None:
    """``target`` is the documented inventory, its header told to the file that init made: no copy to make."""
    made, example = target.read_text().splitlines(), EXAMPLE.read_text().splitlines()
    header = next(i for i, line in enumerate(example) if not line.startswith("#"))
    assert made[header:] == example[header:]  # every key as documented
    text = "\n".join(made[:header])
    assert "Copy this file" not in text
    assert "Made by `python -m distrl init`" in text
    assert f"`python -m distrl check {target}`" in text


def test_counts_are_in_their_number(capsys: pytest.CaptureFixture[str]) -> None:
    from distrl.cli.common import counted
    from distrl.cli.evaluate import _Progress

    assert [counted(n, "episode") for n in (0, 1, 2)] == ["0 episodes", "1 episode", "2 episodes"]
    assert [counted(n, "success", "successes") for n in (0, 1)] == ["0 successes", "1 success"]
    _Progress()("base")(2, 2, 1)
    assert "eval: 2/2 episodes, 1 success so far (base)" in capsys.readouterr().err


def test_a_worker_running_other_distrl_code_is_refused_at_the_handshake(tmp_path: Path) -> None:
    import shutil

    import distrl as package
    from distrl.build import build_id

    other = tmp_path / "other"
    shutil.copytree(
        Path(package.__file__).parent, other / "distrl", ignore=shutil.ignore_patterns("__pycache__")
    )
    with (other / "distrl" / "records" / "vocabulary.py").open("a") as edited:
        edited.write("\n# an edit the learner's copy does not have\n")
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        '[[hosts]]\nname = "stale"\naddress = "localhost"\ndevices = { sim = 1 }\n'
        f'workdir = "{tmp_path}"\nenv = {{ PYTHONPATH = "{other}" }}\n'  # python -m puts its workdir first
    )
    result = distrl("probe", str(inventory), "--heartbeats", "1")
    assert "stale            FAIL" in result.stdout
    assert f"the learner distrl {package.__version__} (build {build_id()})" in result.stdout
    assert f"host 'stale' runs distrl {package.__version__} (build " in result.stdout
    assert "install the same distrl on both" in result.stdout
    assert_one_sentence_error(result, 1, "1 of 1 host(s) failed: stale")


def test_adapter_names_an_adapter_a_checkpoint_or_a_runs_latest_checkpoint(tmp_path: Path) -> None:
    from distrl.cli.parsers import build_parser
    from distrl.learner.checkpoint import Checkpoints

    def adapter(folder: Path) -> None:
        (folder / "adapter").mkdir()
        (folder / "adapter" / "adapter_config.json").write_text("{}")

    run = tmp_path / "runs" / "distrl"
    checkpoints = Checkpoints(run / "checkpoints")
    older = checkpoints.write(50, adapter)
    newest = checkpoints.write(100, adapter)
    parser = build_parser()

    def given(text: str) -> str:
        result: str = parser.parse_args(["eval", "tiny-bc", "--adapter", text]).adapter
        assert (
            parser.parse_args(
                ["collect", "hosts.toml", "--episodes", "1", "--out", "o", "--adapter", text]
            ).adapter
            == result
        )
        return result

    assert given(str(older / "adapter")) == str(older / "adapter")  # an adapter folder as it is
    assert given(str(older)) == str(older / "adapter")  # a checkpoint's
    assert given(str(run / "checkpoints")) == str(newest / "adapter")  # the latest of a run's checkpoints
    assert given(str(run)) == str(newest / "adapter")  # a run's output folder
    # anything else goes to the loader as a full path, for it to say what is wrong
    assert given(str(run / "checkpoints" / "latest" / "adapter")) == str(run / "checkpoints/latest/adapter")
    assert given("") == ""


_SLOW_START = """
import sys

import anyio

import distrl.fleet.run
from distrl.cli import main


async def loading(*args, **kwargs):
    print("loading the learner", flush=True)
    await anyio.sleep_forever()


distrl.fleet.run._learner = loading
raise SystemExit(main(["run", sys.argv[1]]))
"""


def test_a_run_stopped_in_its_start_up_says_there_is_nothing_to_resume(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.toml"
    inventory.write_text(
        f'[run]\nname = "t"\noutput_dir = "{tmp_path / "runs"}"\n'
        '[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 1 }\n'
    )
    with subprocess.Popen(
        [sys.executable, "-c", _SLOW_START, str(inventory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as run:
        assert run.stdout is not None
        while (line := run.stdout.readline()) and line != "loading the learner\n":
            pass
        assert line, "the run never reached its start-up"
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stdout.strip().splitlines() == [
        f"stopped (Ctrl-C) before the run's first checkpoint: nothing to resume; to start it again:"
        f" python -m distrl run {inventory}"
    ]
    assert not (tmp_path / "runs" / "t" / "checkpoints").exists()


def test_the_worker_command_imports_no_sim() -> None:
    # a worker of real phones runs where the sim is not installed: its command line must not need it
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "distrl", "worker", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert "distrl.cli.common" in imported  # what the check below would miss if nothing were recorded
    assert [name for name in imported if name.startswith("distrl.sim")] == []


@pytest.mark.parametrize(
    ("extra", "toml", "said"),
    [
        (["--group-size", "3"], "", "--episodes 4 is not a multiple of --group-size 3"),
        (
            [],
            "[tasks]\ngroup_size = 3\n",
            "--episodes 4 is not a multiple of the inventory's [tasks] group_size 3",
        ),
        (["--out", "{tmp}/f"], "", "--out: cannot create {tmp}/f: {tmp}/f is a file, not a folder"),
        (
            ["--out", "{tmp}/f/episodes"],
            "",
            "--out: cannot create {tmp}/f/episodes: {tmp}/f is a file, not a folder",
        ),
    ],
    ids=["group size", "inventory's group size", "out a file", "out under a file"],
)
def test_collect_refuses_a_split_group_or_an_out_that_is_no_folder_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], toml: str, said: str
) -> None:
    from distrl.cli import main

    hosts = tmp_path / "hosts.toml"
    hosts.write_text(toml + '[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 4 }\n')
    (tmp_path / "f").write_text("keep")
    args = ["collect", str(hosts), "--policy", "expert", "--episodes", "4", "--out", str(tmp_path / "o")]
    assert main([*args, *(arg.format(tmp=tmp_path) for arg in extra)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("distrl: error: " + said.format(tmp=tmp_path)), line
    assert (tmp_path / "f").read_text() == "keep"
    assert not (tmp_path / "o").exists()
