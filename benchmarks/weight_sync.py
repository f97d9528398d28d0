"""Weight sync: bytes and latency per update from the learner to 1, 4 and 16 workers over SSH.

Three ways to bring every worker to the learner's new weights, measured on the same workers:

- ``diff`` (distrl): the version diff of the published bfloat16 adapter (``weights.encode_diff``),
  encoded once and sent to every worker at once as a ``Weights`` message; each worker applies it
  (checksums included) and loads it into its model before it acks. What the fleet's publisher does.
- ``full``: the whole adapter (``weights.encode_full``), the same way.
- ``checkpoint``: what the paper's released code did: the whole policy folder (the model's weights, as a
  full fine-tune publishes them, with its config and tokenizer) copied to every worker with OpenSSH's
  ``scp -r``, all at once. Only the copy is timed: saving the folder, the workers' reload and the 5 s
  polling of the released code come on top, so this baseline is flattered.

The workers are real: ``N`` hosts in one inventory, each a ``python -m distrl worker`` started over SSH
through a real OpenSSH ``sshd``, set up with the policy below in bfloat16, as a run sets them up.
Twice: through an sshd on 127.0.0.1 (``loopback``: no network cost, so what is left is CPU), then, where
root and ``ip`` allow, through an sshd in a network namespace behind a veth link that ``tc`` limits to
``--rate`` (default 1 Gbit/s, a common NIC; the paper quotes 500 Mbit/s) in the learner's direction, as
the learner's own uplink limits it (``distrl.testing.netns``). Everything shares this machine's 2 cores: the
workers' decryption and apply add up here, where on separate machines they would run side by side, so
the times at 16 workers are an upper bound for every way.

The adapter has the size of a Qwen2.5-VL-3B LoRA r=16 on all the language model's linear layers (29.9 M
parameters; ``weight_diff.py`` has the whole 41.4 M including the vision tower): one decoder layer at
Qwen2.5-VL-3B's widths (hidden 2048, MLP 11008, 16 query and 2 key/value heads) with LoRA r=576 on each
of its 7 linear layers is the same number of parameters in the same shapes' rows, so that 16 workers fit
in memory (a whole 3B model per worker would not); with ``tiny``'s small vision tower adapted too, 32.4 M
parameters, 65 MB in bfloat16. The learner steps it with Adam at lr 1e-4 on
gradients with LoRA's structure (``weight_diff.Trainer``) between updates. The checkpoint is that model's
folder (bfloat16): 47× smaller than a Qwen2.5-VL-3B checkpoint (7.5 GB), so the copy is flattered again.

Per network, size and way: ``--updates`` updates (the first after a full sync of every worker), each
timed from the new weights being ready to the last worker's ack (or copy); bytes per worker and in all.
Prints one JSON line and writes ``benchmarks/figures/weight-sync.png``. Bounded: about 8 minutes on 2
cores, 17 GB of memory at 16 workers. Run: ``python benchmarks/weight_sync.py`` (``--sizes 1,2 --updates
2`` for a smoke run). Needs OpenSSH's ``sshd`` and ``scp`` (Debian: ``openssh-server``, ``openssh-client``).
"""

from __future__ import annotations

import distrl  # noqa: F401  # before torch, so that its OpenMP threads sleep while they wait

# isort: split
import argparse
import contextlib
import getpass
import json
import logging
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
import torch
from plotting import saved_figure
from weight_diff import Trainer

from distrl.config import Inventory, PolicySettings, parse_inventory, worker_settings_json
from distrl.fleet import handshake
from distrl.fleet.link import Link
from distrl.policy import Policy
from distrl.policy.tiny import TinySpec, build_tiny
from distrl.testing.sshd import Sshd, find_sshd, serve_sshd
from distrl.transport import open_host
from distrl.weights import describe, encode_diff, encode_full
from distrl.wire import ErrorReport, Setup, Weights

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "benchmarks" / "figures"

WIDE = TinySpec(
    hidden_size=2048, intermediate_size=11008, layers=1, heads=16, kv_heads=2, mrope_section=(16, 24, 24)
)
"""One decoder layer at Qwen2.5-VL-3B's widths; the rest of the model is ``tiny``'s."""
RANK = 576
"""36 layers × r=16 in one layer."""
LR = 1e-4
QWEN_3B_CHECKPOINT_BYTES = 3.75e9 * 2
"""Qwen2.5-VL-3B's weights in bfloat16."""
WAYS = ("diff", "full", "checkpoint")


@dataclass
class Measured:
    network: str
    workers: int
    way: str
    bytes_per_worker: int
    seconds: list[float] = field(default_factory=list)
    """Per update: new weights ready → the last worker acked (or the last copy ended)."""
    encode_s: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Prepared:
    """What every network's run starts from: the model folder, the learner's initial adapter, sizes."""

    model: Path
    adapter: dict[str, torch.Tensor]
    sizes: dict[str, int]


def _model(folder: Path) -> int:
    """Save the wide model (bfloat16) and its prompter to ``folder``; its parameter count."""
    model, prompter = build_tiny(seed=0, spec=WIDE)
    model.bfloat16().save_pretrained(str(folder))
    prompter.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def _inventory(folder: Path, model: Path, server: Sshd, workers: int) -> Inventory:
    hosts = "".join(
        f'[[hosts]]\nname = "w{i}"\naddress = "{server.address}"\ntransport = "ssh"\nport = {server.port}\n'
        f'user = "{getpass.getuser()}"\nidentity_file = "{server.client_key}"\n'
        f'known_hosts_file = "{server.known_hosts}"\npython = "{sys.executable}"\nworkdir = "{ROOT}"\n'
        "[hosts.devices]\nsim = 1\n"
        for i in range(workers)
    )
    text = f"""
[run]
output_dir = "{folder / "runs"}"
publish_dtype = "bfloat16"

[policy]
model = "{model}"
lora_rank = {RANK}
dtype = "bfloat16"

[sim]
width = 270
height = 600
latency = "off"

[timeouts]
worker_start_s = 600
weight_push_s = 600
heartbeat_timeout_s = 3600

{hosts}
"""
    return parse_inventory(text, source=str(folder / "hosts.toml"))


@contextlib.asynccontextmanager
async def _workers(inventory: Inventory) -> AsyncIterator[list[Link]]:
    """Every host's worker, started over SSH and set up with the policy, as ``Link``s; stopped on exit."""
    settings = worker_settings_json(inventory)
    links: dict[int, Link] = {}
    all_up, done = anyio.Event(), anyio.Event()
    limiter = anyio.CapacityLimiter(2)  # this machine's cores: more at once only makes each slower

    async def serve(i: int) -> None:
        async with open_host(inventory.hosts[i], inventory.timeouts) as raw:
            await handshake(raw, inventory.timeouts)
            link = Link(raw)
            async with anyio.create_task_group() as tg:
                tg.start_soon(link.read)
                async with limiter:
                    reply = await link.request(Setup(id=link.next_id(), settings=settings), 600)
                if isinstance(reply, ErrorReport):
                    raise reply.error
                links[i] = link
                print(f"worker w{i} up", file=sys.stderr)
                if len(links) == len(inventory.hosts):
                    all_up.set()
                await done.wait()
                tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for i in range(len(inventory.hosts)):
            tg.start_soon(serve, i)
        await all_up.wait()
        try:
            yield [links[i] for i in sorted(links)]
        finally:
            done.set()


async def _send(links: list[Link], blob: bytes, version: int, base: int | None) -> None:
    """``blob`` to every link at once, as the fleet's publisher sends it; waits for every ack."""

    async def one(link: Link) -> None:
        message = Weights(
            id=link.next_id(),
            version=version,
            base_version=base,
            kind="full" if base is None else "diff",
            checksum=describe(blob).checksum,
            blob=blob,
        )
        reply = await link.request(message, 600)
        if isinstance(reply, ErrorReport):
            raise reply.error

    async with anyio.create_task_group() as tg:
        for link in links:
            tg.start_soon(one, link)


async def _copy(server: Sshd, source: Path, destinations: list[Path]) -> None:
    """``scp -r source`` to every destination at once, through the sshd."""

    async def one(destination: Path) -> None:
        await anyio.run_process(
            [
                "scp", "-r", "-q", "-P", str(server.port), "-i", str(server.client_key),
                "-o", f"UserKnownHostsFile={server.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-o", "BatchMode=yes", str(source), f"{getpass.getuser()}@{server.address}:{destination}",
            ]
        )  # fmt: skip

    async with anyio.create_task_group() as tg:
        for destination in destinations:
            tg.start_soon(one, destination)


def _prepare(folder: Path) -> Prepared:
    model = folder / "model"
    parameters = _model(model)
    settings = PolicySettings(model=str(model), lora_rank=RANK)
    learner = Policy.load(settings, device="cpu", dtype="float32")
    adapter = learner.adapter.state()
    sizes = {
        "model_parameters": parameters,
        "adapter_parameters": sum(t.numel() for t in adapter.values()),
        "adapter_tensors": len(adapter),
        "checkpoint_bytes": sum(f.stat().st_size for f in model.rglob("*") if f.is_file()),
    }
    return Prepared(model, adapter, sizes)


async def _measure(
    args: argparse.Namespace, folder: Path, prepared: Prepared, server: Sshd, network: str
) -> list[Measured]:
    """Every size and way, on workers reached through ``server``."""
    model, sizes = prepared.model, prepared.sizes
    inventory = _inventory(folder, model, server, max(args.sizes))
    trainer = Trainer(prepared.adapter, LR, torch.Generator().manual_seed(0))
    results: list[Measured] = []
    version = 0
    published = trainer.snapshot(torch.bfloat16)
    async with _workers(inventory) as links:
        for workers in args.sizes:
            chosen = links[:workers]
            for way in WAYS:
                # every chosen worker holds ``version`` before the first timed update
                await _send(chosen, encode_full(published, version), version, None)
                measured = Measured(network, workers, way, 0)
                for _ in range(args.updates):
                    trainer.step()
                    new = trainer.snapshot(torch.bfloat16)
                    destinations = [folder / "copies" / f"w{i}" for i in range(workers)]
                    shutil.rmtree(folder / "copies", ignore_errors=True)  # last update's copies: untimed
                    (folder / "copies").mkdir()
                    started = time.perf_counter()
                    if way == "checkpoint":
                        await _copy(server, model, destinations)
                        measured.bytes_per_worker = sizes["checkpoint_bytes"]
                    else:
                        if way == "diff":
                            blob = await anyio.to_thread.run_sync(
                                encode_diff, published, new, version, version + 1
                            )
                        else:
                            blob = await anyio.to_thread.run_sync(encode_full, new, version + 1)
                        measured.encode_s.append(time.perf_counter() - started)
                        await _send(chosen, blob, version + 1, version if way == "diff" else None)
                        measured.bytes_per_worker = len(blob)
                    measured.seconds.append(time.perf_counter() - started)
                    published, version = new, version + 1  # after a copy, the workers' adapters lag
                results.append(measured)
                print(
                    f"{network}: {workers:3d} workers {way:10s}:"
                    f" {measured.bytes_per_worker / 1e6:7.1f} MB each,"
                    f" {statistics.median(measured.seconds):6.2f} s per update",
                    file=sys.stderr,
                )
        shutil.rmtree(folder / "copies", ignore_errors=True)
    return results


def _plot(results: list[Measured], path: Path) -> None:
    with saved_figure(path, 3, size=(15, 4)) as axes:
        sizes = sorted({m.workers for m in results})
        networks = list(dict.fromkeys(m.network for m in results))
        by = {(m.network, m.workers, m.way): m for m in results}
        for way, style in zip(WAYS, ("o-", "s-", "^-"), strict=True):
            axes[0].plot(
                sizes, [by[networks[0], n, way].bytes_per_worker * n / 1e6 for n in sizes], style, label=way
            )
            for axis, network in zip(axes[1:], networks, strict=False):
                median = [statistics.median(by[network, n, way].seconds) for n in sizes]
                axis.plot(sizes, median, style, label=way)
        titles = ["bytes per update"] + [f"new weights → every worker, {network}" for network in networks]
        for axis, title in zip(axes, titles, strict=False):
            axis.set_xscale("log", base=2)
            axis.set_yscale("log")
            axis.set_xticks(sizes, [str(n) for n in sizes])
            axis.set_xlabel("workers over SSH")
            axis.set_ylabel(
                "MB sent per update, all workers" if axis is axes[0] else "seconds per update (median)"
            )
            axis.set_title(title)
            axis.legend()
        if len(networks) < 2:
            axes[2].set_visible(False)


def _shaped(args: argparse.Namespace, binary: str, folder: Path, prepared: Prepared) -> list[Measured]:
    """The runs on workers behind a link of ``args.rate``: a network namespace with its own sshd."""
    from distrl.testing.netns import free_subnets, joined_namespace, unavailable

    reason = unavailable()
    if reason is not None:
        print(f"no shaped link: {reason}", file=sys.stderr)
        return []
    pid = os.getpid()
    try:
        subnet = free_subnets(1)[0]
        with joined_namespace(f"distrl-b-{pid}", f"drb{pid}", f"drbn{pid}", subnet) as namespace:
            namespace.shape(args.rate)
            (folder / "sshd-ns").mkdir()
            prefix = ["ip", "netns", "exec", namespace.name]
            with serve_sshd(
                binary, folder / "sshd-ns", address=namespace.address, port=22, prefix=prefix
            ) as server:
                return anyio.run(_measure, args, folder, prepared, server, f"{args.rate} link")
    except pytest.skip.Exception as exc:
        print(f"no shaped link: {exc}", file=sys.stderr)
        return []


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1,4,16", help="numbers of workers (default %(default)s)")
    parser.add_argument("--updates", type=int, default=3, help="timed updates per size and way (default 3)")
    parser.add_argument(
        "--rate",
        default="1gbit",
        help="the shaped link's speed, tc syntax (default %(default)s); '' for none",
    )
    parser.add_argument("--figure", type=Path, default=FIGURES / "weight-sync.png")
    args = parser.parse_args()
    args.sizes = sorted({int(n) for n in args.sizes.split(",")})
    if args.updates < 1 or args.sizes[0] < 1:
        parser.error("--updates and every size must be at least 1")
    binary = find_sshd()
    if binary is None or shutil.which("scp") is None:
        sys.exit(
            "weight_sync needs OpenSSH's sshd and scp (Debian: apt-get install openssh-server openssh-client)"
        )
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        prepared = _prepare(folder)
        sizes = prepared.sizes
        (folder / "sshd").mkdir()
        with serve_sshd(binary, folder / "sshd") as server:
            results = anyio.run(_measure, args, folder, prepared, server, "loopback")
        if args.rate:
            results += _shaped(args, binary, folder, prepared)
    by = {(m.network, m.workers, m.way): m for m in results}
    networks = list(dict.fromkeys(m.network for m in results))

    def median(network: str, n: int, way: str) -> float:
        return statistics.median(by[network, n, way].seconds)

    result = {
        "benchmark": "weight_sync",
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}",
        "sizes": sizes,
        "published_dtype": "bfloat16",
        "qwen2.5_vl_3b_checkpoint_over_this_one": round(
            QWEN_3B_CHECKPOINT_BYTES / sizes["checkpoint_bytes"], 1
        ),
        "runs": [
            {
                "network": m.network,
                "workers": m.workers,
                "way": m.way,
                "bytes_per_worker": m.bytes_per_worker,
                "bytes_all_workers": m.bytes_per_worker * m.workers,
                "seconds_per_update": [round(s, 3) for s in m.seconds],
                "median_s": round(statistics.median(m.seconds), 3),
                "encode_s": [round(s, 3) for s in m.encode_s],
            }
            for m in results
        ],
        "diff_over_full_bytes": {
            str(n): round(
                by["loopback", n, "diff"].bytes_per_worker / by["loopback", n, "full"].bytes_per_worker, 3
            )
            for n in args.sizes
        },
        "seconds_over_diff": {
            network: {
                way: {
                    str(n): round(median(network, n, way) / median(network, n, "diff"), 2) for n in args.sizes
                }
                for way in WAYS[1:]
            }
            for network in networks
        },
        "wall_s": round(time.perf_counter() - started, 1),
    }
    _plot(results, args.figure)
    result["figure"] = str(args.figure)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
