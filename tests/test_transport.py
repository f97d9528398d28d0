"""Hosts, local and over SSH, against a real OpenSSH ``sshd`` on loopback.

``sshd`` (module): OpenSSH's own server, run as ``sshd -D -e -f <config>`` on a free 127.0.0.1 port with
a generated ed25519 host key, its own config, pid file and authorized_keys (a generated client key) in
a temporary folder; it logs to ``sshd.log`` there. Its host key is written to a known_hosts file as
``[127.0.0.1]:<port>``. The tests log in as the user running them (root in CI). Without an ``sshd``
binary the SSH tests skip and say so; the local ones still run.

``make_host`` runs the shared contract tests against both transports: every kind of host must pass them.
``MemoryHost`` (the worker agent in this process) keeps the part of the contract a coroutine can: its
own tests close the file.
Faults that OpenSSH cannot be made to show (a login that never ends, a login shell that cannot run the
command) come from small asyncssh servers on loopback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

import anyio
import asyncssh
import pytest
from memory_hosts import worker_agent
from support import gone, wait_gone

from distrl.config import Devices, HostEntry, Timeouts
from distrl.errors import TransportError, TransportTimeout
from distrl.fleet import probe_host
from distrl.fleet.probe import handshake
from distrl.testing.sshd import Sshd, free_port
from distrl.transport import MemoryHost, frame_pipe, open_host, remote_command
from distrl.wire import FrameStream, Heartbeat, Weights

WORKER_GONE_S = 10.0
"""How soon a worker must be gone once its learner is killed, seconds."""
TIMEOUTS = Timeouts(
    ssh_connect_s=5,
    ssh_login_s=5,
    worker_start_s=20,
    handshake_s=20,
    heartbeat_interval_s=1,
    heartbeat_timeout_s=5,
    cleanup_s=2,
)


def _local_host(name: str = "local", **changes: object) -> HostEntry:
    host = HostEntry(
        name=name, address="localhost", transport="local", python=sys.executable, devices=Devices(sim=2)
    )
    return dataclasses.replace(host, **changes)  # type: ignore[arg-type]


class MakeHost(Protocol):
    def __call__(self, name: str = ..., **changes: object) -> HostEntry: ...


@pytest.fixture(params=["local", "ssh"])
def make_host(request: pytest.FixtureRequest) -> Iterator[MakeHost]:
    """``make_host(name, **changes)``: a ``HostEntry`` of the parametrized kind (the SSH one needs sshd)."""
    if request.param == "local":
        yield _local_host
    else:
        server: Sshd = request.getfixturevalue("sshd")
        yield server.host


def _read_pid(path: Path, within_s: float = 10.0) -> int:
    """The pid a script writes to ``path``, once it is there."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError, ValueError):
            return int(path.read_text())
        time.sleep(0.02)
    pytest.fail(f"no pid in {path} after {within_s} s")


# -- the contract every host kind passes ---------------------------------------------------------------


@pytest.mark.anyio
async def test_probe_shakes_hands_and_leaves_no_worker_behind(make_host: MakeHost) -> None:
    host = make_host("w")
    with anyio.fail_after(30):
        report = await probe_host(host, TIMEOUTS, heartbeats=3)
    assert report.ok
    assert report.host == "w"
    assert report.devices == ("sim-0", "sim-1")
    assert len(report.rtt_ms) == 3
    pid = report.compute["pid"]
    assert isinstance(pid, int)
    assert pid != os.getpid()
    assert gone(pid), "the worker is still running after the link was closed"


@pytest.mark.anyio
async def test_workdir_env_and_python_arrive_verbatim(make_host: MakeHost, tmp_path: Path) -> None:
    """Inventory values reach the worker as they are: nothing in them is run by a shell."""
    marker = tmp_path / "injected"
    workdir = tmp_path / "work dir 'one' \"two\" ; $(true) & `true` #x"
    workdir.mkdir()
    record = tmp_path / "record.json"
    python = tmp_path / "py thon's" / "python"
    python.parent.mkdir()
    python.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"with open({str(record)!r}, 'w') as out:\n"
        "    json.dump({'cwd': os.getcwd(), 'argv': sys.argv, 'env': dict(os.environ)}, out)\n"
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
    )
    python.chmod(0o755)
    env = {
        "SEMI": f"a; touch {marker}",
        "SUBST": f"$(touch {marker})",
        "TICKS": f"`touch {marker}`",
        "QUOTES": 'it\'s "quoted" \\ back\\slash',
        "SPACES": "  two  spaces  ",
        "NEWLINE": "line 1\nline 2",
        "GLOB": "*",
        "VAR": "$HOME ${HOME}",
        "EMPTY": "",
    }
    host = make_host("q", python=str(python), workdir=str(workdir), env=env)
    with anyio.fail_after(30):
        report = await probe_host(host, TIMEOUTS, heartbeats=1)
    assert report.ok, report.error
    seen = json.loads(record.read_text())
    assert await anyio.Path(seen["cwd"]).samefile(workdir)
    assert seen["argv"][0] == str(python)
    assert seen["argv"][1:3] == ["-m", "distrl"]
    assert seen["argv"][-6:-4] == ["--host", "q"]
    assert {key: seen["env"].get(key) for key in env} == env
    assert not marker.exists(), "a shell ran a command found in an inventory value"


@pytest.mark.anyio
async def test_a_worker_that_ignores_end_of_input_is_killed(make_host: MakeHost, tmp_path: Path) -> None:
    """The worker's group is signalled after ``cleanup_s``: a hung worker does not outlive its link."""
    pid_file = tmp_path / "hung.pid"
    hung = tmp_path / "hung-python"
    hung.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec sleep 60\n")
    hung.chmod(0o755)
    host = make_host("hung", python=str(hung))
    timeouts = dataclasses.replace(TIMEOUTS, cleanup_s=0.5)
    with anyio.fail_after(20):
        async with open_host(host, timeouts):
            pid = await anyio.to_thread.run_sync(_read_pid, pid_file)
        # Stopping took at most cleanup_s for end of input and another for SIGTERM, then checked here.
        assert gone(pid), "the hung worker survived its link"


def test_worker_dies_with_a_killed_learner(make_host: MakeHost) -> None:
    """SIGKILL the learner while it holds a link (no cleanup runs): the worker must be gone within
    ``WORKER_GONE_S`` (over SSH, the kernel closes the learner's socket, sshd the worker's stdin)."""
    host = make_host("orphan")
    fields = {
        f.name: getattr(host, f.name)
        for f in dataclasses.fields(HostEntry)
        if f.name not in ("env", "devices")
    }
    learner = textwrap.dedent(
        """
        import json, sys
        import anyio
        from distrl import __version__
        from distrl.config import HostEntry, Timeouts
        from distrl.transport import open_host
        from distrl.wire import PROTOCOL_VERSION, Hello

        async def main() -> None:
            host = HostEntry(**json.loads(sys.argv[1]))
            async with open_host(host, Timeouts(cleanup_s=1)) as link:
                hello = Hello(id=0, role="learner", protocol=PROTOCOL_VERSION, distrl_version=__version__,
                              host=host.name, devices=(), compute={})
                await link.stream.send(hello)
                reply = await link.stream.receive()
                print(reply.compute["pid"], flush=True)
                await anyio.sleep(60)

        anyio.run(main)
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", learner, json.dumps(fields)], stdout=subprocess.PIPE, text=True
    ) as parent:
        assert parent.stdout is not None
        ready, _, _ = select.select([parent.stdout], [], [], 20)
        line = parent.stdout.readline() if ready else ""
        if not line:
            parent.kill()
            pytest.fail("the learner did not report its worker's pid within 20 s")
        worker_pid = int(line)
        assert not gone(worker_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
    assert wait_gone(worker_pid, WORKER_GONE_S), f"the worker outlived its learner by {WORKER_GONE_S} s"


# -- SSH only ----------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_missing_remote_python_ends_the_stream_and_its_error_is_shown(
    sshd: Sshd, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    host = sshd.host("nopython", python="/nonexistent/python3")
    with anyio.fail_after(20), pytest.raises(TransportError) as caught:
        await probe_host(host, TIMEOUTS)
    assert caught.value.phase == "hello"
    assert "the worker exited during hello" in str(caught.value)
    # The remote shell's complaint arrives on our stderr, prefixed with the host's name.
    assert any(
        line.startswith("[nopython] ") and "/nonexistent/python3" in line
        for line in capsys.readouterr().err.splitlines()
    )
    assert "exited with status 127" in caplog.text


@pytest.mark.anyio
async def test_a_missing_remote_workdir_is_named(
    sshd: Sshd, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    host = sshd.host("nowhere", workdir="/nonexistent/distrl-work")
    with anyio.fail_after(20), pytest.raises(TransportError, match="the worker exited during hello"):
        await probe_host(host, TIMEOUTS)
    assert "[nowhere] distrl: the workdir /nonexistent/distrl-work is not a folder on this host" in (
        capsys.readouterr().err
    )
    assert "exited with status 3 (its workdir is missing)" in caplog.text


@pytest.mark.anyio
async def test_an_empty_workdir_is_the_login_folder(sshd: Sshd, tmp_path: Path) -> None:
    record = tmp_path / "cwd"
    python = tmp_path / "python"
    python.write_text(
        f"#!/bin/sh\npwd > '{record}'\nexec {sys.executable} \"$@\"\n",
    )
    python.chmod(0o755)
    with anyio.fail_after(20):
        report = await probe_host(sshd.host(python=str(python)), TIMEOUTS, heartbeats=1)
    assert report.ok, report.error
    assert await anyio.Path(record.read_text().strip()).samefile(Path.home())


def test_the_remote_command_defaults_to_the_deployed_python_or_python3_and_quotes_everything() -> None:
    host = HostEntry(
        name="h", address="example.org", transport="ssh", workdir="~/runs/a b", env={"X": "$(id)"}
    )
    command = remote_command(host, TIMEOUTS)
    assert command.startswith(
        'echo distrl-session $$; p="$HOME"/.distrl/venv/bin/python; [ -x "$p" ] || p=python3; '
        "{ cd -- \"$HOME\"/'runs/a b' 2>/dev/null || { echo 'distrl: the workdir"
        " ~/runs/a b is not a folder on this host' >&2; exit 3; }; } && env 'X=$(id)' \"$p\" -m distrl "
    )
    named = remote_command(dataclasses.replace(host, python="~/py/bin/python3", workdir=""), TIMEOUTS)
    assert named.startswith("echo distrl-session $$; env 'X=$(id)' \"$HOME\"/py/bin/python3 -m distrl ")
    with pytest.raises(TransportError, match="not an environment variable name"):
        remote_command(dataclasses.replace(host, env={"A;B": "1"}), TIMEOUTS)


@pytest.mark.anyio
async def test_a_jump_host_tunnels_the_connection(sshd: Sshd) -> None:
    logins_before = sshd.log.read_text().count("Accepted publickey")
    host = sshd.host("jumped", proxy_jump=f"127.0.0.1:{sshd.port}")
    with anyio.fail_after(30):
        report = await probe_host(host, TIMEOUTS, heartbeats=1)
    assert report.ok, report.error
    # One login at the jump host, one at the host through the tunnel.
    assert sshd.log.read_text().count("Accepted publickey") - logins_before == 2


@pytest.mark.anyio
async def test_an_unreachable_jump_host_is_named(sshd: Sshd) -> None:
    host = sshd.host("jumped", proxy_jump=f"{getpass.getuser()}@127.0.0.1:{free_port()}")
    with anyio.fail_after(10), pytest.raises(TransportError) as caught:
        await probe_host(host, TIMEOUTS)
    assert caught.value.phase == "connect"
    assert f"jump host 127.0.0.1 port {host.proxy_jump.rsplit(':', 1)[1]}" in str(caught.value)


@pytest.mark.anyio
async def test_a_closed_port_fails_fast(sshd: Sshd) -> None:
    host = sshd.host("closed", port=free_port())
    started = time.monotonic()
    with anyio.fail_after(10), pytest.raises(TransportError) as caught:
        await probe_host(host, TIMEOUTS)
    assert time.monotonic() - started < TIMEOUTS.ssh_connect_s
    assert caught.value.phase == "connect"
    assert "cannot connect to 127.0.0.1 port" in str(caught.value)
    assert "refused" in str(caught.value)


@pytest.mark.anyio
async def test_a_server_that_never_answers_times_out_in_ssh_connect_s(sshd: Sshd) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # the kernel completes the TCP handshake; nobody ever speaks SSH
        host = sshd.host("silent", port=silent.getsockname()[1])
        timeouts = dataclasses.replace(TIMEOUTS, ssh_connect_s=0.5)
        started = time.monotonic()
        with anyio.fail_after(10), pytest.raises(TransportTimeout) as caught:
            await probe_host(host, timeouts)
        assert time.monotonic() - started < 3
    assert caught.value.phase == "connect"
    assert caught.value.timeout_s == 0.5
    assert "within 0.5 s" in str(caught.value)


class _StallingServer(asyncssh.SSHServer):
    """An SSH server (asyncssh's) that completes key exchange, then never decides on a login."""

    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    async def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        await anyio.sleep(60)
        return False


class _OpenServer(asyncssh.SSHServer):
    """An SSH server (asyncssh's) that lets anyone in."""

    def begin_auth(self, username: str) -> bool:
        return False


@asynccontextmanager
async def _asyncssh_server(
    folder: Path, server: type[asyncssh.SSHServer], **options: object
) -> AsyncIterator[HostEntry]:
    """An asyncssh server on a free loopback port, and a ``HostEntry`` that trusts its key."""
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = folder / "client_key"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(client_key)
    acceptor = await asyncssh.create_server(server, "127.0.0.1", 0, server_host_keys=[host_key], **options)
    try:
        port = acceptor.get_port()
        known_hosts = folder / "known_hosts"
        known_hosts.write_bytes(f"[127.0.0.1]:{port} ".encode() + host_key.export_public_key())
        yield HostEntry(
            name="fake",
            address="127.0.0.1",
            transport="ssh",
            port=port,
            identity_file=str(client_key),
            known_hosts_file=str(known_hosts),
            devices=Devices(sim=1),
        )
    finally:
        acceptor.close()
        await acceptor.wait_closed()


@pytest.mark.anyio
async def test_a_login_that_never_ends_times_out_in_ssh_login_s(tmp_path: Path) -> None:
    timeouts = dataclasses.replace(TIMEOUTS, ssh_login_s=0.5)
    with anyio.fail_after(10):
        async with _asyncssh_server(tmp_path, _StallingServer) as host:
            started = time.monotonic()
            with pytest.raises(TransportTimeout) as caught:
                await probe_host(host, timeouts)
            assert time.monotonic() - started < 3
    assert caught.value.phase == "login"
    assert caught.value.timeout_s == 0.5
    assert f"no login at 127.0.0.1 port {host.port} within 0.5 s" in str(caught.value)


@pytest.mark.anyio
async def test_a_login_shell_that_cannot_run_the_command_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def unsupported_shell(process: asyncssh.SSHServerProcess[str]) -> None:
        process.stderr.write("fish: $$ is not supported\n")
        process.exit(127)

    with anyio.fail_after(10):
        async with _asyncssh_server(tmp_path, _OpenServer, process_factory=unsupported_shell) as host:
            with pytest.raises(TransportError) as caught:
                await probe_host(host, TIMEOUTS)
    assert caught.value.phase == "start"
    assert "the login shell exited before starting the worker" in str(caught.value)
    assert "[fake] fish: $$ is not supported" in capsys.readouterr().err


@pytest.mark.anyio
async def test_a_key_the_host_does_not_know_fails_login(sshd: Sshd) -> None:
    host = sshd.host("stranger", identity_file=str(sshd.stranger_key))
    with anyio.fail_after(20), pytest.raises(TransportError) as caught:
        await probe_host(host, TIMEOUTS)
    assert caught.value.phase == "login"
    assert str(sshd.stranger_key) in str(caught.value)


@pytest.mark.anyio
async def test_a_missing_identity_file_is_named(sshd: Sshd, tmp_path: Path) -> None:
    host = sshd.host("nokey", identity_file=str(tmp_path / "no_such_key"))
    with anyio.fail_after(10), pytest.raises(TransportError) as caught:
        await probe_host(host, TIMEOUTS)
    assert caught.value.phase == "login"
    assert "no_such_key" in str(caught.value)


@pytest.mark.anyio
async def test_an_unknown_host_key_is_refused_with_the_fix(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = sshd.host("unknown", known_hosts_file=str(empty))
    with anyio.fail_after(10), pytest.raises(TransportError) as caught:
        await probe_host(host, TIMEOUTS)
    message = str(caught.value)
    assert caught.value.phase == "host_key"
    assert f"is not in {empty}" in message
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {empty}" in message
    assert 'known_hosts = "ignore"' in message


@pytest.mark.anyio
async def test_a_changed_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    other = " ".join((sshd.folder / "stranger_key.pub").read_text().split()[:2])
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {other}\n")
    host = sshd.host("changed", known_hosts_file=str(known_hosts))
    with anyio.fail_after(10), pytest.raises(TransportError) as caught:
        await probe_host(host, TIMEOUTS)
    assert caught.value.phase == "host_key"
    assert "does not match" in str(caught.value)
    assert "ssh-keygen -R" in str(caught.value)


@pytest.mark.anyio
async def test_ignoring_host_keys_connects_and_warns(
    sshd: Sshd, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = sshd.host("throwaway", known_hosts="ignore", known_hosts_file=str(empty))
    with caplog.at_level(logging.WARNING, logger="distrl.transport"), anyio.fail_after(20):
        report = await probe_host(host, TIMEOUTS, heartbeats=1)
    assert report.ok, report.error
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("throwaway" in text and "not checking the SSH host key" in text for text in warnings)


# -- in memory ---------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_memory_host_runs_the_worker_agent_over_frames_and_ends_it_with_its_input() -> None:
    """``MemoryHost`` keeps the ``Host`` contract a coroutine can: the real agent shakes hands and
    echoes heartbeats in this process, and leaving ends its input, so that it returns by itself."""
    statuses: list[object] = []

    async def agent(stream: FrameStream, host: HostEntry, timeouts: Timeouts) -> object:
        statuses.append(await worker_agent(stream, host, timeouts))
        return statuses[-1]

    host = _local_host("m")
    with anyio.fail_after(30):
        async with MemoryHost(host, TIMEOUTS, agent).open() as link:
            assert link.host == host
            hello = await handshake(link, TIMEOUTS)
            assert hello.host == "m"
            assert hello.devices == ("sim-0", "sim-1")
            assert hello.compute["pid"] == os.getpid()  # the worker is this process
            for seq in range(3):
                await link.stream.send(Heartbeat(id=10 + seq, seq=seq, sent_at_s=float(seq)))
                echo = await link.stream.receive()
                assert isinstance(echo, Heartbeat)
                assert (echo.id, echo.seq) == (10 + seq, seq)
            assert statuses == []
    assert statuses == [0]  # end of input: the learner is gone, and the agent left of its own accord


@pytest.mark.anyio
async def test_a_memory_host_cancels_an_agent_that_ignores_end_of_input(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past ``cleanup_s`` after end of input, the agent is cancelled: a hung worker does not outlive
    its link here either."""
    ended: list[str] = []

    async def hung(stream: FrameStream, host: HostEntry, timeouts: Timeouts) -> object:
        try:
            await anyio.sleep_forever()
            return 0
        finally:
            ended.append("cancelled")

    timeouts = dataclasses.replace(TIMEOUTS, cleanup_s=0.3)
    started = time.monotonic()
    with anyio.fail_after(10):
        async with MemoryHost(_local_host("hung"), timeouts, hung).open():
            pass
    assert ended == ["cancelled"]
    assert 0.3 <= time.monotonic() - started < 5
    assert "host hung: in-memory worker still running; cancelling it" in caplog.text


@pytest.mark.anyio
async def test_a_memory_hosts_crashed_agent_is_a_lost_link_not_the_learners_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A worker that fails closes its end, as a process that dies closes its pipes: the learner reads
    end of stream (a lost link), and the failure is logged, not raised into the learner."""

    async def crashing(stream: FrameStream, host: HostEntry, timeouts: Timeouts) -> object:
        await stream.receive()
        raise RuntimeError("the worker broke")

    with anyio.fail_after(10):
        async with MemoryHost(_local_host("crash"), TIMEOUTS, crashing).open() as link:
            await link.stream.send(Heartbeat(id=1, seq=0, sent_at_s=0.0))
            with pytest.raises(anyio.EndOfStream):
                await link.stream.receive()
            with pytest.raises(anyio.BrokenResourceError):
                await link.stream.send(Heartbeat(id=2, seq=1, sent_at_s=0.0))
    failed = [r for r in caplog.records if "in-memory worker failed" in r.getMessage()]
    assert len(failed) == 1
    assert failed[0].exc_info is not None
    assert "the worker broke" in str(failed[0].exc_info[1])


@pytest.mark.anyio
async def test_a_frame_pipe_carries_whole_frames_both_ways_and_ends_with_either_side() -> None:
    """Frames cross as bytes, encoded and decoded as on a pipe: a weights blob larger than one write,
    many frames queued (a writer waits for its reader), then end of input."""
    learner, worker = frame_pipe()
    blob = bytes(range(256)) * 12_000  # 3 MB: sent in parts
    weights = Weights(id=7, version=3, kind="full", base_version=None, checksum="00", blob=blob)
    async with anyio.create_task_group() as tg:
        tg.start_soon(learner.send, weights)
        received = await worker.receive()
    assert received == weights
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def beats() -> None:
                for seq in range(100):
                    await worker.send(Heartbeat(id=seq, seq=seq, sent_at_s=0.0))
                await worker.aclose()

            tg.start_soon(beats)
            seen = [message.id async for message in learner]  # until end of stream
    assert seen == list(range(100))
    with pytest.raises(anyio.BrokenResourceError):
        await learner.send(Heartbeat(id=0, seq=0, sent_at_s=0.0))


# -- distrl.testing.slow_link: a worker process behind a link that holds back weights ---------------------

ECHO_WORKER = """
import sys, time
import anyio
from anyio.streams.file import FileReadStream
from distrl.wire import FrameStream

async def main():
    frames = FrameStream(FileReadStream(open(0, "rb", buffering=0)))  # type: ignore[arg-type]
    async for message in frames:
        print(type(message).__name__, getattr(message, "version", ""), f"{time.monotonic():.3f}", flush=True)
    sys.exit(7)

anyio.run(main)
"""


def test_the_slow_link_holds_back_each_weights_message_after_the_first_and_nothing_else(
    tmp_path: Path,
) -> None:
    from distrl.testing.slow_link import write_slow_python
    from distrl.wire import encode

    # the relay a host's python names, in front of a worker program that logs each frame it receives
    (tmp_path / "echo.py").write_text(ECHO_WORKER)
    python = write_slow_python(tmp_path, 1.5)
    relay = subprocess.Popen(
        [str(python), str(tmp_path / "echo.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    frames: list[Weights | Heartbeat] = [
        Weights(version=1, base_version=None, kind="full", checksum="0", blob=b"x" * 4096),
        Heartbeat(seq=0, sent_at_s=0.0),
        Weights(version=2, base_version=1, kind="diff", checksum="0", blob=b"y"),
        Heartbeat(seq=1, sent_at_s=0.0),
    ]
    sent = time.monotonic()
    # then the learner's end of input: the worker's input ends in turn
    out, _ = relay.communicate(b"".join(encode(frame) for frame in frames), timeout=60)
    seen = [line.split() for line in out.decode().splitlines()]
    # what passed at once passed in order; the second weights came after the rest, held back 1.5 s
    assert [kind for kind, *_ in seen] == ["Weights", "Heartbeat", "Heartbeat", "Weights"]
    assert seen[-1][1] == "2"
    assert float(seen[-1][-1]) - sent >= 1.5
    assert float(seen[2][-1]) - sent < 1.5
    assert relay.returncode == 7  # the worker's own exit status
