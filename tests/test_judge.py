"""The VLM judge (``distrl.tasks.judge``) over real HTTP, and the judge's queue in a run
(``distrl.fleet.scoring.Judging``): verdicts, retries, the cache, the key, and no episode lost."""

from __future__ import annotations

import dataclasses
import logging
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from distrl.errors import JudgeError
from distrl.fleet.scoring import Judging
from distrl.records import (
    Action,
    ActionType,
    EndReason,
    Observation,
    Step,
    Task,
    Trajectory,
)
from distrl.tasks.judge import Judge, parse_verdict
from distrl.testing.judge_server import JudgeServer, serve_judge

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789abcdef"


def _screen(tag: str) -> Observation:
    return Observation(screenshot=f"png:{tag}".encode(), width=10, height=20)


def _trajectory(name: str, *, final: str, steps: int = 2, evaluator: str = "judge") -> Trajectory:
    """An ended episode whose final screen is ``final`` (the oracle's key)."""
    task = Task(id=f"t/{name}", suite="t", goal=f"Goal of {name}", evaluator=evaluator)
    taps = [
        Step(
            index=i,
            observation=_screen(f"{name}/{i}"),
            output="Action Plan: [DUAL_POINT]; Action Decision: tap",
            action=Action(type=ActionType.DUAL_POINT, touch=(0.5, 0.5), lift=(0.5, 0.5)),
            policy_version=0,
            behaviour_logprob=-1.0,
        )
        for i in range(steps)
    ]
    return Trajectory(
        id=name,
        task=task,
        host="h",
        device="d",
        steps=tuple(taps),
        final_observation=_screen(final),
        end_reason=EndReason.STEP_LIMIT,
    )


TRUTH = {b"png:won": True, b"png:lost": False}


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with serve_judge(lambda goal, final: TRUTH.get(final)) as running:
        yield running


def _judge(server: JudgeServer, tmp_path: Path | None = None, **options: object) -> Judge:
    settings: dict[str, object] = {
        "base_url": server.url,
        "model": "test-judge",
        "api_key": KEY,
        "max_retries": 3,
        "timeout_s": 2.0,
        "backoff_s": 0.01,
        "cache_dir": tmp_path,
        **options,
    }
    return Judge(**settings)  # type: ignore[arg-type]


def test_the_verdict_is_read_from_the_last_status_line() -> None:
    said = parse_verdict("Reason: the alarm is set for 6pm.\nStatus: success")
    assert said is not None
    assert (said.success, said.reason) == (True, "the alarm is set for 6pm.")
    assert parse_verdict("status: Success ... on reflection, **Status:** failure").success is False  # type: ignore[union-attr]
    assert parse_verdict("I think it worked.") is None


async def test_verdicts_follow_the_judge_and_are_cached(server: JudgeServer, tmp_path: Path) -> None:
    async with _judge(server, tmp_path) as judge:
        won = await judge.verdict(_trajectory("a", final="won"))
        lost = await judge.verdict(_trajectory("b", final="lost"))
        assert (won.success, lost.success) == (True, False)
        assert "does not show" in lost.reason
        assert server.requests == 2
        again = await judge.verdict(_trajectory("a", final="won"))
        assert (again.success, again.cached, server.requests) == (True, True, 2)
        assert judge.stats.cache_hits == 1
        assert judge.stats.prompt_tokens > 0
    asked = server.asked[0]
    assert (asked.goal, asked.model, asked.images) == ("Goal of a", "test-judge", 1)
    assert asked.authorization == f"Bearer {KEY}"
    # a fresh judge on the same folder asks nothing: a re-evaluation costs nothing
    async with _judge(server, tmp_path) as judge:
        assert (await judge.verdict(_trajectory("b", final="lost"))).success is False
    assert server.requests == 2
    cached = await anyio.to_thread.run_sync(lambda: [path.read_text() for path in tmp_path.rglob("*.json")])
    assert len(cached) == 2
    assert all(KEY not in text for text in cached)


async def test_the_judge_sees_the_last_screens_final_last(server: JudgeServer) -> None:
    async with _judge(server, screens=2) as judge:
        await judge.verdict(_trajectory("a", final="won", steps=3))
    assert server.asked[-1].images == 2


@pytest.mark.parametrize(
    "failures", [["429"], ["500", "500"], ["timeout"], ["drop"], ["garbage"], ["429", "timeout", "500"]]
)
async def test_busy_slow_and_lost_answers_are_retried(server: JudgeServer, failures: list[str]) -> None:
    server.script.extend(failures)
    server.hang_s = 5.0  # a "timeout" holds its answer well past timeout_s; a healthy one, even on a
    async with _judge(server, timeout_s=1.5) as judge:  # loaded machine, answers well within it
        verdict = await judge.verdict(_trajectory("a", final="won"))
    assert verdict.success is True
    assert server.requests == len(failures) + 1
    assert judge.stats.retries == len(failures)


async def test_timeout_s_is_one_deadline_for_the_whole_answer(server: JudgeServer) -> None:
    """A judge that sends a whole verdict a byte at a time (each read well within any per-read limit)
    is cut off at ``timeout_s`` per try, and no verdict is read from it."""
    server.script.extend(["drip", "drip"])
    server.drip_s = 0.05  # the verdict's ~400 bytes would take ~20 s
    async with _judge(server, timeout_s=0.5, max_retries=1) as judge:
        with anyio.fail_after(8):
            with pytest.raises(JudgeError, match=r"did not answer within timeout_s = 0.5 s") as caught:
                await judge.verdict(_trajectory("a", final="won"))
    assert (caught.value.reason, server.requests) == ("unreachable", 2)
    assert 0 < server.bytes_sent < 2 * 60


async def test_an_answer_closed_past_timeout_s_is_late_and_asked_again(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline is read again once the answer is closed: a loop held while the first answer was closed
    (where httpcore shields its close from cancellation, so none is delivered) makes it late, and the
    verdict comes from the second."""
    import httpx

    close = httpx.Response.aclose
    held: list[float] = []

    async def close_then_hold(response: httpx.Response) -> None:
        await close(response)
        if not held:
            held.append(2.0)
            time.sleep(held[0])  # noqa: ASYNC251 -- the loop held on purpose: no checkpoint till the answer is read

    monkeypatch.setattr(httpx.Response, "aclose", close_then_hold)
    async with _judge(server, timeout_s=1.5, max_retries=1) as judge:  # the second try, well within it
        verdict = await judge.verdict(_trajectory("a", final="won"))
    assert (verdict.success, server.requests, judge.stats.retries) == (True, 2, 1)


@pytest.mark.parametrize("step", ["huge", "flood"])
async def test_an_answer_over_max_response_bytes_is_dropped_unread(server: JudgeServer, step: str) -> None:
    """A 200 with a verdict in 8 MB (declared), or a chunked answer without end: the judge stops at its
    cap and gives no verdict, then asks again."""
    server.script.append(step)
    async with _judge(server, max_response_bytes=64 * 1024, max_retries=0) as judge:
        with anyio.fail_after(8):
            with pytest.raises(JudgeError, match=r"over max_response_bytes = 65536") as caught:
                await judge.verdict(_trajectory("a", final="won"))
        assert caught.value.reason == "garbage"
        if step == "flood":
            assert server.bytes_sent < 64 << 20  # it hung up, not read without end
        assert (await judge.verdict(_trajectory("a", final="won"))).success is True


async def test_retry_after_is_honoured_only_up_to_max_backoff_s(server: JudgeServer) -> None:
    server.script.extend(["429-forever", "429-forever"])
    async with _judge(server, max_backoff_s=0.2) as judge:
        with anyio.fail_after(10):  # 100000 s each, honoured, would never end
            verdict = await judge.verdict(_trajectory("a", final="won"))
    assert (verdict.success, server.requests, judge.stats.retries) == (True, 3, 2)


async def test_a_judge_that_stays_down_is_a_judge_error_never_a_failure(server: JudgeServer) -> None:
    server.script.extend(["500"] * 4)
    async with _judge(server, max_retries=3) as judge:
        with pytest.raises(JudgeError, match="HTTP 500") as caught:
            await judge.verdict(_trajectory("a", final="won"))
    assert (caught.value.reason, caught.value.status, server.requests) == ("busy", 500, 4)
    server.script.extend(["garbage"] * 2)
    async with _judge(server, max_retries=1) as judge:
        with pytest.raises(JudgeError, match=r"no 'Status: success\|failure'") as caught:
            await judge.verdict(_trajectory("a", final="won"))
    assert caught.value.reason == "garbage"


async def test_a_refusal_is_not_retried_and_does_not_leak_the_key(server: JudgeServer) -> None:
    server.script.append("refuse")
    async with _judge(server) as judge:
        with pytest.raises(JudgeError, match="HTTP 401") as caught:
            await judge.verdict(_trajectory("a", final="won"))
    assert (caught.value.reason, server.requests) == ("refused", 1)
    assert KEY not in str(caught.value)


async def test_an_unreachable_judge_is_a_judge_error(tmp_path: Path) -> None:
    with serve_judge(lambda goal, final: True) as gone:
        url = gone.url
    async with Judge(base_url=url, model="m", max_retries=1, backoff_s=0.01) as judge:
        with pytest.raises(JudgeError, match="cannot reach the judge") as caught:
            await judge.verdict(_trajectory("a", final="won"))
    assert caught.value.reason == "unreachable"


class _Inbox:
    """The ledger's place: what arrives, and an event once ``expected`` have."""

    def __init__(self, expected: int = 1) -> None:
        self.arrived: list[Trajectory] = []
        self.expected = expected
        self.full = anyio.Event()

    async def arrive(self, trajectory: Trajectory) -> None:
        self.arrived.append(trajectory)
        if len(self.arrived) >= self.expected:
            self.full.set()


async def test_a_dead_judge_loses_no_episode(server: JudgeServer, caplog: pytest.LogCaptureFixture) -> None:
    """Down for 20 requests (every try of several episodes, several times), then back: every episode
    arrives once, scored, and nothing unscored reaches the ledger meanwhile."""
    server.script.extend(["500"] * 10 + ["drop"] * 10)
    inbox = _Inbox(
        len(episodes := [_trajectory(f"e{i}", final="won" if i % 2 else "lost") for i in range(8)]) + 1
    )
    judge = _judge(server, max_retries=1, api_key=KEY)
    judging = Judging(judge, inbox.arrive, capacity=4, concurrency=2, first_retry_s=0.02)
    other = _trajectory("sim", final="won", evaluator="sim")
    other = dataclasses.replace(other, success=True)
    with caplog.at_level(logging.DEBUG):
        async with anyio.create_task_group() as tg:
            tg.start_soon(judging.run)
            await judging.arrive(other)  # not the judge's: straight on
            assert inbox.arrived == [other]
            for episode in episodes:
                await judging.arrive(episode)  # waits while the queue is full: backpressure
            with anyio.fail_after(30):
                await inbox.full.wait()
            tg.cancel_scope.cancel()
    judged = {t.id: t for t in inbox.arrived[1:]}
    assert sorted(judged) == sorted(e.id for e in episodes)
    assert all(t.success is (int(t.id[1:]) % 2 == 1) for t in judged.values())
    assert all(t.verdict for t in judged.values())
    assert judging.waiting == 0
    assert server.script == type(server.script)()  # the outage was lived through, not skipped
    assert "no verdict" in caplog.text
    assert "answering again" in caplog.text
    assert KEY not in caplog.text


async def test_a_refusing_judge_stops_the_run_with_its_reason(server: JudgeServer) -> None:
    server.script.append("refuse")
    inbox = _Inbox()
    judging = Judging(_judge(server), inbox.arrive, capacity=2, concurrency=1)
    await judging.arrive(_trajectory("a", final="won"))  # queued before the askers start
    with pytest.raises(JudgeError, match="HTTP 401"):
        await judging.run()
    assert inbox.arrived == []


def _hosts_with_judge(tmp_path: Path, url: str) -> Path:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[policy]\nmodel = "expert"\n'
        f'[judge]\nbase_url = "{url}"\nmodel = "test-judge"\ncache = "{tmp_path / "cache"}"\n'
        '[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 1 }\n'
    )
    return hosts


def test_judge_eval_reports_the_judges_agreement_with_the_sim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import hashlib
    import json

    from distrl.cli import main
    from distrl.local.judge_eval import calibration_episodes

    played = calibration_episodes(None, suite="general", split="test", episodes=12, seed=3)
    truth = {
        hashlib.sha256((t.final_observation or t.steps[-1].observation).screenshot).hexdigest(): bool(
            t.success
        )
        for t in played
    }
    assert set(truth.values()) == {True, False}  # the expert's mistakes make both outcomes

    def oracle(goal: str, final: bytes) -> bool | None:
        return truth.get(hashlib.sha256(final).hexdigest())

    with serve_judge(oracle) as server:
        hosts = _hosts_with_judge(tmp_path, server.url)
        assert main(["judge-eval", str(hosts), "--episodes", "12", "--seed", "3", "--json"]) == 0
        exact = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert exact["judged"] == 12
        assert (exact["accuracy"], exact["precision"], exact["recall"]) == (1.0, 1.0, 1.0)
        assert exact["true_positive"] == sum(bool(t.success) for t in played)
        assert exact["requests"] == 12
        assert exact["tokens_per_episode"] > 0
        # a judge that says "success" to everything: recall stays, precision and accuracy fall. The same
        # episodes again (the same seed): each asked again, where the cache answered for the judge before
        server.oracle = lambda goal, final: True
        assert main(["judge-eval", str(hosts), "--episodes", "12", "--seed", "3"]) == 0
        report = capsys.readouterr().out
    assert "(0 retries, 0 from the cache)" in report
    assert not list((tmp_path / "cache").rglob("*.json"))  # a calibration leaves the run's cache alone
    assert "recall 100.0%" in report
    assert "accuracy 100.0%" not in report
    assert "truly failure" in report


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        ("refuse", "HTTP 401"),
        ("down", "cannot reach the judge"),
        ("timeout", "did not answer within timeout_s = 0.5 s"),
    ],
)
def test_judge_eval_fails_and_says_why_when_no_episode_was_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], failure: str, said: str
) -> None:
    """A judge that refuses (401), is down, or never answers in time: judge-eval exits 1 and says so,
    not "accuracy 0.0%" and 0."""
    from distrl.cli import main

    command = ["judge-eval", "--episodes", "4", "--seed", "1"]
    with serve_judge(lambda goal, final: True) as server:
        server.script.extend([failure] * 4)
        server.hang_s = 3.0
        hosts = _hosts_with_judge(tmp_path, server.url)
        hosts.write_text(
            hosts.read_text().replace("[judge]\n", "[judge]\nmax_retries = 0\ntimeout_s = 0.5\n")
        )
        if failure != "down":
            status = main([*command, str(hosts)])
    if failure == "down":
        status = main([*command, str(hosts)])
    assert status == 1
    err = capsys.readouterr().err
    assert "gave no verdict for any of the 4 episodes" in err
    assert said in err
    assert "Traceback" not in err


def test_judge_eval_needs_a_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from distrl.cli import main

    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 1 }\n')
    assert main(["judge-eval", str(hosts), "--episodes", "2"]) == 2
    assert "judge-eval needs a [judge]" in capsys.readouterr().err


def test_distrl_runs_without_httpx_and_the_judge_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    blocked = "import sys; sys.modules['httpx'] = None; "
    imports = "import distrl, distrl.cli, distrl.fleet, distrl.tasks, distrl.tasks.judge, distrl.worker"
    done = subprocess.run(
        [sys.executable, "-c", blocked + imports], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(JudgeError, match=r"pip install 'distrl\[judge\]'"):
        Judge(base_url="http://127.0.0.1:9/v1", model="m")


def _collect_hosts(tmp_path: Path, url: str, unreachable_s: float) -> Path:
    """The expert on two sim phones, every episode scored by the judge at ``url``."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[run]\nname = "c"\noutput_dir = "{tmp_path / "runs"}"\n[policy]\nmodel = "expert"\n'
        '[tasks]\nevaluator = "judge"\n[sim]\nlatency = "off"\n'
        f'[judge]\nbase_url = "{url}"\nmodel = "test-judge"\nmax_retries = 0\ntimeout_s = 2\n'
        f'cache = "{tmp_path / "cache"}"\nunreachable_s = {unreachable_s}\n'
        '[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 2 }\n'
    )
    return hosts


def _on_disk(folder: Path) -> list[Trajectory]:
    from distrl.episodes import read_episodes

    return list(read_episodes(folder)) if folder.is_dir() else []


def test_collect_with_its_judge_down_stops_after_unreachable_s_keeping_every_episode(tmp_path: Path) -> None:
    """A judge down from the start: collect (of 1000 episodes) ends after ``[judge] unreachable_s``,
    not never, and every episode it played is on disk, unscored, saying why."""

    with serve_judge(lambda goal, final: True) as gone:
        url = gone.url
    out = tmp_path / "out"
    hosts = _collect_hosts(tmp_path, url, unreachable_s=2)
    done = subprocess.run(
        [sys.executable, "-m", "distrl", "collect", str(hosts), "--episodes", "1000", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("distrl: error: collect stopped: the judge gave no verdict for 2 s"), last
    assert "cannot reach the judge" in last
    said = re.search(
        rf"(\d+) episodes written to {re.escape(str(out))} \(none scored, (\d+) unscored", done.stdout
    )
    assert said, done.stdout
    kept = _on_disk(out)
    assert len(kept) == int(said[1]) == int(said[2]) >= 1
    assert all(
        t.success is None and t.verdict.startswith("no verdict: the judge gave no verdict") for t in kept
    )


def test_ctrl_c_on_collect_keeps_every_episode_played_on_disk(tmp_path: Path) -> None:
    """Episodes reach ``--out`` as they arrive (the judge up); the judge goes down, episodes wait for it;
    at Ctrl-C every one played is on disk, the waiting ones unscored, and the last line says so."""

    out = tmp_path / "out"
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    with serve_judge(lambda goal, final: True) as server:
        hosts = _collect_hosts(tmp_path, server.url, unreachable_s=0)  # wait for the judge for ever
        command = [
            sys.executable,
            "-m",
            "distrl",
            "collect",
            str(hosts),
            "--episodes",
            "1000",
            "--out",
            str(out),
        ]
        # Started with SIGINT at its default, as from a terminal (a test runner may have it ignored).
        collector = subprocess.Popen(
            command,
            stdout=stdout.open("w"),
            stderr=stderr.open("w"),
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            deadline = time.monotonic() + 90
            while len(list(out.glob("*/episode.json"))) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(list(out.glob("*/episode.json"))) >= 2, "no episode written while collect ran"
        except BaseException:
            collector.kill()
            raise
        # down: a connection kept alive is dropped at its next request, and the port closes
        server.script.extend(["drop"] * 100_000)
    try:  # the judge is down now: the next episodes wait for it
        deadline = time.monotonic() + 60
        while "judge: no verdict" not in stderr.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "judge: no verdict" in stderr.read_text(), stderr.read_text()
        collector.send_signal(signal.SIGINT)
        assert collector.wait(timeout=60) == 130
    finally:
        collector.kill()
    assert "Traceback" not in stderr.read_text()
    last = stdout.read_text().strip().splitlines()[-1]
    said = re.fullmatch(
        rf"stopped \(Ctrl-C\): (\d+) episodes written to {re.escape(str(out))} \((\d+) unscored\);.*", last
    )
    assert said, last
    kept = _on_disk(out)
    unscored = [t for t in kept if t.success is None]
    assert len(kept) == int(said[1])
    assert len(unscored) == int(said[2]) >= 1
    assert all(t.verdict == "no verdict: the run stopped before the judge answered" for t in unscored)
    assert sum(t.success is True for t in kept) >= 2  # those the judge scored, as it scored them


def test_run_with_its_judge_down_stops_after_unreachable_s_and_records_its_episodes(tmp_path: Path) -> None:
    """``run`` honours ``[judge] unreachable_s`` too: it ends with the reason, its episodes recorded
    unscored."""

    with serve_judge(lambda goal, final: True) as gone:
        url = gone.url
    hosts = _collect_hosts(tmp_path, url, unreachable_s=2)
    text = hosts.read_text().replace('model = "expert"', "max_new_tokens = 24")
    hosts.write_text(text.replace('latency = "off"', 'latency = "off"\nwidth = 270\nheight = 600'))
    done = subprocess.run(
        [sys.executable, "-m", "distrl", "run", str(hosts)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "distrl: error: the run stopped before its goal: the judge gave no verdict for 2 s"
    )
    kept = _on_disk(tmp_path / "runs" / "c" / "episodes")
    assert kept
    assert all(
        t.success is None and t.verdict.startswith("no verdict: the judge gave no verdict") for t in kept
    )
