"""The inventory: the example file, defaults and cascading, and one clear error per mistake."""

from __future__ import annotations

import ast
import dataclasses
import math
import re
import sys
import tomllib
import typing
from pathlib import Path
from typing import Literal

import pytest
from support import bound_folders

from distrl.config import (
    Devices,
    HostEntry,
    Inventory,
    JudgeSettings,
    LearnerSettings,
    PolicySettings,
    RunSettings,
    ScreenSettings,
    SimSettings,
    TaskSettings,
    Timeouts,
    WorkerSettings,
    devices_json,
    load_inventory,
    parse_devices,
    parse_inventory,
    parse_worker_settings,
    read_section,
    worker_settings_json,
)
from distrl.errors import ConfigError
from distrl.learner.algorithms import configure, names, resolve, table_name

EXAMPLE = Path(__file__).resolve().parent.parent / "hosts.example.toml"
ONE_HOST = '[[hosts]]\nname = "a"\naddress = "localhost"\ndevices = { sim = 2 }\n'
JUDGE = '[judge]\nbase_url = "{url}"\nmodel = "judge-model"\n'


def test_example_loads_as_documented() -> None:
    inventory = load_inventory(EXAMPLE)
    assert inventory.source == str(EXAMPLE)
    (local,) = inventory.hosts
    assert local.name == "local"
    assert local.is_local
    assert local.python == sys.executable
    assert local.devices.serials == tuple(f"sim-{i}" for i in range(32))
    assert local.env == {"PYTHONUNBUFFERED": "1"}
    assert inventory.output_dir == EXAMPLE.parent / "runs" / "distrl"
    # The example shows every default: it must equal an inventory that sets nothing but the host (and
    # the two settings that suit the shipped behaviour-cloned policy it starts from).
    bare = parse_inventory(
        '[learner]\nlr_actor = 1e-3\n[policy]\nmodel = "tiny-bc"\n'
        '[defaults.env]\nPYTHONUNBUFFERED = "1"\n'
        '[[hosts]]\nname = "local"\naddress = "localhost"\ndevices = { sim = 32 }\n',
        source=str(EXAMPLE),
    )
    assert dataclasses.replace(inventory, learner=dataclasses.replace(inventory.learner, tables={})) == bare
    # and each algorithm's table holds its defaults
    for name in names():
        algorithm = resolve(name)
        own = inventory.learner.tables.get(table_name(name), {})
        assert read_section(algorithm.Settings, own, f"learner.{table_name(name)}") == algorithm.Settings()


def test_example_documents_every_key_in_its_place() -> None:
    data = tomllib.loads(EXAMPLE.read_text())
    (host,) = data["hosts"]

    def keys(cls: type[object]) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    tables = {"run", "tasks", "judge", "timeouts", "learner", "policy", "screen", "sim", "defaults", "hosts"}
    assert set(data) == tables
    assert set(data["run"]) == keys(RunSettings)
    assert set(data["tasks"]) == keys(TaskSettings)
    assert set(data["judge"]) == keys(JudgeSettings)
    assert set(data["timeouts"]) == keys(Timeouts)
    with_settings = {table_name(n) for n in names() if dataclasses.fields(resolve(n).Settings)}
    assert set(data["learner"]) == keys(LearnerSettings) - {"tables"} | with_settings
    for name in names():  # each algorithm's own table, every key of its settings
        assert set(data["learner"].get(table_name(name), {})) == keys(resolve(name).Settings)
    assert set(data["policy"]) == keys(PolicySettings)
    assert set(data["screen"]) == keys(ScreenSettings)
    assert set(data["sim"]) == keys(SimSettings)
    assert set(data["defaults"]) | set(host) == keys(HostEntry)
    assert set(host["devices"]) == keys(Devices)


def test_example_ssh_host_block_loads_when_uncommented() -> None:
    text = EXAMPLE.read_text()
    start = text.index("# --- example ssh host ---")
    end = text.index("# --- end ---")
    block = "\n".join(line.removeprefix("#").removeprefix(" ") for line in text[start:end].splitlines()[1:])
    inventory = parse_inventory(text[:start] + block)
    local, remote = inventory.hosts
    assert local.name == "local"
    assert remote.name == "gpu-box-1"
    assert remote.transport == "ssh"
    assert not remote.is_local
    assert remote.python == "/opt/distrl/.venv/bin/python"
    assert remote.devices.serials == ("emulator-5554", "emulator-5556", "emulator-5558", "emulator-5560")
    assert remote.max_episodes == 4  # concurrency 16 is capped by the 4 devices
    # env merges key by key with [defaults.env]
    assert remote.env == {"PYTHONUNBUFFERED": "1", "CUDA_VISIBLE_DEVICES": "0"}


def test_example_emulator_host_block_loads_when_uncommented() -> None:
    text = EXAMPLE.read_text()
    start = text.index("# --- example emulator host ---")
    end = text.index("# --- end ---", start)
    block = "\n".join(line.removeprefix("#").removeprefix(" ") for line in text[start:end].splitlines()[1:])
    inventory = parse_inventory(text[:start] + block)
    box = inventory.hosts[-1]
    assert box.name == "kvm-box-1"
    assert box.devices.avd == "Pixel_7_API_34"
    assert box.devices.serials == tuple(f"emulator-{5554 + 2 * k}" for k in range(8))
    assert box.devices.launched == box.devices.serials
    assert box.env["ANDROID_SDK_ROOT"] == "/opt/android-sdk"


@pytest.mark.parametrize(
    ("devices", "where", "problem"),
    [
        ("count = 3", "hosts[0].devices.count", "set avd too"),
        ("sim = 1\nmemory_mb = 2048", "hosts[0].devices.memory_mb", "set avd too"),
        ('avd = "P"\ncount = 65', "hosts[0].devices.count", "at most 64"),
        ('avd = "P"\nfirst_port = 5681', "hosts[0].devices.first_port", "odd"),
        ('avd = "P"\nfirst_port = 5680\ncount = 3', "hosts[0].devices.count", "past the last console port"),
        (
            'avd = "P"\nemulator_flags = ["-read-only"]',
            "hosts[0].devices.emulator_flags[0]",
            "set by the launcher",
        ),
        ('avd = "P"\nemulator_ports = [5554]', "hosts[0].devices", "listed twice"),
        ('avd = "my avd"', "hosts[0].devices.avd", "AVD name"),
    ],
)
def test_launched_emulator_settings_are_checked(devices: str, where: str, problem: str) -> None:
    text = f'[[hosts]]\nname = "h"\naddress = "localhost"\n[hosts.devices]\n{devices}\n'
    with pytest.raises(ConfigError) as caught:
        parse_inventory(text)
    assert caught.value.path == where
    assert problem in str(caught.value)


def test_launched_emulators_are_named_after_their_ports_and_travel_to_the_worker() -> None:
    devices_table = 'sim = 1\navd = "P"\ncount = 2\nfirst_port = 5600\nemulator_ports = [5554]\n'
    text = f'[[hosts]]\nname = "h"\naddress = "localhost"\n[hosts.devices]\n{devices_table}'
    devices = parse_inventory(text).hosts[0].devices
    assert devices.serials == ("sim-0", "emulator-5554", "emulator-5600", "emulator-5602")
    # each device's kind, as a worker opens it: the sim's phones are a kind of their own
    assert devices.kinds == {
        "sim": ("sim-0",),
        "adb": ("emulator-5554",),
        "emulator": ("emulator-5600", "emulator-5602"),
    }
    assert Devices(adb_serials=("R58M",)).kinds == {"adb": ("R58M",)}
    assert parse_devices(devices_json(devices)) == devices
    with pytest.raises(ConfigError, match="count"):
        parse_devices(devices_json(devices).replace('"count": 2', '"count": 0'))


def test_defaults_cascade_and_host_overrides() -> None:
    inventory = parse_inventory(
        """
[defaults]
user = "rl"
port = 2222
python = "/usr/bin/python3.11"
known_hosts = "ignore"
env = { A = "1", B = "2" }
devices = { sim = 3 }

[[hosts]]
name = "one"
address = "10.1.1.1"

[[hosts]]
name = "two"
address = "10.1.1.2"
port = 22
env = { B = "override", C = "3" }
devices = { adb_serials = ["R58M"], emulator_ports = [5554] }
concurrency = 1
"""
    )
    one, two = inventory.hosts
    assert (one.user, one.port, one.python, one.known_hosts) == ("rl", 2222, "/usr/bin/python3.11", "ignore")
    assert one.devices.serials == ("sim-0", "sim-1", "sim-2")
    assert one.env == {"A": "1", "B": "2"}
    assert (two.user, two.port) == ("rl", 22)
    assert two.env == {"A": "1", "B": "override", "C": "3"}
    assert two.devices.serials == ("R58M", "emulator-5554")
    assert two.max_episodes == 1
    assert inventory.device_count == 5


def test_transport_auto_local_and_explicit_ssh_to_localhost() -> None:
    inventory = parse_inventory(
        ONE_HOST + '[[hosts]]\nname = "b"\naddress = "localhost"\ntransport = "ssh"\ndevices = { sim = 1 }\n'
        '[[hosts]]\nname = "c"\naddress = "127.0.0.1"\ndevices = { sim = 1 }\n'
    )
    a, b, c = inventory.hosts
    assert (a.transport, b.transport, c.transport) == ("local", "ssh", "ssh")
    assert b.python == ""  # over SSH the transport picks: the deployed python, else python3


def test_numbers_convert_and_inf_is_allowed() -> None:
    inventory = parse_inventory(
        "[learner.a_ride]\nrho_clip = inf\ngamma = 1\n[timeouts]\nssh_connect_s = 3\n" + ONE_HOST
    )
    _, a_ride = configure(inventory.learner)
    assert math.isinf(a_ride.rho_clip)
    assert a_ride.gamma == 1.0
    assert isinstance(inventory.timeouts.ssh_connect_s, float)


def test_inventory_is_frozen() -> None:
    inventory = parse_inventory(ONE_HOST)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inventory.hosts[0].port = 23  # type: ignore[misc]
    assert isinstance(inventory, Inventory)


HOST_A = '[[hosts]]\nname = "a"\naddress = "localhost"\n'

# (inventory text, the exact TOML path the error must name, words the problem must contain)
MALFORMED = [
    ("", "hosts", "add at least one [[hosts]]"),
    ("hosts = []\n", "hosts", "add at least one"),
    ('hosts = "x"\n', "hosts", "array of tables"),
    ("[runn]\n" + HOST_A + "devices = { sim = 1 }\n", "runn", "did you mean 'run'"),
    (HOST_A + "devicez = { sim = 1 }\n", "hosts[0].devicez", "did you mean 'devices'"),
    ('[defaults]\nadress = "x"\n' + HOST_A, "defaults.adress", "did you mean 'address'"),
    ('[defaults]\naddress = "x"\n' + HOST_A, "defaults.address", "differs per host"),
    ('[[hosts]]\nname = "a"\ndevices = { sim = 1 }\n', "hosts[0]", "missing required key 'address'"),
    (HOST_A + 'port = "22"\ndevices = { sim = 1 }\n', "hosts[0].port", "expected an integer, got a string"),
    (HOST_A + "port = 70000\ndevices = { sim = 1 }\n", "hosts[0].port", "at most 65535"),
    (HOST_A + "port = 22.0\ndevices = { sim = 1 }\n", "hosts[0].port", "expected an integer"),
    (HOST_A + "devices = { sim = 1 }\n" + HOST_A + "devices = { sim = 1 }\n", "hosts[1].name", "duplicate"),
    (HOST_A, "defaults.devices", "no devices"),
    (HOST_A + "devices = { sim = 0 }\n", "hosts[0].devices", "no devices"),
    (HOST_A + "devices = { sim = -1 }\n", "hosts[0].devices.sim", "at least 0"),
    (HOST_A + "devices = { emulator_ports = [5554, 5555] }\n", "hosts[0].devices.emulator_ports[1]", "even"),
    (HOST_A + "devices = { adb_serials = [5554] }\n", "hosts[0].devices.adb_serials[0]", "expected a string"),
    (
        HOST_A + 'devices = { adb_serials = ["x y"] }\n',
        "hosts[0].devices.adb_serials[0]",
        "not an adb serial",
    ),
    (
        HOST_A + 'devices = { adb_serials = ["emulator-5554"], emulator_ports = [5554] }\n',
        "hosts[0].devices",
        "listed twice",
    ),
    (HOST_A + "devices = { sim = 1 }\nenv = { A = 1 }\n", "hosts[0].env.A", "expected a string"),
    (HOST_A + 'devices = { sim = 1 }\nenv = { "BAD KEY" = "1" }\n', 'hosts[0].env."BAD KEY"', "environment"),
    ('[defaults]\nknown_hosts = "trust"\n' + HOST_A, "defaults.known_hosts", "'check', 'ignore'"),
    ('[[hosts]]\nname = "a b"\naddress = "localhost"\n', "hosts[0].name", "is not a name"),
    ('[[hosts]]\nname = "a"\naddress = ""\n', "hosts[0].address", "must not be empty"),
    (
        '[[hosts]]\nname = "a"\naddress = "10.0.0.1"\ntransport = "local"\ndevices = { sim = 1 }\n',
        "hosts[0].address",
        "transport 'local'",
    ),
    (HOST_A + "devices = { sim = 1 }\nconcurrency = -2\n", "hosts[0].concurrency", "at least 0"),
    ("[timeouts]\nssh_connect_s = 0\n" + ONE_HOST, "timeouts.ssh_connect_s", "greater than 0"),
    ("[timeouts]\nssh_connect_s = nan\n" + ONE_HOST, "timeouts.ssh_connect_s", "must be a number, not nan"),
    (
        "[timeouts]\nheartbeat_interval_s = 10\nheartbeat_timeout_s = 10\n" + ONE_HOST,
        "timeouts.heartbeat_timeout_s",
        "longer than",
    ),
    (
        '[learner]\nalgorithm = "ppx"\n' + ONE_HOST,
        "learner.algorithm",
        "no algorithm 'ppx' (known: a-ride, digirl, filtered-bc, grpo, ppo, rloo;",
    ),
    ('[learner]\nalgorithm = "nowhere.at_all:Thing"\n' + ONE_HOST, "learner.algorithm", "does not load"),
    ('[learner]\nalgorithm = "distrl.records:Task"\n' + ONE_HOST, "learner.algorithm", "is not an algorithm"),
    ("[learner.a_ride]\nretrace_lambda = 1.5\n" + ONE_HOST, "learner.a_ride.retrace_lambda", "at most 1"),
    (
        "[learner.a_ride]\npriority_weights = [1.0, 2.0]\n" + ONE_HOST,
        "learner.a_ride.priority_weights",
        "3 items",
    ),
    (
        '[learner.a_ride]\npriority_weights = [1.0, "x", 3]\n' + ONE_HOST,
        "learner.a_ride.priority_weights[1]",
        "a number",
    ),
    ("[learner.a_ride]\nclip = 0.2\n" + ONE_HOST, "learner.a_ride.clip", "unknown key"),
    (
        '[learner]\nalgorithm = "grpo"\n[learner.grpo]\nclip = 2\n' + ONE_HOST,
        "learner.grpo.clip",
        "at most 1",
    ),
    ("[learner.a-ride]\ngamma = 0.5\n" + ONE_HOST, "learner.a-ride", "is spelled [learner.a_ride]"),
    ("[learner.sac-x]\ngamma = 0.5\n" + ONE_HOST, "learner.sac-x", "is not an algorithm's name"),
    ("[learner.sac]\ntau = 0.5\n" + ONE_HOST, "learner.sac", "no algorithm of that name has settings"),
    (
        "[learner]\ngamma = 0.5\ndigirl_top = 0.2\n" + ONE_HOST,
        "learner",
        "learner.gamma is now learner.a_ride.gamma, learner.digirl_top is now learner.digirl.top",
    ),
    ("[tasks]\ngroup_size = 3\n" + ONE_HOST, "tasks.group_size", "more than the fleet's 2 device(s)"),
    ("[tasks]\ngroup_size = 0\n" + ONE_HOST, "tasks.group_size", "at least 1"),
    (  # was taken: the last group's two members played, never trained on
        "[run]\nmax_trajectories = 5\n[tasks]\ngroup_size = 2\n" + ONE_HOST,
        "run.max_trajectories",
        "is 5, not a multiple of tasks.group_size (2): the last group would be played in part",
    ),
    ("[tasks]\ngroup_size = 2.5\n" + ONE_HOST, "tasks.group_size", "expected an integer"),
    ("[run]\nseed = true\n" + ONE_HOST, "run.seed", "expected an integer, got a boolean"),
    ('[run]\nmode = "round-robin"\n' + ONE_HOST, "run.mode", "'async', 'sync'"),
    ("run = 3\n" + ONE_HOST, "run", "expected a table"),
    ("[policy]\ntemperature = -0.5\n" + ONE_HOST, "policy.temperature", "at least 0"),
    ('[policy]\nengine = "vllm"\n' + ONE_HOST, "policy.engine", "eager"),
    ("[sim]\nwidth = 2000\nheight = 1000\n" + ONE_HOST, "sim.height", "portrait"),
    (
        '[sim]\nimage_format = "png"\njpeg_quality = 70\n' + ONE_HOST,
        "sim",
        "every device's screens are in [screen]'s format: sim.image_format is now screen.image_format,"
        " sim.jpeg_quality is now screen.jpeg_quality",
    ),
    ('[screen]\nimage_format = "webp"\n' + ONE_HOST, "screen.image_format", "'jpeg', 'png'"),
    ("[screen]\nmax_pixels = -1\n" + ONE_HOST, "screen.max_pixels", "at least 0"),
    ("[screen]\nmax_pixels = 1\n" + ONE_HOST, "screen.max_pixels", "or at least 3136"),  # a bound of its own
    ("[policy]\nmax_image_pixels = 784\n" + ONE_HOST, "policy.max_image_pixels", "or at least 3136"),
    ("[sim]\ncrash_rate = 1.5\n" + ONE_HOST, "sim.crash_rate", "at most 1"),
    ('[sim]\nlatency = "fast"\n' + ONE_HOST, "sim.latency", "'calibrated', 'off'"),
    ("[sim]\nwidth = 100\n" + ONE_HOST, "sim.width", "at least 240"),
    ("[sim]\nhang_rate = 0.6\ncrash_rate = 0.6\n" + ONE_HOST, "sim", "add up to 1.2"),
    ('[policy]\nlora_targets = "q_proj"\n' + ONE_HOST, "policy.lora_targets", "expected an array"),
    (
        "[learner.a_ride]\npriority_weights = [1.0, -2.0, 3]\n" + ONE_HOST,
        "learner.a_ride.priority_weights[1]",
        "at least 0",
    ),
    ('[learner]\ndevice = "gpu"\n' + ONE_HOST, "learner.device", "'cuda:N'"),
    ('[run]\nname = "../../etc"\n' + ONE_HOST, "run.name", "is not a name"),
    ("[timeouts]\ncleanup_s = inf\n" + ONE_HOST, "timeouts.cleanup_s", "must be finite"),
    ("[run]\nduration_s = inf\n" + ONE_HOST, "run.duration_s", "must be finite"),
    ('[defaults]\nproxy_jump = "@@@"\n' + ONE_HOST, "defaults.proxy_jump", "[user@]host[:port]"),
    ('[defaults]\nproxy_jump = "me@bastion:99999"\n' + ONE_HOST, "defaults.proxy_jump", "port 99999"),
    ('[defaults]\nproxy_jump = "bastion:0"\n' + ONE_HOST, "defaults.proxy_jump", "a port is 1-65535"),
    ('[[hosts]]\nname = "a"\naddress = " localhost"\n', "hosts[0].address", "hostname or IP"),
    ('[[hosts]]\nname = "a"\naddress = "x"\nuser = "a b"\n', "hosts[0].user", "a user name"),
    (HOST_A + 'devices = { sim = 1 }\nenv = { A = "x\\u0000y" }\n', "hosts[0].env.A", "NUL"),
    (HOST_A + "devices = { sim = 100000000 }\n", "hosts[0].devices.sim", "at most 4096"),
    ("x = " + "[" * 5000 + "]" * 5000 + "\n" + ONE_HOST, "", "nested too deeply"),
    (
        "[learner]\nbatch_size = 1" + "0" * 400 + "\n" + ONE_HOST,
        "learner.batch_size",
        "beyond TOML's (64 bits)",
    ),
    ("[learner]\nlr_actor = 1" + "0" * 19 + "\n" + ONE_HOST, "learner.lr_actor", "a 65-bit integer"),
    ("[learner]\nbatch_size = 1" + "0" * 5000 + "\n" + ONE_HOST, "", "invalid TOML: Exceeds the limit"),
    ('[[hosts]]\nname = "a"\naddress = "a..b"\ndevices = { sim = 1 }\n', "hosts[0].address", "empty part"),
    ('[[hosts]]\nname = "a"\naddress = ".a"\ndevices = { sim = 1 }\n', "hosts[0].address", "empty part"),
    (
        f'[[hosts]]\nname = "a"\naddress = "{"x" * 64}.org"\ndevices = {{ sim = 1 }}\n',
        "hosts[0].address",
        "63",
    ),
    (
        f'[[hosts]]\nname = "a"\naddress = "{"x." * 127}x"\ndevices = {{ sim = 1 }}\n',
        "hosts[0].address",
        "253",
    ),
    ('[[hosts]]\nname = "a"\naddress = "gpu-.lab"\ndevices = { sim = 1 }\n', "hosts[0].address", "'gpu-'"),
    ('[[hosts]]\nname = "a"\naddress = "héllo"\ndevices = { sim = 1 }\n', "hosts[0].address", "xn--"),
    ('[[hosts]]\nname = "a"\naddress = "a:b"\ndevices = { sim = 1 }\n', "hosts[0].address", "a host name"),
    (
        '[[hosts]]\nname = "a"\naddress = "gpu1"\ndevices = { emulator_ports = [5554] }\n'
        '[[hosts]]\nname = "b"\naddress = "gpu1"\ndevices = { adb_serials = ["emulator-5554"] }\n',
        "hosts[1].devices",
        "two workers cannot drive one device",
    ),
    (HOST_A + 'devices = { sim = 1 }\nworkdir = "/nonexistent/distrl"\n', "hosts[0].workdir", "not a folder"),
    (JUDGE.format(url="http://[::1/v1") + ONE_HOST, "judge.base_url", "is not a URL (Invalid IPv6 URL)"),
    (JUDGE.format(url="http://host:99999/v1") + ONE_HOST, "judge.base_url", "Port out of range"),
    (JUDGE.format(url="http://host:abc/v1") + ONE_HOST, "judge.base_url", "is not a URL"),
    (JUDGE.format(url="http://:8000/v1") + ONE_HOST, "judge.base_url", "names no host"),
]


@pytest.mark.parametrize(("text", "path", "words"), MALFORMED, ids=[case[1] for case in MALFORMED])
def test_malformed_inventory_names_path_and_problem(text: str, path: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        configure(parse_inventory(text, source="hosts.toml").learner, source="hosts.toml")  # as check does
    error = caught.value
    assert error.path == path
    assert error.file == "hosts.toml"
    assert words in str(error)
    assert str(error).startswith(f"hosts.toml: {path}: " if path else "hosts.toml: ")
    assert isinstance(error, ValueError)


def test_addresses_that_are_host_names_or_ip_addresses_pass() -> None:
    for address in ("gpu-1.lab.example.org", "10.0.0.7", "::1", "[fe80::1]", "my_box", "xn--bcher-kva.de"):
        text = f'[[hosts]]\nname = "a"\naddress = "{address}"\ndevices = {{ sim = 1 }}\n'
        assert parse_inventory(text).hosts[0].address == address
    # one device on two machines is two devices
    two = (
        '[[hosts]]\nname = "a"\naddress = "gpu1"\ndevices = { emulator_ports = [5554] }\n'
        '[[hosts]]\nname = "b"\naddress = "gpu2"\ndevices = { emulator_ports = [5554] }\n'
    )
    assert len(parse_inventory(two).hosts) == 2


def test_an_output_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "runs").write_text("not a folder")
    for output in ("runs", "runs/deeper"):
        with pytest.raises(ConfigError, match=r"run\.output_dir: .*runs is a file, not a folder"):
            parse_inventory(
                f'[run]\noutput_dir = "{output}"\n' + ONE_HOST, source=str(tmp_path / "hosts.toml")
            )


def test_invalid_toml_syntax_names_file_and_line() -> None:
    with pytest.raises(ConfigError, match=r"^hosts\.toml: invalid TOML: .*line 2") as caught:
        parse_inventory('[run]\nname = "x\n', source="hosts.toml")
    assert caught.value.path == ""


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=r"nope\.toml: file not found"):
        load_inventory(missing)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_inventory(binary)


def test_local_paths_start_at_the_inventory_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "hosts.toml"
    (path.parent / "work").mkdir(parents=True)  # a local workdir must exist
    path.write_text(
        '[run]\nname = "exp"\noutput_dir = "out"\n[defaults]\nidentity_file = "keys/id"\n'
        '[policy]\nmodel = "models/bc"\nadapter = "adapters/a1"\n'
        '[[hosts]]\nname = "a"\naddress = "localhost"\nworkdir = "work"\ndevices = { sim = 1 }\n'
        '[[hosts]]\nname = "b"\naddress = "10.0.0.2"\nworkdir = "remote"\ndevices = { sim = 1 }\n'
        'known_hosts_file = "~/kh"\n'
    )
    inventory = load_inventory(path)
    local, remote = inventory.hosts
    assert inventory.output_dir == path.parent / "out" / "exp"
    assert inventory.policy.model == str(path.parent / "models" / "bc")
    assert inventory.policy.adapter == str(path.parent / "adapters" / "a1")
    assert load_inventory(EXAMPLE).policy.model == "tiny-bc"  # a built-in model is a name, not a path
    assert local.workdir == str(path.parent / "work")
    assert local.identity_file == remote.identity_file == str(path.parent / "keys" / "id")
    assert remote.workdir == "remote"  # on the remote host: relative to the remote home
    assert remote.known_hosts_file == str(Path.home() / "kh")


@pytest.mark.parametrize("pixels", [1, 3135])
def test_a_screen_cap_below_the_processors_smallest_image_is_refused(pixels: int) -> None:
    for read in (
        lambda: parse_inventory(f"[screen]\nmax_pixels = {pixels}\n" + ONE_HOST, source="hosts.toml"),
        lambda: parse_worker_settings(f'{{"screen": {{"max_pixels": {pixels}}}}}'),
        lambda: ScreenSettings(max_pixels=pixels),
    ):
        with pytest.raises(ConfigError) as caught:
            read()
        assert caught.value.path == "screen.max_pixels"
        assert "must be 0 (every screen's own size) or at least 3136 (56×56" in str(caught.value)
        assert str(caught.value).endswith(f"got {pixels}")
    assert parse_inventory("[screen]\nmax_pixels = 3136\n" + ONE_HOST).screen.max_pixels == 3136


def test_the_screen_format_is_the_workers_own_and_travels_to_it() -> None:
    inventory = parse_inventory(
        '[screen]\nimage_format = "png"\nmax_pixels = 0\n[sim]\nwidth = 540\nheight = 1200\n' + ONE_HOST
    )
    assert inventory.screen == ScreenSettings(image_format="png", max_pixels=0)
    assert (inventory.sim.width, inventory.sim.height) == (540, 1200)
    settings = parse_worker_settings(worker_settings_json(inventory))
    assert settings == WorkerSettings(
        policy=inventory.policy, screen=inventory.screen, sim=inventory.sim, timeouts=inventory.timeouts
    )
    assert parse_worker_settings("{}").screen == ScreenSettings()  # 1080 × 2400, JPEG at 85
    with pytest.raises(ConfigError, match=r"sim\.image_format is now screen\.image_format"):
        parse_worker_settings('{"sim": {"image_format": "png"}}')


def test_a_folder_that_cannot_be_entered_or_written_is_named_not_raised() -> None:
    with bound_folders(locked=0o000, ro=0o555, open=0o777) as (base, run):
        targets = [base / "locked" / "a" / "b", base / "ro" / "a", base / "open" / "a" / "b"]
        code = "import sys; from distrl.config import cannot_create as c; print([c(t) for t in sys.argv[1:]])"
        done = run(code, *targets)
        assert done.returncode == 0, done.stderr  # a PermissionError from Path.is_dir was the bug
        assert ast.literal_eval(done.stdout) == [
            f"cannot create {targets[0]}: the folder {base}/locked cannot be entered",
            f"cannot create {targets[1]}: the folder {base}/ro is not writable",
            "",
        ]


@dataclasses.dataclass(frozen=True, kw_only=True)
class _OwnSettings:
    """Settings an algorithm of a user's might declare: a list, an optional, and a check of its own."""

    xs: list[int] = dataclasses.field(default_factory=list)
    limit: float | None = None
    x: int = 0

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must be >= 0")


@dataclasses.dataclass(frozen=True, kw_only=True)
class _SetSettings:
    tags: set[str] = dataclasses.field(default_factory=set)


_LateSettings = dataclasses.make_dataclass("_LateSettings", [("when", "NotImported | None", None)])


@dataclasses.dataclass(frozen=True, kw_only=True)
class _OddSettings:
    """Declarations a user might write: a Literal of numbers, a bare Dict, fields named as the reader's."""

    level: Literal[1, 2] = 1
    env: typing.Dict = dataclasses.field(default_factory=dict)  # type: ignore[type-arg]  # noqa: UP006  # as a user might write it
    source: str = ""
    tables: int = 0


@pytest.mark.parametrize(
    ("cls", "table", "said"),
    [
        (_OwnSettings, {"x": -1}, "hosts.toml: learner.own: x must be >= 0"),
        (_OwnSettings, {"xs": [1, "a"]}, "hosts.toml: learner.own.xs[1]: expected an integer, got a string"),
        (_OwnSettings, {"limit": "a"}, "hosts.toml: learner.own.limit: expected a number, got a string"),
        (
            _SetSettings,
            {"tags": ["a"]},
            "learner.own.tags: is declared set[str], a type the inventory cannot set",
        ),
        (
            _LateSettings,
            {"when": 1},
            "learner.own: _LateSettings's field types cannot be read: name 'NotImported'",
        ),
    ],
)
def test_an_algorithms_own_settings_are_read_or_refused_in_one_line(
    cls: type, table: dict[str, object], said: str
) -> None:
    """A user's algorithm declares its settings as it likes: each mistake is one line naming the key."""
    with pytest.raises(ConfigError) as refused:
        read_section(cls, table, "learner.own", source="hosts.toml")
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)


def test_an_algorithms_own_literals_bare_dicts_and_any_field_name_are_read() -> None:
    """A Literal of numbers refused its own choice ("expected one of 1, 2, got an integer (2)"), a bare
    Dict was an IndexError, and fields named source or tables were unknown keys: names the inventory's
    reader kept for its own fields, of other tables."""
    table = {"level": 2, "env": {"A": "b"}, "source": "web", "tables": 3}
    assert read_section(_OddSettings, table, "learner.own") == _OddSettings(
        level=2, env={"A": "b"}, source="web", tables=3
    )
    for wrong, said in [("2", "got a string"), (True, "got a boolean"), (3, "got an integer (3)")]:
        with pytest.raises(ConfigError, match=re.escape(f"learner.own.level: expected one of 1, 2, {said}")):
            read_section(_OddSettings, {"level": wrong}, "learner.own")


def test_an_algorithms_own_lists_and_optionals_are_read() -> None:
    read = read_section(_OwnSettings, {"xs": [1, 2], "limit": 3}, "learner.own", source="hosts.toml")
    assert read == _OwnSettings(xs=[1, 2], limit=3.0)
    assert isinstance(read.limit, float)
    assert read_section(_OwnSettings, {}, "learner.own") == _OwnSettings()
