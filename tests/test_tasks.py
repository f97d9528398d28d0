"""Task files, the ``adb`` evaluator's checks, and which evaluator scores each task (``distrl.tasks``)."""

from __future__ import annotations

import collections
import dataclasses
import json
import random
import typing
from pathlib import Path

import anyio
import pytest

from distrl.cli import main
from distrl.config import parse_inventory
from distrl.config.settings import TaskSettings
from distrl.errors import ConfigError, DistrlError, TaskFileError
from distrl.fleet.scoring import run_tasks, sim_phones_only, task_variation
from distrl.records import Check, EndReason, ParamValue, Task, Trajectory
from distrl.sim.suites import SPLITS, HeldOut, held_out, suite
from distrl.tasks import load_task_files, passes, resolve_evaluators
from distrl.tasks.checks import check_from_json
from distrl.tasks.draw import CURRICULA, LearnabilityDraw, TaskDraw, split_tasks, task_draw
from distrl.tasks.sampler import TaskSampler

AIRPLANE = {"command": "settings get global airplane_mode_on", "equals": "1"}


def _write(path: Path, *lines: object) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_a_jsonl_file_gives_its_tasks_with_every_key(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "my-tasks.jsonl",
        "# my tasks",
        {
            "goal": "Turn on airplane mode",
            "check": AIRPLANE,
            "setup": ["settings put global airplane_mode_on 0"],
        },
        "",
        {
            "goal": "Open the clock",
            "id": "clock/open",
            "split": "test",
            "max_steps": 4,
            "apps": ["com.google.android.deskclock"],
            "evaluator": "judge",
        },
    )
    first, second = load_task_files([path], max_steps=7)
    assert first == Task(
        id="my-tasks/2",
        suite="my-tasks",
        goal="Turn on airplane mode",
        max_steps=7,
        setup=("settings put global airplane_mode_on 0",),
        evaluator="adb",  # its checks choose
        checks=(Check(command="settings get global airplane_mode_on", op="equals", value="1"),),
    )
    assert (second.id, second.split, second.max_steps, second.evaluator) == ("clock/open", "test", 4, "judge")
    assert second.apps == ("com.google.android.deskclock",)


def test_a_text_file_is_one_instruction_a_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "aitw-general.txt", "Search for hotels in Washington DC", "", "Set an alarm for 6pm"
    )
    tasks = load_task_files([path], max_steps=10)
    assert [(t.id, t.goal, t.evaluator, t.split) for t in tasks] == [
        ("aitw-general/1", "Search for hotels in Washington DC", "", "train"),
        ("aitw-general/3", "Set an alarm for 6pm", "", "train"),
    ]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "is not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ({"goal": ""}, "goal must be a non-empty string"),
        ({"id": "x"}, "goal must be a non-empty string"),
        ({"goal": "g", "colour": "red"}, r"unknown key\(s\) \['colour'\]"),
        ({"goal": "g", "max_steps": 0}, "max_steps must be an integer from 1"),
        ({"goal": "g", "max_steps": True}, "max_steps must be an integer"),
        ({"goal": "g", "setup": "am start x"}, "setup must be a list of non-empty strings"),
        ({"goal": "g", "apps": ["not a package"]}, "apps must be Android package names"),
        ({"goal": "g", "evaluator": "vibes"}, "evaluator must be one of adb, judge"),
        ({"goal": "g", "evaluator": "sim"}, "scores the sim's own suites only"),
        ({"goal": "g", "evaluator": "adb"}, "evaluator adb needs a check"),
        ({"goal": "g", "check": {"command": "x"}}, r"needs exactly one of equals"),
        ({"goal": "g", "check": {"command": "x", "equals": "1", "contains": "1"}}, "exactly one of"),
        ({"goal": "g", "check": {"command": "x", "matches": "1"}}, r"unknown key\(s\) \['matches'\]"),
        ({"goal": "g", "check": {"command": "x", "regex": "("}}, "not a regular expression"),
        ({"goal": "g", "check": {"command": "x", "gt": "many"}}, "must be a number"),
        ({"goal": "g", "check": {"equals": "1"}}, r"check\[0\].command must be a non-empty string"),
        ({"goal": "g", "check": 5}, "check must be a check object or a list"),
        ({"goal": "g", "split": "a b"}, "split must be a name"),
        # what the wire would refuse, and ids that are not plain names
        ({"goal": "g" * 10_000_000}, "goal is 10000000 bytes long, over the 16384"),
        ({"goal": "g", "setup": ["true", "x" * 100_000]}, r"setup\[1\] is 100000 bytes long, over the 16384"),
        ({"goal": "g", "check": {"command": "x" * 20_000, "equals": "1"}}, r"check\[0\] is 200\d\d bytes"),
        ({"goal": "g", "setup": ["x" * 15_000] * 5}, "the task is 750\\d\\d bytes long, over the 65536"),
        ('{"goal": "\\ud800"}', "goal holds a lone surrogate"),
        ({"goal": "g", "id": "a/../../b"}, r"id must be a plain name.*not 'a/\.\./\.\./b'"),
        ({"goal": "g", "id": "/etc/passwd"}, "id must be a plain name"),
        ({"goal": "g", "id": "a//b"}, "id must be a plain name"),
        ({"goal": "g", "id": "a/./b"}, "id must be a plain name"),
        ({"goal": "g", "id": "a/"}, "id must be a plain name"),
        ({"goal": "g", "id": "x" * 129}, "id must be a plain name"),
    ],
)
def test_a_bad_line_names_the_file_and_the_line(tmp_path: Path, line: object, problem: str) -> None:
    path = _write(tmp_path / "tasks.jsonl", {"goal": "fine"}, line)
    with pytest.raises(TaskFileError, match=rf"tasks\.jsonl:2: .*{problem}") as caught:
        load_task_files([path], max_steps=10)
    assert (caught.value.file, caught.value.line) == (str(path), 2)


def test_a_task_the_reader_takes_fits_the_wire(tmp_path: Path) -> None:
    """The largest task a file may hold travels to a worker within the wire's header limit; plain ids
    with dots and slashes are still names."""
    from distrl.tasks.files import MAX_TASK_BYTES, MAX_TEXT_BYTES
    from distrl.wire import MAX_HEADER_BYTES, EpisodeRequest, encode

    big = {"goal": "é" * (MAX_TEXT_BYTES // 2), "id": "v1.2/open_app-3", "setup": ["s" * MAX_TEXT_BYTES] * 2}
    path = _write(tmp_path / "big.jsonl", big)
    (task,) = load_task_files([path], max_steps=10)
    assert task.id == "v1.2/open_app-3"
    frame = encode(EpisodeRequest(episode_id="e" * 64, device="sim-0", task=task))
    assert len(frame) < MAX_TASK_BYTES * 2 < MAX_HEADER_BYTES
    with pytest.raises(TaskFileError, match=r"big\.txt:1: the goal is over the 16384 bytes"):
        load_task_files([_write(tmp_path / "big.txt", "g" * (MAX_TEXT_BYTES + 1))], max_steps=10)


def test_the_expert_is_refused_on_file_tasks_by_check_and_collect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sim's expert plays only the sim's suites: on a task file's tasks the worker would fail every
    episode forever, so ``check`` and ``collect`` refuse, naming the file and its first task's line."""
    _write(tmp_path / "plain.jsonl", "# mine", {"goal": "Open the clock", "evaluator": "judge"})
    hosts = tmp_path / "hosts.toml"
    judge = '[judge]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    hosts.write_text(ONE_SIM_HOST + '[tasks]\nfiles = ["plain.jsonl"]\n' + judge)
    assert main(["check", str(hosts)]) == 0  # the inventory's policy, tiny, can play them
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["collect", str(hosts), "--policy", "expert", "--episodes", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "plain.jsonl:2: the expert policy" in err[0]
    assert "plays only the sim's own suites" in err[0]
    hosts.write_text('[policy]\nmodel = "expert"\n' + hosts.read_text())
    assert main(["check", str(hosts)]) == 2
    assert "plain.jsonl:2: the expert policy" in capsys.readouterr().err


def test_bad_files_are_refused_whole(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="file not found"):
        load_task_files([tmp_path / "missing.jsonl"], max_steps=10)
    with pytest.raises(TaskFileError, match=r"\.jsonl or \.txt, not '\.csv'"):
        load_task_files([_write(tmp_path / "tasks.csv", "goal")], max_steps=10)
    with pytest.raises(TaskFileError, match="has no tasks"):
        load_task_files([_write(tmp_path / "empty.txt", "# nothing", "")], max_steps=10)
    (tmp_path / "latin1.txt").write_bytes(b"ok\ncaf\xe9\n")
    with pytest.raises(TaskFileError, match=r"latin1\.txt:2: is not UTF-8"):
        load_task_files([tmp_path / "latin1.txt"], max_steps=10)
    a = _write(tmp_path / "a.jsonl", {"goal": "g", "id": "same"})
    b = _write(tmp_path / "b.jsonl", {"goal": "h"}, {"goal": "g", "id": "same"})
    with pytest.raises(TaskFileError, match=r"b\.jsonl:2: task id 'same' is used before, at .*a\.jsonl:1"):
        load_task_files([a, b], max_steps=10)


@pytest.mark.parametrize(
    ("check", "status", "output", "expected"),
    [
        ({"equals": "1"}, 0, "1\n", True),
        ({"equals": "1"}, 0, "0\n", False),
        ({"equals": "1"}, 1, "1\n", False),  # a failed command passes nothing
        ({"equals": "1"}, None, "1", True),  # shell v1: no exit status
        ({"contains": "com.android.settings"}, 0, "mCurrentFocus=Window{a com.android.settings/.Main}", True),
        ({"contains": "com.android.settings"}, 0, "mCurrentFocus=Window{a launcher}", False),
        ({"regex": r"^alarm .*7:00"}, 0, "x\nalarm 1 7:00 on\n", True),
        ({"regex": r"^alarm .*7:00"}, 0, "x alarm 1 7:00 on\n", False),
        ({"gt": 100}, 0, "255\n", True),
        ({"gt": 100}, 0, "100\n", False),
        ({"ge": 100}, 0, "100\n", True),
        ({"lt": 0.5}, 0, "0.25", True),
        ({"le": 0.5}, 0, "0.75", False),
        ({"gt": 1}, 0, "null\n", False),  # not a number
        ({"gt": 1}, 0, "nan\n", False),
    ],
)
def test_checks_compare_the_output_as_written(
    check: dict[str, object], status: int | None, output: str, expected: bool
) -> None:
    parsed = check_from_json({"command": "anything", **check}, "check[0]")
    assert passes(parsed, status, output) is expected


def _sim_task(name: str = "general/wifi/0000") -> Task:
    return Task(id=name, suite="general", goal="Turn on Wi-Fi", evaluator="sim")


def test_auto_scores_sim_tasks_by_the_sim_on_sim_phones_and_by_the_judge_elsewhere() -> None:
    plain = Task(id="f/1", suite="f", goal="Open the clock")
    checked = Task(
        id="f/2", suite="f", goal="g", evaluator="adb", checks=(Check(command="x", op="equals", value="1"),)
    )
    tasks = [_sim_task(), plain, checked]
    on_sims = resolve_evaluators(tasks, default="auto", sim_phones_only=True, judge=True)
    assert [t.evaluator for t in on_sims] == ["sim", "judge", "adb"]
    on_phones = resolve_evaluators(tasks, default="auto", sim_phones_only=False, judge=True)
    assert [t.evaluator for t in on_phones] == ["judge", "judge", "adb"]
    forced = resolve_evaluators([_sim_task(), plain], default="judge", sim_phones_only=True, judge=True)
    assert [t.evaluator for t in forced] == ["judge", "judge"]


@pytest.mark.parametrize(
    ("tasks", "default", "sim_only", "judge", "problem"),
    [
        ([_sim_task()], "auto", False, False, r"real devices do not report: configure \[judge\]"),
        ([Task(id="f/1", suite="f", goal="g")], "auto", True, False, r"no \[judge\]"),
        ([Task(id="f/1", suite="f", goal="g")], "adb", True, True, "needs the task's checks"),
        ([Task(id="f/1", suite="f", goal="g")], "sim", True, True, "scores the sim's own suites only"),
        (
            [_sim_task("a"), _sim_task("b"), _sim_task("c")],
            "auto",
            False,
            False,
            r"\(2 more task\(s\) likewise\)",
        ),
    ],
)
def test_a_task_nothing_can_score_refuses_the_run(
    tasks: list[Task], default: str, sim_only: bool, judge: bool, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        resolve_evaluators(tasks, default=default, sim_phones_only=sim_only, judge=judge, source="hosts.toml")
    assert caught.value.path == "tasks.evaluator"
    assert str(caught.value).startswith("hosts.toml: tasks.evaluator: cannot score task")


def test_sim_on_adb_devices_is_the_users_word_that_they_are_the_sim() -> None:
    resolved = resolve_evaluators([_sim_task()], default="sim", sim_phones_only=False, judge=False)
    assert resolved[0].evaluator == "sim"


ONE_SIM_HOST = '[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = { sim = 1 }\n'
PHONES = """
[[hosts]]
name = "phones"
address = "localhost"
devices = { adb_serials = ["R58M123"] }
"""


def test_run_tasks_reads_the_files_of_the_inventory_split(tmp_path: Path) -> None:
    _write(
        tmp_path / "mine.jsonl",
        {"goal": "a", "check": AIRPLANE},
        {"goal": "b", "split": "test", "check": AIRPLANE},
    )
    inventory = parse_inventory(
        PHONES + '[tasks]\nfiles = ["mine.jsonl"]\n', source=str(tmp_path / "hosts.toml")
    )
    assert [t.goal for t in run_tasks(inventory)] == ["a"]
    assert [t.goal for t in run_tasks(inventory, "test")] == ["b"]
    with pytest.raises(
        ConfigError, match=r"no task of split 'unseen' in the task files \(their splits: test, train\)"
    ):
        run_tasks(inventory, "unseen")
    sims = parse_inventory(ONE_SIM_HOST)
    assert {t.evaluator for t in run_tasks(sims, "test")} == {"sim"}
    assert {t.suite for t in run_tasks(sims, "test", "web_shopping")} == {"web_shopping"}
    assert {t.split for t in run_tasks(sims, "unseen")} == {"unseen"}
    their = r"\(their splits: test, train, unseen\)"
    with pytest.raises(ConfigError, match=rf"no task of split 'dev' in the sim's general suite {their}"):
        run_tasks(sims, "dev")


def test_the_sims_tasks_on_launched_emulators_are_not_taken_for_sim_phones() -> None:
    launched = parse_inventory('[[hosts]]\nname = "box"\naddress = "localhost"\ndevices = { avd = "P" }\n')
    assert not sim_phones_only(launched)  # real emulators: the sim's state is not there to score by
    assert sim_phones_only(parse_inventory(ONE_SIM_HOST))
    assert not sim_phones_only(parse_inventory(PHONES))


def test_check_and_run_refuse_unscorable_tasks_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(PHONES)
    for command in ("check", "run"):
        assert main([command, str(hosts)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1
        assert "cannot score task 'general/" in err[0]
        assert "configure [judge]" in err[0]
    assert not (tmp_path / "runs").exists()  # refused before anything was written


def test_check_names_a_bad_task_line_and_a_missing_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path / "mine.jsonl", {"goal": "a"}, {"goal": "b", "max_steps": -1})
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(PHONES + '[tasks]\nfiles = ["mine.jsonl"]\n')
    assert main(["check", str(hosts)]) == 2
    assert "mine.jsonl:2: max_steps must be an integer from 1 to 1000" in capsys.readouterr().err
    _write(tmp_path / "mine.jsonl", {"goal": "a"})
    hosts.write_text(
        PHONES
        + '[tasks]\nfiles = ["mine.jsonl"]\n'
        + '[judge]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "DISTRL_TEST_NO_KEY"\n'
    )
    monkeypatch.delenv("DISTRL_TEST_NO_KEY", raising=False)
    assert main(["check", str(hosts)]) == 2
    assert (
        "judge.api_key_env: the environment variable DISTRL_TEST_NO_KEY is not set" in capsys.readouterr().err
    )
    monkeypatch.setenv("DISTRL_TEST_NO_KEY", "sk-secret-value")
    assert main(["check", str(hosts)]) == 0
    out = capsys.readouterr()
    assert "tasks: 1 of split train from 1 task file(s); scored by judge (1)" in out.out
    assert "sk-secret-value" not in out.out + out.err


@pytest.mark.parametrize(
    ("judge", "path", "problem"),
    [
        ('api_key = "sk-abc"', "judge.api_key", "never goes in the inventory"),
        ('base_url = "ftp://x"\nmodel = "m"', "judge.base_url", "not an http:// or https:// URL"),
        ('base_url = "http://x/v1"', "judge.model", "is needed with judge.base_url"),
        ('model = "m"', "judge.base_url", "is needed with judge.model"),
        (
            'base_url = "http://x/v1"\nmodel = "m"\nmax_concurrency = 0',
            "judge.max_concurrency",
            "greater than 0",
        ),
        ('base_url = "http://x/v1"\nmodel = "m"\nscreens = 0', "judge.screens", "at least 1"),
        (
            'base_url = "http://x/v1"\nmodel = "m"\napi_key_env = "my key"',
            "judge.api_key_env",
            "variable name",
        ),
        ('base_url = "http://x/v1"\nmodel = "m"\ntimeout = 3', "judge.timeout", "did you mean 'timeout_s'"),
    ],
)
def test_bad_judge_settings_name_their_toml_path(judge: str, path: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        parse_inventory(PHONES + "[judge]\n" + judge + "\n", source="hosts.toml")
    assert caught.value.path == path


def test_check_values_are_read_as_their_op_wants() -> None:
    numeric = check_from_json({"command": "settings get system screen_brightness", "gt": "128"}, "check[0]")
    assert numeric == Check(command="settings get system screen_brightness", op="gt", value="128.0")
    assert check_from_json({"command": "x", "equals": 1}, "c").value == "1"  # TOML-ish numbers as text
    assert check_from_json({"command": "x", "equals": ""}, "c").value == ""  # an empty answer is a fine one
    for bad, problem in [
        ({"command": "x", "gt": True}, "must be a number"),
        ({"command": "x", "gt": [1]}, "must be a number"),
        ({"command": "x", "ge": "inf"}, "must be a finite number"),
        ({"command": "x", "equals": True}, "must be a string"),
        ({"command": "x", "equals": [1]}, "must be a string"),
        ({"command": "x", "contains": ""}, "contains must not be empty"),
        ({"command": " ", "equals": "1"}, "command must be a non-empty string"),
        ("settings get", "must be an object"),
    ]:
        with pytest.raises(ValueError, match=problem):
            check_from_json(bad, "c")


# ---------------------------------------------------------------------- the sim suites' three splits
@pytest.mark.parametrize("name", ["general", "web_shopping"])
def test_sim_suites_have_three_splits_and_test_is_the_train_templates_held_out(name: str) -> None:
    found = suite(name)
    every = found.tasks()
    by_split = {split: found.tasks(split) for split in SPLITS}
    assert sum(len(chosen) for chosen in by_split.values()) == len(every)
    assert len(by_split["test"]) >= 128  # the paper evaluates 128 test tasks per suite
    assert len(by_split["train"]) >= 200
    assert len(by_split["unseen"]) >= 100
    assert found.tasks("dev") == []
    assert len({task.id for task in every}) == len(every)
    templates = {template.name: template for template in found.templates}
    # test tasks come from train templates, unseen tasks from held-out templates
    assert {templates[str(t.params["template"])].split for t in by_split["test"]} == {"train"}
    assert {templates[str(t.params["template"])].split for t in by_split["unseen"]} == {"unseen"}
    # a test goal is never a train goal
    assert not {t.goal for t in by_split["test"]} & {t.goal for t in by_split["train"]}


@pytest.mark.parametrize("name", ["general", "web_shopping"])
def test_no_held_out_value_or_wording_is_in_a_train_task_of_its_template(name: str) -> None:
    found = suite(name)
    held_somewhere = 0
    for template in found.templates:
        if template.split != "train":
            continue
        rule = template.held_out
        mine = [t for t in found.tasks() if t.params["template"] == template.name]
        train = [t for t in mine if t.split == "train"]
        test = [t for t in mine if t.split == "test"]
        assert train, template.name  # every train template keeps train tasks
        train_values = {tuple(t.params[k] for k in rule.keys) for t in train}
        test_values = {tuple(t.params[k] for k in rule.keys) for t in test}
        if rule.keys:
            assert not train_values & rule.values, template.name
            assert rule.values <= test_values, f"{template.name}: a held-out value no task has"
            for value in rule.values:  # not even inside another train goal of the template
                words = " ".join(str(v) for v in value).lower()
                if not words.isdigit():
                    assert all(words not in t.goal.lower() for t in train), (template.name, value)
        train_phrases = {t.params.get("phrase") for t in train}
        assert not train_phrases & rule.phrases, template.name
        assert all(rule.holds(_params(t)) for t in test), template.name
        held_somewhere += bool(test)
    assert held_somewhere >= 3


def _params(task: Task) -> dict[str, ParamValue]:
    return {k: v for k, v in task.params.items() if k != "template"}


def test_the_held_out_rule_reads_values_and_wordings() -> None:
    rule = held_out(("hour", "minute"), [(7, 50)], phrases=[5])
    assert rule.holds({"hour": 7, "minute": 50, "phrase": 0})
    assert rule.holds({"hour": 6, "minute": 0, "phrase": 5})
    assert not rule.holds({"hour": 7, "minute": 5, "phrase": 0})
    assert not HeldOut().holds({"phrase": 5})
    assert held_out("city", ["Paris"]).values == frozenset({("Paris",)})


def test_the_task_draw_plays_every_task_once_before_any_twice() -> None:
    pool = split_tasks("general", "test")
    drawn = TaskDraw(pool, random.Random(3)).take(len(pool) + 5)
    first = drawn[: len(pool)]
    assert sorted(task.id for task in first) == sorted(task.id for task in pool)
    assert first != pool  # shuffled
    assert len({task.id for task in drawn[len(pool) :]}) == 5  # the second cycle begins afresh
    assert drawn == TaskDraw(pool, random.Random(3)).take(len(pool) + 5)  # seeded
    assert drawn != TaskDraw(pool, random.Random(4)).take(len(pool) + 5)
    with pytest.raises(ValueError, match="no tasks to draw"):
        TaskDraw([], random.Random(0))
    with pytest.raises(ValueError, match="≥ 0"):
        TaskDraw(pool, random.Random(0)).take(-1)


def test_split_tasks_reads_a_registered_source_or_a_task_file(tmp_path: Path) -> None:
    assert [task.id for task in split_tasks("general", "train")] == [
        task.id for task in suite("general").tasks("train")
    ]
    path = _write(tmp_path / "mine.txt", "Open the clock", "Turn on wifi")
    assert [task.goal for task in split_tasks(str(path), "train")] == ["Open the clock", "Turn on wifi"]
    with pytest.raises(ValueError, match="'general' has no 'nonsense' tasks"):
        split_tasks("general", "nonsense")
    with pytest.raises(ValueError, match="no task source 'nowhere'"):
        split_tasks("nowhere", "train")


def _played(task: Task, success: bool | None, end: EndReason = EndReason.COMPLETE) -> Trajectory:
    return Trajectory(
        id=f"{task.id}/{success}",
        task=task,
        host="h",
        device="d",
        steps=(),
        final_observation=None,
        end_reason=end,
        success=success,
    )


def test_the_learnability_curriculum_plays_every_task_once_then_favours_those_solved_now_and_then() -> None:
    pool = split_tasks("general", "test")[:6]
    sometimes, always, never, *unplayed = pool
    draw = task_draw(pool, random.Random(5), "learnability")
    assert isinstance(draw, LearnabilityDraw)
    first = draw.take(len(pool))
    assert sorted(task.id for task in first) == sorted(task.id for task in pool)  # a sweep first
    for k in range(8):
        draw.record(_played(sometimes, k % 2 == 0))
        draw.record(_played(always, True))
        draw.record(_played(never, False))
    assert draw.learnability(sometimes) == pytest.approx(0.25)  # p̂ = 4.5 / 9
    assert draw.learnability(always) == pytest.approx(draw.learnability(never))
    assert draw.learnability(never) == pytest.approx(1 / 18 * 17 / 18)  # p̂ = 0.5 / 9
    assert draw.learnability(unplayed[0]) == 0.25  # nothing known yet: as uncertain as can be
    counts = collections.Counter(task.id for task in draw.take(3000))
    # drawn in proportion to p̂(1 − p̂): 0.25 for the half-solved and the three unplayed, 0.052 for the others
    share = {task.id: counts[task.id] / 3000 for task in pool}
    assert 0.21 < share[sometimes.id] < 0.27
    assert 0.03 < share[always.id] < 0.07
    assert 0.03 < share[never.id] < 0.07
    assert all(0.21 < share[task.id] < 0.27 for task in unplayed)
    # the window forgets: 8 successes in a row and the task is as sure as the always-solved one
    for _ in range(8):
        draw.record(_played(sometimes, True))
    assert draw.learnability(sometimes) == pytest.approx(draw.learnability(always))


def test_the_curriculum_counts_only_scored_episodes_played_out() -> None:
    pool = split_tasks("general", "test")[:2]
    draw = LearnabilityDraw(pool, random.Random(0), window=4)
    draw.record(_played(pool[0], None))  # no score
    draw.record(_played(pool[0], False, EndReason.DEVICE_ERROR))  # cut short by its device
    draw.record(_played(pool[0], False, EndReason.CANCELLED))
    assert draw.learnability(pool[0]) == 0.25
    draw.record(_played(pool[0], False, EndReason.STEP_LIMIT))  # a failure of the policy's own
    assert draw.learnability(pool[0]) < 0.25
    uniform = task_draw(pool, random.Random(0))
    uniform.record(_played(pool[0], True))  # the uniform draw ignores outcomes: its order is the seed's
    assert uniform.take(6) == TaskDraw(pool, random.Random(0)).take(6)
    with pytest.raises(ValueError, match="unknown curriculum 'hardest'; choose one of uniform, learnability"):
        task_draw(pool, random.Random(0), "hardest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="window must be ≥ 1"):
        LearnabilityDraw(pool, random.Random(0), window=0)
    # the inventory's choices are the draw's
    field = TaskSettings.__dataclass_fields__["curriculum"]
    assert typing.get_args(typing.get_type_hints(TaskSettings)["curriculum"]) == CURRICULA
    assert field.default == "uniform"


def test_a_resumed_curriculum_draws_on_from_what_it_had_learnt() -> None:
    """The curriculum's memory (what a checkpoint keeps as JSON) gives a new draw the same sweep and the
    same learnability of every task; another curriculum's, another pool's tasks or garbage: nothing."""
    pool = split_tasks("general", "test")[:4]
    learnt = LearnabilityDraw(pool, random.Random(1))
    learnt.take(3)
    for k in range(5):
        learnt.record(_played(pool[0], k < 4))
        learnt.record(_played(pool[1], False))
    resumed = LearnabilityDraw(pool, random.Random(2))
    resumed.recall(json.loads(json.dumps(learnt.memory())))
    assert resumed.memory() == learnt.memory()
    assert [resumed.learnability(task) for task in pool] == [learnt.learnability(task) for task in pool]
    assert resumed.learnability(pool[0]) != resumed.learnability(pool[2])  # it knows what it learnt
    resumed.take(1)  # the sweep's last task; then it draws by the outcomes
    assert resumed.memory()["swept"] == len(pool)
    fresh = LearnabilityDraw(pool, random.Random(0))
    fresh.recall(task_draw(pool, random.Random(0)).memory())  # a uniform run's: nothing
    fresh.recall(
        {"curriculum": "learnability", "swept": "3", "outcomes": {"other/0001": [True], pool[3].id: [1, "x"]}}
    )
    assert fresh.memory() == LearnabilityDraw(pool, random.Random(0)).memory()


@pytest.mark.anyio
async def test_the_sampler_keeps_its_curriculum_in_a_file() -> None:
    pool = split_tasks("general", "test")[:4]

    def sampler() -> TaskSampler:
        return TaskSampler(
            pool, random.Random(0), run_name="r", limit=None, stop=anyio.Event(), curriculum="learnability"
        )

    played = sampler()
    for task in pool[:3]:
        played.record(_played(task, task is pool[0]))
    resumed = sampler()
    resumed.resume_curriculum(played.curriculum_file())
    assert resumed.curriculum_file() == played.curriculum_file()
    assert json.loads(resumed.curriculum_file())["outcomes"] == {
        pool[0].id: [True],
        pool[1].id: [False],
        pool[2].id: [False],
    }
    with pytest.raises(DistrlError, match="not JSON"):
        resumed.resume_curriculum(b"{truncated")
    with pytest.raises(DistrlError, match="not a JSON object"):
        resumed.resume_curriculum(b"[1, 2]")


def test_a_greedy_share_is_spread_evenly_over_the_episodes() -> None:
    from distrl.tasks.draw import greedy_turn

    turns = [n for n in range(1, 25) if greedy_turn(n, 0.25)]
    assert turns == [4, 8, 12, 16, 20, 24]
    assert not any(greedy_turn(n, 0.0) for n in range(1, 100))
    assert all(greedy_turn(n, 1.0) for n in range(1, 100))
    # any stretch of episodes holds its share, to within one episode
    thirds = [greedy_turn(n, 1 / 3) for n in range(1, 301)]
    assert all(abs(sum(thirds[i : i + 30]) - 10) <= 1 for i in range(len(thirds) - 30))
    for episode, share in ((0, 0.5), (1, -0.1), (1, 1.5)):
        with pytest.raises(ValueError, match="episode must be"):
            greedy_turn(episode, share)


@pytest.mark.anyio
async def test_randomise_plays_drawn_tasks_in_the_train_tasks_place() -> None:
    """``[tasks] randomise``: that share of the train tasks handed out is a drawn task of the same template
    (fresh values, never held out); the draw's own order is the one without it; a drawn task's outcome is
    the curriculum's outcome of the task it stood for; test tasks are never swapped."""
    general = suite("general")
    # (the run's evaluator for the kind, here a judge's, goes with the drawn task)
    train = [dataclasses.replace(task, evaluator="judge") for task in split_tasks("general", "train")]
    drawing_templates = {t.name for t in general.templates if t.draw is not None and t.split == "train"}

    def sampler(pool: list[Task], share: float) -> TaskSampler:
        return TaskSampler(
            pool,
            random.Random(5),
            run_name="r",
            limit=None,
            stop=anyio.Event(),
            curriculum="learnability",
            randomise=share,
            drawing=general if share else None,
        )

    async def take(from_: TaskSampler) -> tuple[str, Task]:
        taken = await from_.take()
        assert taken is not None
        return taken.episode_id, taken.task

    plain, varied = sampler(train, 0.0), sampler(train, 0.5)
    pairs = [((await take(plain)), (await take(varied))) for _ in range(400)]
    swapped = 0
    for (_, task), (_, played) in pairs:
        assert played.params["template"] == task.params["template"]
        if played.id != task.id:
            swapped += 1
            assert "/draw-" in played.id, played.id
            assert played.split == "train"
            assert played.evaluator == "judge"
        else:
            assert played == task
    drawable = sum(task.params["template"] in drawing_templates for (_, task), _ in pairs)
    assert 0.4 * drawable < swapped < 0.6 * drawable
    for _, (_, played) in pairs[:20]:
        varied.record(_played(played, True))
    outcomes = json.loads(varied.curriculum_file())["outcomes"]
    assert set(outcomes) == {task.id for (_, task), _ in pairs[:20]}
    assert sum(map(len, outcomes.values())) == 20

    held = split_tasks("general", "test")
    never = sampler(held, 1.0)
    assert {(await take(never))[1].id for _ in range(len(held))} == {task.id for task in held}
    with pytest.raises(ValueError, match="randomise must be between 0 and 1"):
        sampler(train, 1.5)


def test_task_files_cannot_be_randomised(tmp_path: Path) -> None:
    _write(tmp_path / "mine.jsonl", {"goal": "a", "check": AIRPLANE})
    inventory = parse_inventory(
        PHONES + '[tasks]\nfiles = ["mine.jsonl"]\nrandomise = 0.5\n', source=str(tmp_path / "hosts.toml")
    )
    with pytest.raises(ConfigError, match=r"tasks\.randomise: task files cannot draw fresh tasks"):
        task_variation(inventory)
    assert task_variation(dataclasses.replace(inventory, tasks=TaskSettings(randomise=0.0))) is None
    sims = parse_inventory(ONE_SIM_HOST + "[tasks]\nrandomise = 0.25\n")
    drawing = task_variation(sims)
    assert drawing is suite("general")
