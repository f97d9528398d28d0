"""Episodes on disk (``distrl.episodes``): written as documented, read back whole, sampled and bounded;
written by ``collect`` and by runs."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from distrl.episodes import EpisodeWriter, read_episode, read_episodes
from distrl.records import Action, ActionType, EndReason, InvalidAction, Observation, Step, Task, Trajectory

ROOT = Path(__file__).resolve().parent.parent


def _screen(colour: tuple[int, int, int], image_format: str) -> Observation:
    out = io.BytesIO()
    Image.new("RGB", (27, 60), colour).save(out, "PNG" if image_format == "png" else "JPEG")
    return Observation(screenshot=out.getvalue(), width=27, height=60, image_format=image_format)


def _trajectory(name: str, image_format: str = "png", *, success: bool | None = True) -> Trajectory:
    task = Task(id=f"t/{name}", suite="t", goal="Turn on Wi-Fi", setup=("settings put global wifi_on 0",))
    steps = (
        Step(
            index=0,
            observation=_screen((200, 10, 10), image_format),
            output="Action Decision: tap",
            action=Action(type=ActionType.DUAL_POINT, touch=(0.25, 0.5), lift=(0.25, 0.5)),
            policy_version=3,
            behaviour_logprob=-1.5,
            duration_s=0.2,
        ),
        Step(
            index=1,
            observation=_screen((10, 200, 10), image_format),
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
        final_observation=_screen((10, 10, 200), image_format),
        end_reason=EndReason.STEP_LIMIT,
        success=success,
        verdict="the final screen shows Wi-Fi on",
        started_at_s=1_700_000_000.0,
        duration_s=2.5,
        temperature=0.7,
    )


@pytest.mark.parametrize("image_format", ["png", "jpeg"])
def test_an_episode_reads_back_as_it_was_written(tmp_path: Path, image_format: str) -> None:
    written = _trajectory("1", image_format)
    folder = EpisodeWriter(tmp_path).write(written)
    assert folder == tmp_path / "run~abc~1"
    assert sorted(p.name for p in folder.iterdir()) == [
        "000.jpg",
        "001.jpg",
        "episode.json",
        "final.jpg",
        "steps.jsonl",
    ]
    lines = [json.loads(line) for line in (folder / "steps.jsonl").read_text().splitlines()]
    assert lines[0]["action"] == {"type": "DUAL_POINT", "touch": [0.25, 0.5], "lift": [0.25, 0.5], "text": ""}
    assert lines[1]["action"] == {"invalid": "no action type"}
    assert [line["goal"] for line in lines] == ["Turn on Wi-Fi"] * 2
    read = read_episode(folder)
    for step in read.steps:  # every screen is a JPEG of the step's picture
        with Image.open(io.BytesIO(step.observation.screenshot)) as image:
            assert image.format == "JPEG"
            assert image.size == (27, 60)
    same_but_screens = [
        (s.index, s.output, s.action, s.policy_version, s.behaviour_logprob, s.reward, s.duration_s)
        for s in read.steps
    ]
    assert same_but_screens == [
        (s.index, s.output, s.action, s.policy_version, s.behaviour_logprob, s.reward, s.duration_s)
        for s in written.steps
    ]
    assert (read.id, read.task.goal, read.task.setup, read.success, read.verdict) == (
        written.id,
        written.task.goal,
        written.task.setup,
        True,
        written.verdict,
    )
    assert (read.end_reason, read.started_at_s, read.duration_s) == (EndReason.STEP_LIMIT, 1.7e9, 2.5)
    assert read.temperature == 0.7
    assert read.final_observation is not None
    assert read.final_observation.width == 27
    if image_format == "jpeg":  # JPEG screens are kept byte for byte
        assert read.steps[0].observation.screenshot == written.steps[0].observation.screenshot
    unscored = read_episode(EpisodeWriter(tmp_path / "u").write(_trajectory("2", success=None)))  # type: ignore[arg-type]
    assert unscored.success is None
    # an episode written before episodes said their temperature reads back as not saying
    head = json.loads((folder / "episode.json").read_text())
    del head["temperature"]
    (folder / "episode.json").write_text(json.dumps(head))
    assert read_episode(folder).temperature is None


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
    assert [t.id for t in read_episodes(tmp_path)] == ["run/abc/1"]
    (tmp_path / "run~abc~1" / "episode.json").write_text('{"format": 99}')
    with pytest.raises(ValueError, match=r"run~abc~1/episode\.json: format 99, not 1"):
        list(read_episodes(tmp_path))


def _edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def _edit_steps(path: Path, change: Callable[[list[Any]], None]) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    change(lines)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _set(key: str, value: object, *, step: int | None = None) -> Callable[[Path], None]:
    def corrupt(folder: Path) -> None:
        if step is None:
            _edit_json(folder / "episode.json", lambda head: {**head, key: value})
        else:
            _edit_steps(folder / "steps.jsonl", lambda lines: lines[step].__setitem__(key, value))

    return corrupt


def _outside_link(folder: Path) -> None:
    (folder.parent.parent / "secret.jpg").write_bytes(b"not yours")
    (folder / "001.jpg").unlink()
    (folder / "001.jpg").symlink_to(folder.parent.parent / "secret.jpg")


CORRUPTIONS: list[tuple[str, Callable[[Path], object], str]] = [
    (
        "a list",
        lambda f: (f / "episode.json").write_text("[1, 2]"),
        r"episode\.json: must be an object, not an array",
    ),
    ("not JSON", lambda f: (f / "episode.json").write_text("{oops"), r"episode\.json: is not JSON"),
    ("not UTF-8", lambda f: (f / "steps.jsonl").write_bytes(b"\xff\xfe{}"), r"steps\.jsonl: is not UTF-8"),
    ("task a string", _set("task", "t/1"), r"episode\.json: task must be an object, not a string"),
    (
        "no host",
        lambda f: _edit_json(f / "episode.json", lambda h: {k: v for k, v in h.items() if k != "host"}),
        r"episode\.json: host is missing",
    ),
    ("success a string", _set("success", "yes"), r"success must be a boolean, not a string"),
    ("end reason", _set("end_reason", "bored"), r"end_reason 'bored' is no end reason"),
    (
        "a deleted screen",
        lambda f: (f / "001.jpg").unlink(),
        r"steps\.jsonl:2: screen: the screen 001\.jpg is missing",
    ),
    (
        "no steps",
        lambda f: (f / "steps.jsonl").write_text(""),
        r"holds 0 step\(s\), but episode\.json says 2",
    ),
    (
        "a step short",
        lambda f: _edit_steps(f / "steps.jsonl", lambda lines: lines.pop()),
        r"holds 1 step\(s\), but episode\.json says 2",
    ),
    (
        "an escaping screen",
        _set("screen", "../../x.jpg", step=0),
        r"steps\.jsonl:1: screen: '\.\./\.\./x\.jpg' is not a file of the episode's folder",
    ),
    (
        "an absolute final",
        _set("final_screen", "/etc/passwd"),
        r"final_screen: '/etc/passwd' is not a file of the episode's folder",
    ),
    (
        "a link out",
        _outside_link,
        r"steps\.jsonl:2: screen: '001\.jpg' is not a file of the episode's folder",
    ),
    ("steps out of order", _set("index", 5, step=1), r"steps\.jsonl:2: index is 5, not 1"),
    (
        "an unknown action",
        _set("action", {"type": "FLY"}, step=0),
        r"action\.type 'FLY' is no action type",
    ),
    (
        "a touch of text",
        _set("action", {"type": "DUAL_POINT", "touch": "here", "lift": None, "text": ""}, step=0),
        r"action\.touch must be null or \[x, y\]",
    ),
    ("a width as text", _set("width", "27", step=0), r"width must be an integer, not a string"),
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
    _set("screen", "../../../etc/passwd", step=0)(bad)
    for command in ("view", "export"):
        done = subprocess.run(
            [sys.executable, "-m", "distrl", command, str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "run~abc~2/steps.jsonl:1: screen: " in done.stderr
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
        assert "is not a file of the episode's folder" in line


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
    first = sorted(loaded, key=lambda row: (row["episode_id"], row["step"]))
    assert [(row["episode_id"], row["step"]) for row in first] == [
        ("run/abc/1", 0),
        ("run/abc/1", 1),
        ("run/abc/2", 0),
        ("run/abc/2", 1),
    ]
    assert first[0]["image"].size == (27, 60)
    assert first[0]["image"].getpixel((13, 30))[0] > 150  # the red screen the first step saw
    assert json.loads(first[0]["action"])["type"] == "DUAL_POINT"
    assert (first[1]["reward"], first[1]["success"], first[2]["success"]) == (1.0, True, None)
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
