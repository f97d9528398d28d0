"""Episodes on disk (``distrl.episodes``): written as documented, read back whole, sampled and bounded;
written by ``collect`` and by runs."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from PIL import Image

from distrl.episodes import FORMAT_VERSION, EpisodeWriter, read_episode, read_episodes
from distrl.records import (
    Action,
    ActionType,
    Check,
    EndReason,
    InvalidAction,
    Observation,
    Step,
    Task,
    Trajectory,
)
from distrl.records.forms import Outbox, trajectory_to_json

ROOT = Path(__file__).resolve().parent.parent


def _screen(colour: tuple[int, int, int], image_format: str, at: float = 0.0) -> Observation:
    out = io.BytesIO()
    Image.new("RGB", (27, 60), colour).save(out, "PNG" if image_format == "png" else "JPEG")
    return Observation(
        screenshot=out.getvalue(), width=27, height=60, image_format=image_format, timestamp_s=at
    )


def _trajectory(name: str, image_format: str = "png", *, success: bool | None = True) -> Trajectory:
    task = Task(
        id=f"t/{name}",
        suite="t",
        goal="Turn on Wi-Fi",
        params={"band": "5 GHz", "tries": 2},
        setup=("settings put global wifi_on 0",),
        evaluator="adb",
        checks=(Check(command="settings get global wifi_on", op="equals", value="1"),),
    )
    steps = (
        Step(
            index=0,
            observation=_screen((200, 10, 10), image_format, 1_700_000_000.5),
            output="Action Decision: tap",
            action=Action(type=ActionType.DUAL_POINT, touch=(0.25, 0.5), lift=(0.25, 0.5)),
            policy_version=3,
            behaviour_logprob=-1.5,
            duration_s=0.2,
        ),
        Step(
            index=1,
            observation=_screen((10, 200, 10), image_format, 1_700_000_001.5),
            output="gibberish",
            action=InvalidAction(text="gibberish", reason="no action type"),
            policy_version=4,
            behaviour_logprob=-7.25,
            reward=1.0,
            duration_s=0.3,
        ),
    )
    return Trajectory(
        id=f"run/abc/{name}",
        task=task,
        host="h",
        device="sim-0",
        steps=steps,
        final_observation=_screen((10, 10, 200), image_format, 1_700_000_002.5),
        end_reason=EndReason.STEP_LIMIT,
        success=success,
        verdict="the final screen shows Wi-Fi on",
        started_at_s=1_700_000_000.0,
        duration_s=2.5,
        temperature=0.7,
        group="run/abc/g1",
    )


@pytest.mark.parametrize("image_format", ["png", "jpeg"])
def test_an_episode_reads_back_as_it_was_written(tmp_path: Path, image_format: str) -> None:
    written = _trajectory("1", image_format)
    folder = EpisodeWriter(tmp_path).write(written)
    assert folder == tmp_path / "run~abc~1"
    assert sorted(p.name for p in folder.iterdir()) == ["000.jpg", "001.jpg", "episode.json", "final.jpg"]
    document = json.loads((folder / "episode.json").read_text())
    assert (document["format"], document["screens"]) == (FORMAT_VERSION, ["000.jpg", "001.jpg", "final.jpg"])
    read = read_episode(folder)
    for step in read.steps:  # every screen is a JPEG of the step's picture
        assert step.observation.image_format == "jpeg"
        with Image.open(io.BytesIO(step.observation.screenshot)) as image:
            assert image.format == "JPEG"
            assert image.size == (27, 60)
    if image_format == "jpeg":  # JPEG screens are kept byte for byte: the episode is the trajectory, whole
        assert read == written
    same_but_screens = [dataclasses.replace(s, observation=written.steps[0].observation) for s in read.steps]
    assert same_but_screens == [
        dataclasses.replace(s, observation=written.steps[0].observation) for s in written.steps
    ]
    assert dataclasses.replace(read, steps=(), final_observation=None) == dataclasses.replace(
        written, steps=(), final_observation=None
    )  # the task (params and checks too), outcome, times, temperature and group
    assert read.final_observation is not None
    assert (read.final_observation.width, read.final_observation.timestamp_s) == (27, 1_700_000_002.5)
    unscored = read_episode(EpisodeWriter(tmp_path / "u").write(_trajectory("2", success=None)))  # type: ignore[arg-type]
    assert unscored.success is None


def test_the_store_writes_and_reads_the_records_json_form(tmp_path: Path) -> None:
    """episode.json holds the trajectory's JSON form of ``distrl.records.forms``, the wire's and the
    replay's, with the screens' files for its attachments: a document made by the forms alone reads
    back, and what the store writes is what the forms make."""
    trajectory = _trajectory("1", "jpeg")
    outbox = Outbox()
    form = trajectory_to_json(trajectory, "trajectory", outbox)
    written = EpisodeWriter(tmp_path / "written").write(trajectory)
    assert written is not None
    document = json.loads((written / "episode.json").read_text())
    assert document["trajectory"] == form
    assert [(written / name).read_bytes() for name in document["screens"]] == outbox.blobs

    made = tmp_path / "made" / "by~the~forms"  # by hand: the forms' document and its screens' files
    made.mkdir(parents=True)
    names = [f"screen-{k}.jpeg" for k in range(len(outbox.blobs))]
    for name, blob in zip(names, outbox.blobs, strict=True):
        (made / name).write_bytes(blob)
    (made / "episode.json").write_text(json.dumps({"format": 2, "trajectory": form, "screens": names}))
    assert read_episode(made) == trajectory
    assert [t.id for t in read_episodes(made.parent)] == ["run/abc/1"]


def test_a_value_with_no_json_form_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    broken = dataclasses.replace(_trajectory("1"), duration_s=float("nan"))
    with pytest.raises(ValueError, match=r"trajectory\.duration_s is nan"):
        EpisodeWriter(tmp_path).write(broken)
    assert not any(tmp_path.iterdir())


def test_a_budget_or_quality_that_is_none_is_refused_when_the_writer_is_made(tmp_path: Path) -> None:
    """A budget of -1 skipped every episode silently; a quality as text failed in Pillow, at the write."""
    cases: list[tuple[dict[str, Any], str]] = [
        ({"budget_bytes": -1}, "budget_bytes must be a whole number of bytes ≥ 0"),
        ({"quality": "hi"}, "quality must be a JPEG quality from 1 to 95, not 'hi'"),
        ({"quality": 100}, "quality must be a JPEG quality from 1 to 95, not 100"),
    ]
    for options, said in cases:
        with pytest.raises(ValueError, match=re.escape(said)):
            EpisodeWriter(tmp_path, **options)
    five = cast(int, 5e9)  # as a budget is written
    assert EpisodeWriter(tmp_path, budget_bytes=five).budget_bytes == 5_000_000_000


def test_a_share_of_episodes_up_to_a_budget(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    half = EpisodeWriter(tmp_path / "half", share=0.5)
    for i in range(40):
        half.write(_trajectory(str(i)))
    assert 10 <= half.written <= 30
    assert half.written + half.skipped == 40
    again = EpisodeWriter(tmp_path / "again", share=0.5)
    assert [again.wanted(f"run/abc/{i}") for i in range(40)] == [
        half.wanted(f"run/abc/{i}") for i in range(40)
    ]
    one = EpisodeWriter(tmp_path / "one").write(_trajectory("x"))
    assert one is not None
    size = sum(p.stat().st_size for p in one.iterdir())
    bounded = EpisodeWriter(tmp_path / "bounded", budget_bytes=int(2.5 * size))
    with caplog.at_level(logging.WARNING):
        for i in range(5):
            bounded.write(_trajectory(str(i)))
    assert bounded.written == 3  # the third goes past the budget, then no more
    assert len(list(read_episodes(tmp_path / "bounded"))) == 3
    assert "no more episodes are written" in caplog.text


def test_half_written_and_foreign_folders_are_passed_over_or_named(tmp_path: Path) -> None:
    writer = EpisodeWriter(tmp_path)
    writer.write(_trajectory("1"))
    (tmp_path / "run~abc~2.partial").mkdir()  # a write cut short
    # cut short after its episode.json, before the rename: the episode is written again under its name
    shutil.copytree(tmp_path / "run~abc~1", tmp_path / "run~abc~1.partial")
    assert [t.id for t in read_episodes(tmp_path)] == ["run/abc/1"]
    (tmp_path / "run~abc~1" / "episode.json").write_text('{"format": "2"}')
    said = r"run~abc~1/episode\.json: format '2', not an episode format \(1 to 2\)"
    with pytest.raises(ValueError, match=said):
        list(read_episodes(tmp_path))


@pytest.mark.parametrize("episode_id", ["", ".", "..", "run/abc/9.partial", "a\0b"])
def test_an_id_that_names_no_folder_of_its_own_is_refused_and_nothing_is_removed(
    tmp_path: Path, episode_id: str
) -> None:
    """ "" and "." named the episodes' folder itself, and ".." its parent: writing removed them first."""
    (tmp_path / "beside.txt").write_text("kept")
    writer = EpisodeWriter(tmp_path / "episodes")
    for number in "123":
        writer.write(_trajectory(number))
    with pytest.raises(
        ValueError, match=f"trajectory.id {re.escape(repr(episode_id))} names no episode folder"
    ):
        writer.write(dataclasses.replace(_trajectory("4"), id=episode_id))
    assert [t.id for t in read_episodes(tmp_path / "episodes")] == ["run/abc/1", "run/abc/2", "run/abc/3"]
    assert (tmp_path / "beside.txt").read_text() == "kept"
    assert writer.written == 3


def test_an_episode_of_a_newer_format_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "episodes"
    episode = EpisodeWriter(folder).write(_trajectory("1"))
    assert episode is not None
    _edit_json(episode / "episode.json", lambda document: {**document, "format": FORMAT_VERSION + 1})
    said = (
        rf"run~abc~1/episode\.json: format {FORMAT_VERSION + 1}, newer than this distrl's {FORMAT_VERSION}: "
        "read it with the distrl that wrote it, or a newer one$"
    )
    with pytest.raises(ValueError, match=said) as caught:
        read_episode(episode)
    assert "\n" not in str(caught.value)
    done = subprocess.run(
        [sys.executable, "-m", "distrl", "view", "--strict", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert re.search(said, line), line


V1_HEAD: dict[str, Any] = {
    "format": 1,
    "id": "run/abc/old",
    "task": {
        "id": "t/old",
        "suite": "t",
        "goal": "Turn on Wi-Fi",
        "split": "test",
        "max_steps": 10,
        "setup": ["settings put global wifi_on 0"],
        "apps": [],
        "evaluator": "sim",
    },
    "host": "h",
    "device": "sim-0",
    "end_reason": "step_limit",
    "success": False,
    "verdict": "",
    "started_at_s": 1_700_000_000.0,
    "duration_s": 2.5,
    "steps": 2,
    "final_screen": "final.jpg",
    "final_size": [27, 60],
}
"""A format 1 episode.json as the first writer of format 1 wrote it (no temperature, no group)."""
V1_STEPS: list[dict[str, Any]] = [
    {
        "index": 0,
        "goal": "Turn on Wi-Fi",
        "output": "Action Decision: tap",
        "action": {"type": "DUAL_POINT", "touch": [0.25, 0.5], "lift": [0.25, 0.5], "text": ""},
        "logprob": -1.5,
        "policy_version": 3,
        "reward": 0.0,
        "duration_s": 0.2,
        "screen": "000.jpg",
        "width": 27,
        "height": 60,
    },
    {
        "index": 1,
        "goal": "Turn on Wi-Fi",
        "output": "gibberish",
        "action": {"invalid": "no action type"},
        "logprob": -7.25,
        "policy_version": 4,
        "reward": 1.0,
        "duration_s": 0.3,
        "screen": "001.jpg",
        "width": 27,
        "height": 60,
    },
]


def _format_1(folder: Path) -> Path:
    """A format 1 episode folder, written as format 1's writer wrote them."""
    folder.mkdir(parents=True)
    for name, colour in (("000.jpg", (200, 10, 10)), ("001.jpg", (10, 200, 10)), ("final.jpg", (0, 0, 200))):
        Image.new("RGB", (27, 60), colour).save(folder / name, "JPEG")
    (folder / "episode.json").write_text(json.dumps(V1_HEAD, indent=1))
    (folder / "steps.jsonl").write_text("".join(json.dumps(line) + "\n" for line in V1_STEPS))
    return folder


def test_a_format_1_folder_is_read_converted_and_left_as_it_was(tmp_path: Path) -> None:
    from distrl.episodes.export import write_metadata
    from distrl.episodes.view import write_viewer

    folder = tmp_path / "episodes"
    old = _format_1(folder / "run~abc~old")
    before = {path.name: path.read_bytes() for path in old.iterdir()}
    screens = [(old / name).read_bytes() for name in ("000.jpg", "001.jpg", "final.jpg")]

    def seen(index: int) -> Observation:
        return Observation(screenshot=screens[index], width=27, height=60, image_format="jpeg")

    expected = Trajectory(
        id="run/abc/old",
        task=Task(
            id="t/old",
            suite="t",
            goal="Turn on Wi-Fi",
            split="test",
            setup=("settings put global wifi_on 0",),
            evaluator="sim",
        ),
        host="h",
        device="sim-0",
        steps=(
            Step(
                index=0,
                observation=seen(0),
                output="Action Decision: tap",
                action=Action(type=ActionType.DUAL_POINT, touch=(0.25, 0.5), lift=(0.25, 0.5)),
                policy_version=3,
                behaviour_logprob=-1.5,
                duration_s=0.2,
            ),
            Step(
                index=1,
                observation=seen(1),
                output="gibberish",
                action=InvalidAction(text="gibberish", reason="no action type"),
                policy_version=4,
                behaviour_logprob=-7.25,
                reward=1.0,
                duration_s=0.3,
            ),
        ),
        final_observation=seen(2),
        end_reason=EndReason.STEP_LIMIT,
        success=False,
        started_at_s=1_700_000_000.0,
        duration_s=2.5,
    )
    assert read_episode(old) == expected  # temperature None and group "": format 1 did not say
    _edit_json(old / "episode.json", lambda head: {**head, "temperature": 0.7, "group": "g"})
    assert (read_episode(old).temperature, read_episode(old).group) == (0.7, "g")
    (old / "episode.json").write_bytes(before["episode.json"])

    EpisodeWriter(folder).write(_trajectory("new"))  # the formats side by side: both read, shown, exported
    assert [t.id for t in read_episodes(folder)] == ["run/abc/new", "run/abc/old"]
    page = write_viewer(folder).read_text()
    assert "<h1>2 episodes, 1 success</h1>" in page
    assert "src='run~abc~old/001.jpg'" in page
    assert "src='run~abc~old/final.jpg'" in page
    _, rows = write_metadata(folder)
    assert rows == 4
    lines = [json.loads(line) for line in (folder / "metadata.jsonl").read_text().splitlines()]
    assert [line["file_name"] for line in lines[2:]] == ["run~abc~old/000.jpg", "run~abc~old/001.jpg"]
    invalid = {"kind": "invalid", "text": "gibberish", "reason": "no action type"}
    assert json.loads(lines[3]["action"]) == invalid
    assert {path.name: path.read_bytes() for path in old.iterdir()} == before  # nothing written back


V1_CORRUPTIONS: list[tuple[str, Callable[[Path], object], str]] = [
    (
        "a line nested too deeply",
        lambda f: (f / "steps.jsonl").write_text("[" * 200_000 + "\n"),
        r"steps\.jsonl:1: is not an episode's JSON \(nested too deeply\)",
    ),
    (
        "an unknown action",
        lambda f: _edit_steps(
            f / "steps.jsonl", lambda lines: lines[0].__setitem__("action", {"type": "FLY"})
        ),
        r"steps\.jsonl:1: action\.type 'FLY' is no action type",
    ),
    (
        "a step short",
        lambda f: _edit_steps(f / "steps.jsonl", lambda lines: lines.pop()),
        r"steps\.jsonl: holds 1 step\(s\), but episode\.json says 2",
    ),
    ("no steps file", lambda f: (f / "steps.jsonl").unlink(), r"steps\.jsonl: cannot be read"),
    (
        "a reward as text",
        lambda f: _edit_steps(f / "steps.jsonl", lambda lines: lines[1].__setitem__("reward", "1")),
        r"steps\.jsonl:2: reward must be a number, not a string",
    ),
    (
        "steps out of order",
        lambda f: _edit_steps(f / "steps.jsonl", lambda lines: lines[1].__setitem__("index", 5)),
        r"steps\.jsonl:2: index is 5, not 1 \(the step's place\)",
    ),
    (
        "an escaping screen",
        lambda f: _edit_steps(f / "steps.jsonl", lambda lines: lines[0].__setitem__("screen", "../x.jpg")),
        r" \(format 1\): screens\[0\] names '\.\./x\.jpg', not a file of the episode's folder",
    ),
    (
        "a tap off the screen",
        lambda f: _edit_steps(
            f / "steps.jsonl", lambda lines: lines[0]["action"].__setitem__("touch", [1.5, 0.5])
        ),
        r" \(format 1\): trajectory\.steps\[0\]\.action is not a valid action: touch point",
    ),
    # unknown fields were read past: format 1's own writer never wrote them
    (
        "an unknown field in a step",
        lambda f: _edit_steps(f / "steps.jsonl", lambda lines: lines[1].__setitem__("rewrd", 1.0)),
        r"steps\.jsonl:2: has unknown field\(s\) \['rewrd'\]",
    ),
    (
        "an unknown field in an action",
        lambda f: _edit_steps(f / "steps.jsonl", lambda lines: lines[0]["action"].__setitem__("speed", 2)),
        r"steps\.jsonl:1: action has unknown field\(s\) \['speed'\]",
    ),
    (
        "an unknown field in the task",
        lambda f: _edit_json(f / "episode.json", lambda head: {**head, "task": {**head["task"], "level": 3}}),
        r"episode\.json: task has unknown field\(s\) \['level'\]",
    ),
]


@pytest.mark.parametrize(
    ("corrupt", "problem"), [c[1:] for c in V1_CORRUPTIONS], ids=[c[0] for c in V1_CORRUPTIONS]
)
def test_a_malformed_format_1_episode_is_refused_with_its_file(
    tmp_path: Path, corrupt: Callable[[Path], object], problem: str
) -> None:
    old = _format_1(tmp_path / "run~abc~old")
    corrupt(old)
    with pytest.raises(ValueError, match=rf"run~abc~old/?{problem}") as caught:
        read_episode(old)
    assert "\n" not in str(caught.value)


def _edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def _edit_steps(path: Path, change: Callable[[list[Any]], None]) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    change(lines)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _set(path: str, value: object) -> Callable[[Path], None]:
    """Set the field at ``path`` (``trajectory.steps.0.reward``; ``-`` deletes it) of episode.json."""

    def corrupt(folder: Path) -> None:
        def change(document: Any) -> Any:
            *parents, key = path.split(".")
            target = document
            for part in parents:
                target = target[int(part) if part.isdigit() else part]
            where: Any = int(key) if key.isdigit() else key
            if value == "-":
                del target[where]
            else:
                target[where] = value
            return document

        _edit_json(folder / "episode.json", change)

    return corrupt


def _outside_link(folder: Path) -> None:
    (folder.parent.parent / "secret.jpg").write_bytes(b"not yours")
    (folder / "001.jpg").unlink()
    (folder / "001.jpg").symlink_to(folder.parent.parent / "secret.jpg")


def _loop(path: Path) -> None:
    """``path`` a link to itself."""
    path.unlink()
    path.symlink_to(path)


CORRUPTIONS: list[tuple[str, Callable[[Path], object], str]] = [
    (
        "a list",
        lambda f: (f / "episode.json").write_text("[1, 2]"),
        r"episode\.json: must be an object, not an array",
    ),
    ("not JSON", lambda f: (f / "episode.json").write_text("{oops"), r"episode\.json: is not JSON"),
    ("not UTF-8", lambda f: (f / "episode.json").write_bytes(b"\xff\xfe{}"), r"episode\.json: is not UTF-8"),
    (
        "nested too deeply",
        lambda f: (f / "episode.json").write_text("[" * 200_000),
        r"episode\.json: is not an episode's JSON \(nested too deeply\)",
    ),
    ("a lone surrogate", _set("trajectory.task.goal", "\ud800"), r"episode\.json: holds a lone surrogate"),
    (
        "a screen behind a loop of links",
        lambda f: _loop(f / "000.jpg"),
        r"episode\.json: screens\[0\] names '000\.jpg', which cannot be read",
    ),
    (
        "a screen's name too long to open",
        _set("screens.0", "a" * 5000),
        r"episode\.json: screens\[0\] names 'a{40}'\.\.\., which cannot be read \(File name too long\)",
    ),
    (
        "no format",
        _set("format", "-"),
        r"episode\.json: has no format field: not an episode \(formats 1 to 2\)",
    ),
    (
        "task a string",
        _set("trajectory.task", "t/1"),
        r"episode\.json: trajectory\.task must be an object, not a string",
    ),
    ("no host", _set("trajectory.host", "-"), r"episode\.json: trajectory\.host is missing"),
    (
        "success a string",
        _set("trajectory.success", "yes"),
        r"episode\.json: trajectory\.success must be a boolean, not a string",
    ),
    (
        "end reason",
        _set("trajectory.end_reason", "bored"),
        r"episode\.json: trajectory\.end_reason is 'bored', not an end reason",
    ),
    (
        "an unknown field",
        _set("trajectory.colour", "red"),
        r"episode\.json: trajectory has unknown field\(s\) \['colour'\]",
    ),
    (
        "a deleted screen",
        lambda f: (f / "001.jpg").unlink(),
        r"episode\.json: screens\[1\] names 001\.jpg, which is missing",
    ),
    (
        "a screen of text",
        lambda f: (f / "001.jpg").write_text("not an image"),
        r"episode\.json: screens\[1\] names 001\.jpg, which is not a JPEG \(no JPEG start marker\)",
    ),
    (
        "a PNG named .jpg",
        lambda f: Image.new("RGB", (27, 60), "red").save(f / "001.jpg", "PNG"),
        r"episode\.json: screens\[1\] names 001\.jpg, which is not a JPEG",
    ),
    (
        "a JPEG cut short",
        lambda f: (f / "final.jpg").write_bytes((f / "final.jpg").read_bytes()[:-40]),
        r"episode\.json: screens\[2\] names final\.jpg, which is not a whole JPEG \(no end marker: cut short",
    ),
    (
        "a screen listed twice",
        _set("screens.1", "000.jpg"),
        r"episode\.json: screens\[1\] names 000\.jpg, which screens\[0\] names already",
    ),
    (
        "no steps",
        _set("trajectory.steps", []),
        r"episode\.json: screens declares attachment\(s\) \[0, 1\] that no field uses",
    ),
    (
        "a screen used twice",
        _set("trajectory.steps.1.observation.screenshot", 0),
        r"episode\.json: trajectory\.steps\[1\]\.observation\.screenshot refers to attachment 0, which "
        "another field already uses",
    ),
    (
        "a screen beyond the list",
        _set("trajectory.steps.1.observation.screenshot", 7),
        r"episode\.json: trajectory\.steps\[1\]\.observation\.screenshot refers to attachment 7, but the "
        "episode has 3",
    ),
    (
        "an escaping screen",
        _set("screens.0", "../../x.jpg"),
        r"episode\.json: screens\[0\] names '\.\./\.\./x\.jpg', not a file of the episode's folder",
    ),
    (
        "an absolute final",
        _set("screens.2", "/etc/passwd"),
        r"episode\.json: screens\[2\] names '/etc/passwd', not a file of the episode's folder",
    ),
    (
        "a link out",
        _outside_link,
        r"episode\.json: screens\[1\] names '001\.jpg', not a file of the episode's folder",
    ),
    (
        "steps out of order",
        _set("trajectory.steps.1.index", 5),
        r"episode\.json: trajectory\.steps\[1\]\.index is 5, not 1",
    ),
    (
        "an unknown action",
        _set("trajectory.steps.0.action.type", 99),
        r"episode\.json: trajectory\.steps\[0\]\.action\.type is 99, not an AitW action type",
    ),
    (
        "a touch of text",
        _set("trajectory.steps.0.action.touch", "here"),
        r"trajectory\.steps\[0\]\.action\.touch must be null or a \[y, x\] array, not a string",
    ),
    (
        "a width as text",
        _set("trajectory.steps.0.observation.width", "27"),
        r"episode\.json: trajectory\.steps\[0\]\.observation\.width must be an integer, not a string",
    ),
]


@pytest.mark.parametrize(
    ("corrupt", "problem"), [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS]
)
def test_a_malformed_episode_is_refused_with_its_file_and_skipped_by_view_and_export(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, corrupt: Callable[[Path], object], problem: str
) -> None:
    from distrl.episodes.export import write_metadata
    from distrl.episodes.view import write_viewer

    folder = tmp_path / "runs" / "episodes"
    writer = EpisodeWriter(folder)
    writer.write(_trajectory("1"))
    bad = writer.write(_trajectory("2", success=False))
    assert bad is not None
    corrupt(bad)
    with pytest.raises(ValueError, match=rf"run~abc~2/(\S+: )?{problem}"):
        read_episode(bad)
    with caplog.at_level(logging.WARNING):
        page = write_viewer(folder)
        _, rows = write_metadata(folder)
    assert "<h1>1 episode, 1 success</h1>" in page.read_text()
    assert "run/abc/2" not in page.read_text()
    assert rows == 2  # the good episode's two steps; nothing of the bad one
    assert "run/abc/2" not in (folder / "metadata.jsonl").read_text()
    assert re.search(rf"skipping the episode in .*run~abc~2: .*{problem}", caplog.text)
    with pytest.raises(ValueError, match=rf"run~abc~2/(\S+: )?{problem}"):
        write_viewer(folder, strict=True)
    with pytest.raises(ValueError, match=rf"run~abc~2/(\S+: )?{problem}"):
        write_metadata(folder, strict=True)


def test_view_and_export_warn_of_a_bad_episode_or_fail_with_strict(tmp_path: Path) -> None:
    folder = tmp_path / "episodes"
    writer = EpisodeWriter(folder)
    writer.write(_trajectory("1"))
    bad = writer.write(_trajectory("2"))
    assert bad is not None
    _set("screens.0", "../../../etc/passwd")(bad)
    for command in ("view", "export"):
        done = subprocess.run(
            [sys.executable, "-m", "distrl", command, str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "run~abc~2/episode.json: screens[0] names " in done.stderr
        assert "Traceback" not in done.stderr
        strict = subprocess.run(
            [sys.executable, "-m", "distrl", command, "--strict", str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert strict.returncode == 2
        (line,) = strict.stderr.strip().splitlines()
        assert line.startswith("distrl: error: ")
        assert "not a file of the episode's folder" in line


def test_view_and_export_of_a_missing_folder_or_a_file_say_so(tmp_path: Path) -> None:
    from distrl.episodes.export import write_metadata
    from distrl.episodes.view import write_viewer

    (tmp_path / "f").write_text("x")
    for write in (write_viewer, write_metadata):
        with pytest.raises(ValueError, match=r"/nowhere does not exist$"):
            write(tmp_path / "nowhere")
        with pytest.raises(ValueError, match=r"/f is a file, not a folder$"):
            write(tmp_path / "f")
    done = subprocess.run(
        [sys.executable, "-m", "distrl", "view", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"distrl: error: {tmp_path / 'nowhere'} does not exist"


def test_view_and_export_that_cannot_write_their_file_say_which_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from distrl.cli import main
    from distrl.episodes.export import METADATA
    from distrl.episodes.view import PAGE

    folder = tmp_path / "episodes"
    EpisodeWriter(folder).write(_trajectory("1"))
    for command, name in (("view", PAGE), ("export", METADATA)):
        (folder / name).mkdir()  # a folder where the file goes: the path given cannot take it, exit 2
        assert main([command, str(folder)]) == 2
        assert capsys.readouterr().err == f"distrl: error: {folder / name}: Is a directory\n"


def test_collect_writes_the_episodes_it_brings_back(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[run]\noutput_dir = "{tmp_path / "runs"}"\n[sim]\nwidth = 270\nheight = 600\nlatency = "off"\n'
        '[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 2 }\n'
    )
    out = tmp_path / "episodes"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "distrl",
            "collect",
            str(hosts),
            "--policy",
            "expert",
            "--episodes",
            "3",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert f"3 episodes written to {out}" in done.stdout
    assert done.stdout.splitlines()[-1].startswith(f"look at them in a browser: python -m distrl view {out}")
    episodes = list(read_episodes(out))
    assert len(episodes) == 3
    assert all(e.task.split == "test" for e in episodes)
    successes = [e for e in episodes if e.success]
    assert successes  # the expert solves most tasks
    assert all(e.steps[-1].reward == 1.0 for e in successes)  # the ledger's reward is what is written


def _chromium() -> str:
    import shutil

    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    assert found, "the viewer is tested in headless Chromium: apt-get install chromium (.ci/run does)"
    return found


def _rendered(page: Path, tmp_path: Path, address: str = "") -> Image.Image:
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=900,1000",
            f"--screenshot={shot}",
            page.as_uri() + address,
        ],
        capture_output=True,
        timeout=60,
        check=True,
    )
    return Image.open(shot).convert("RGB")


def _share(image: Image.Image, colour: tuple[int, int, int], tolerance: int = 40) -> float:
    import numpy

    pixels = numpy.asarray(image, dtype=numpy.int16)
    near = (numpy.abs(pixels - numpy.array(colour, dtype=numpy.int16)) <= tolerance).all(axis=-1)
    return float(near.mean())


def test_the_viewer_shows_each_steps_screen_and_where_it_tapped(tmp_path: Path) -> None:
    from distrl.episodes.view import write_viewer

    folder = tmp_path / "episodes"
    writer = EpisodeWriter(folder)
    writer.write(_trajectory("1"))
    writer.write(_trajectory("2", success=False))
    page = write_viewer(folder)
    text = page.read_text()
    assert "2 episodes, 1 success<" in text
    assert text.count("<details id=") == 2  # one per episode (and one for the table by task)
    assert "judge: the final screen shows Wi-Fi on" in text
    shown = _rendered(page, tmp_path)
    red, green = _share(shown, (200, 10, 10)), _share(shown, (10, 200, 10))
    assert red > 0.01  # the first step's screen, drawn from its JPEG file
    assert green > 0.01  # the second's
    assert _share(shown, (255, 0, 80), tolerance=60) > 0.00005  # the tap's mark over the first screen
    for screen in folder.rglob("*.jpg"):
        Image.new("RGB", (27, 60), (10, 10, 200)).save(screen, "JPEG")  # every screen blue now
    assert (
        _share(_rendered(write_viewer(folder), tmp_path), (200, 10, 10)) < red / 10
    )  # the files are what showed
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no episodes"):
        write_viewer(tmp_path / "empty")


def _red_widths(image: Image.Image) -> list[int]:
    """The widths of the red screens side by side in the first row of screens, pixels."""
    import numpy

    pixels = numpy.asarray(image, dtype=numpy.int16)
    near = numpy.abs(pixels - numpy.array((200, 10, 10), dtype=numpy.int16)) <= 40
    red = numpy.asarray(near.all(axis=-1), dtype=numpy.int8)
    row = red[numpy.flatnonzero(red.sum(axis=1) >= 100)[0] + 20]  # a row of screens, not a red word
    edges = numpy.flatnonzero(numpy.diff(numpy.concatenate(([0], row, [0]))))
    return [int(end - start) for start, end in zip(edges[::2], edges[1::2], strict=True)]


def test_the_viewers_screens_are_found_in_folders_of_any_name(tmp_path: Path) -> None:
    """A '#', a '?' or a space in a folder's name (renamed by hand) ends or breaks a link left as it is;
    a name in no UTF-8 could not be written into the page at all."""
    from distrl.episodes.view import write_viewer

    folder = tmp_path / "episodes"
    EpisodeWriter(folder).write(_trajectory("1"))
    (folder / "run~abc~1").rename(folder / "run #1?")
    page = write_viewer(folder)
    assert "src='run%20%231%3F/" in page.read_text()
    assert _share(_rendered(page, tmp_path), (200, 10, 10)) > 0.01  # the step's screen, found
    (folder / "run #1?").rename(folder / os.fsdecode(b"ep\xff"))
    assert "src='ep%FF/" in write_viewer(folder).read_text()


def test_export_leaves_out_an_episode_whose_folder_no_row_can_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A folder named in no UTF-8 was written into metadata.jsonl as a surrogate escape ("ep\\udcff"),
    a file name that names no file: the dataset failed to load."""
    from distrl.episodes.export import write_metadata

    folder = tmp_path / "episodes"
    writer = EpisodeWriter(folder)
    writer.write(_trajectory("1"))
    writer.write(_trajectory("2"))
    (folder / "run~abc~1").rename(folder / os.fsdecode(b"ep\xff"))
    target, rows = write_metadata(folder)
    names = [json.loads(line)["file_name"] for line in target.read_text().splitlines()]
    assert rows == len(names) == 2
    assert all(name.startswith("run~abc~2/") for name in names)  # the other episode's steps only
    assert "its folder's name is not UTF-8, so metadata.jsonl cannot name its screens" in caplog.text
    assert "ep\\xff" in caplog.text  # named as its bytes: a surrogate in a message cannot be printed
    with pytest.raises(ValueError, match="its folder's name is not UTF-8"):
        write_metadata(folder, strict=True)


def test_the_viewer_tells_the_outcome_from_the_end_and_shows_the_phones_resolution(tmp_path: Path) -> None:
    """An episode the policy called complete that failed reads as a failure that ended by the policy's
    word; the screens show small, large, or at the phone's resolution (the size control, or a click on
    one screen)."""
    import dataclasses

    from distrl.episodes.view import _ENDED, write_viewer

    assert set(_ENDED) == {reason.value for reason in EndReason}  # every end in words
    folder = tmp_path / "episodes"
    EpisodeWriter(folder).write(
        dataclasses.replace(_trajectory("1", success=False), end_reason=EndReason.COMPLETE)
    )
    for screen in folder.rglob("*.jpg"):
        Image.new("RGB", (400, 880), (200, 10, 10)).save(screen, "JPEG")  # a phone 400 pixels wide
    page = write_viewer(folder)
    (summary,) = re.findall(r"<details id='run~abc~1'[^>]*><summary>(.*?)</summary>", page.read_text())
    assert re.sub(r"<[^>]+>", "", summary).startswith(
        "Turn on Wi-Fi failure · 2 steps · ended: the policy said the task was complete · "
    )
    small, large, full = (
        _red_widths(_rendered(page, tmp_path, address)) for address in ("", "#size=large", "#size=full")
    )
    assert len(small) == 3  # two steps and the final screen
    assert all(abs(width - 178) <= 2 for width in small)  # 180 px with their border
    assert all(abs(width - 358) <= 2 for width in large[:2])
    assert full[0] == 400  # pixel for pixel
    clicked = folder / "clicked.html"  # the page, its first screen clicked
    clicked.write_text(
        page.read_text().replace(
            "</body>", "<script>document.querySelector('.screen').click()</script></body>"
        )
    )
    first, *others = _red_widths(_rendered(clicked, tmp_path))
    assert first == 400
    assert others
    assert all(abs(width - 178) <= 2 for width in others)


def test_export_is_a_dataset_that_datasets_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets

    from distrl.episodes.export import write_metadata

    folder = tmp_path / "episodes"
    writer = EpisodeWriter(folder)
    writer.write(_trajectory("1"))
    writer.write(_trajectory("2", success=None))
    _, rows = write_metadata(folder)
    assert rows == 4
    loaded = datasets.load_dataset(
        "imagefolder", data_dir=str(folder), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert loaded.num_rows == 4
    first = sorted(loaded, key=lambda row: (row["episode_id"], row["index"]))
    assert [(row["episode_id"], row["index"]) for row in first] == [
        ("run/abc/1", 0),
        ("run/abc/1", 1),
        ("run/abc/2", 0),
        ("run/abc/2", 1),
    ]
    assert first[0]["image"].size == (27, 60)
    assert first[0]["image"].getpixel((13, 30))[0] > 150  # the red screen the first step saw
    assert json.loads(first[0]["action"])["type"] == ActionType.DUAL_POINT  # the action's JSON form
    assert (first[1]["reward"], first[1]["success"], first[2]["success"]) == (1.0, True, None)
    step = first[1]
    assert (step["behaviour_logprob"], step["policy_version"], step["output"]) == (-7.25, 4, "gibberish")
    assert first[0]["goal"] == "Turn on Wi-Fi"


def test_the_viewers_filters_narrow_the_list(tmp_path: Path) -> None:
    from distrl.episodes.view import write_viewer

    folder = tmp_path / "episodes"
    writer = EpisodeWriter(folder)
    writer.write(_trajectory("1"))
    writer.write(_trajectory("2", success=False))
    page = write_viewer(folder)

    def shown(address: str) -> list[str]:
        dom = subprocess.run(
            [
                _chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--dump-dom",
                page.as_uri() + address,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        episodes = re.findall(r"<details id=\"([^\"]+)\"[^>]*?(style=\"display: none;\")?>", dom)
        assert len(episodes) == 2, dom[:2000]
        return [name for name, hidden in episodes if not hidden]

    assert shown("") == ["run~abc~1", "run~abc~2"]
    assert shown("#outcome=failure") == ["run~abc~2"]
    assert shown("#outcome=success&task=Turn+on+Wi-Fi") == ["run~abc~1"]
    assert shown("#version=4") == ["run~abc~1", "run~abc~2"]  # both have steps of version 4
    assert shown("#task=Something+else") == ["run~abc~1", "run~abc~2"]  # no such task: no filter
