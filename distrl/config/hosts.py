"""The machines of ``[[hosts]]`` (and ``[defaults]``): how to reach each one and start its worker there,
and the devices it drives."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from distrl.config.fields import NAME, NAME_MEANING, num_field, text_field

__all__ = [
    "ADB_KIND",
    "EMULATOR_FLAGS",
    "EMULATOR_KIND",
    "LOCAL_ADDRESS",
    "SIM_KIND",
    "Devices",
    "HostEntry",
    "address_problem",
]

LOCAL_ADDRESS = "localhost"
"""A host at this address runs its worker as a local subprocess unless ``transport`` says otherwise."""


def address_problem(address: str) -> str:
    """Why ``address`` is neither an IP address nor a host name (empty: it is one)."""
    try:
        ipaddress.ip_address(address.removeprefix("[").removesuffix("]"))
    except ValueError:
        pass
    else:
        return ""
    if len(address) > 253:
        return f"is {len(address)} characters long, more than a host name's 253"
    for label in address.removesuffix(".").split("."):
        if not label:
            return "has an empty part between dots: not a host name"
        if len(label) > 63:
            return f"has a part of {len(label)} characters, more than a host name's 63"
        if not _LABEL.fullmatch(label):
            return (
                f"has the part {label!r}: a host name is ASCII letters, digits, '-' and '_'"
                " (not starting or ending with '-'; internationalised names in their xn-- form)"
            )
    return ""


_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?")


SIM_KIND = "sim"
"""The kind of the simulated phones a host's ``sim`` count asks for: registered by the sim."""
ADB_KIND = "adb"
"""The kind of the devices a worker attaches to by adb serial (``AdbDevice``), built in."""
EMULATOR_KIND = "emulator"
"""The kind of the emulators a worker launches from an AVD (``distrl.device.emulator``), built in."""

EMULATOR_FLAGS = ("-no-window", "-no-audio", "-no-boot-anim", "-gpu", "swiftshader_indirect")
"""The default flags of a launched emulator: headless, silent, software GPU (runs on any host)."""


@dataclass(frozen=True, kw_only=True)
class Devices:
    """The devices one host drives."""

    sim: int = num_field(0, ge=0, le=4096)
    """Number of built-in simulated phones."""
    adb_serials: tuple[str, ...] = ()
    """Devices by adb serial (``emulator-5554``, a USB serial, ``host:port``)."""
    emulator_ports: tuple[int, ...] = ()
    """Emulators by console port (even, 5554–5682); the serial is ``emulator-<port>``."""
    snapshot: str = text_field(
        "default_boot", r"[A-Za-z0-9._-]+", "a snapshot name (letters, digits, '.', '_', '-')"
    )
    """The emulator snapshot every reset loads (of attached and launched emulators alike)."""
    avd: str = text_field("", r"[A-Za-z0-9._-]+", "an AVD name (letters, digits, '.', '_', '-')")
    """An Android Virtual Device the worker launches ``count`` emulators of; empty for none."""
    count: int = num_field(1, ge=1, le=64)
    """How many emulators of ``avd`` the worker launches (all read-only instances of the one AVD)."""
    first_port: int = num_field(5554, ge=5554, le=5682)
    """Console port of the first launched emulator; the k-th gets ``first_port + 2k`` (adb: one more)."""
    sdk_root: str = ""
    """The Android SDK on the host; empty for ``$ANDROID_SDK_ROOT``, else ``$ANDROID_HOME``."""
    emulator_flags: tuple[str, ...] = EMULATOR_FLAGS
    """Flags for every launched emulator, besides ``-avd``, ``-port``, ``-read-only``, ``-snapshot``."""
    memory_mb: int = num_field(0, ge=0)
    """RAM of each launched emulator (``-memory``); 0 for the AVD's own setting."""
    cores: int = num_field(0, ge=0)
    """CPU cores of each launched emulator (``-cores``); 0 for the AVD's own setting."""
    max_relaunches: int = num_field(5, ge=0)
    """Launches in a row that may fail (no boot, or dead before its next reset) before an emulator is
    given up; each waits longer than the last."""

    @property
    def launched(self) -> tuple[str, ...]:
        """The serials of the emulators the worker launches: ``emulator-<first_port + 2k>``."""
        if not self.avd:
            return ()
        return tuple(f"emulator-{self.first_port + 2 * k}" for k in range(self.count))

    @property
    def kinds(self) -> dict[str, tuple[str, ...]]:
        """Every device's name on its host by its kind, the kinds it has only: ``sim`` the simulated
        phones (``sim-0``…, a registered kind: ``distrl.device.registry``), ``adb`` the attached devices
        (adb serials, then emulators by console port), ``emulator`` the launched ones."""
        kinds = {
            SIM_KIND: tuple(f"sim-{i}" for i in range(self.sim)),
            ADB_KIND: self.adb_serials + tuple(f"emulator-{port}" for port in self.emulator_ports),
            EMULATOR_KIND: self.launched,
        }
        return {kind: names for kind, names in kinds.items() if names}

    @property
    def serials(self) -> tuple[str, ...]:
        """Every device's name on its host: ``sim-0``…, then adb serials, then emulators (attached, then
        launched)."""
        return tuple(name for names in self.kinds.values() for name in names)


@dataclass(frozen=True, kw_only=True)
class HostEntry:
    """One machine: how to reach it, how to start the worker there, and its devices."""

    name: str = text_field("", NAME, NAME_MEANING)
    """Unique name, used in logs and metrics."""
    address: str = text_field("", r"[^\s@/]+", "a hostname or IP address")
    """Hostname or IP; ``localhost`` runs the worker as a local subprocess."""
    transport: Literal["auto", "local", "ssh"] = "auto"
    """``local`` (subprocess), ``ssh``, or ``auto``: local for ``localhost``, SSH otherwise."""
    port: int = num_field(22, ge=1, le=65535)
    """SSH port."""
    user: str = text_field("", r"[^\s@:]+", "a user name")
    """SSH user; empty for the current user."""
    identity_file: str = ""
    """SSH private key file; empty to use the SSH agent and default keys."""
    known_hosts: Literal["check", "ignore"] = "check"
    """``check`` the host key against known_hosts, or ``ignore`` it (logged; throwaway hosts only)."""
    known_hosts_file: str = ""
    """known_hosts file to check against; empty for ``~/.ssh/known_hosts``."""
    proxy_jump: str = text_field("", r"([^\s@:]+@)?[^\s@:/]+(:[0-9]{1,5})?", "[user@]host[:port]")
    """Jump host as ``[user@]host[:port]``; empty to connect directly."""
    python: str = ""
    """Python on the host that has distrl installed; empty for this interpreter (local), or over SSH
    ``~/.distrl/venv/bin/python`` where ``python -m distrl deploy`` made it, else ``python3``."""
    workdir: str = ""
    """Working folder of the worker; empty for the home folder (SSH) or the current folder (local)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables for the worker, passed explicitly."""
    devices: Devices = field(default_factory=Devices)
    """The host's devices."""
    concurrency: int = num_field(0, ge=0)
    """Most episodes running at once on this host; 0 for one per device."""

    @property
    def is_local(self) -> bool:
        return self.transport == "local"

    @property
    def max_episodes(self) -> int:
        """Episodes this host runs at once."""
        count = len(self.devices.serials)
        return min(self.concurrency, count) if self.concurrency else count
