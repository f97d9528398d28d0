"""Deploy to every SSH host of an inventory at once: one wheel, one task per host, one outcome each."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import anyio

from distrl.config import Inventory
from distrl.deploy.host import Outcome, Progress, deploy_host
from distrl.deploy.settings import DeploySettings, deploy_settings
from distrl.deploy.wheel import build_wheel
from distrl.errors import DeployError

__all__ = ["deploy_fleet"]


async def deploy_fleet(
    inventory: Inventory,
    *,
    names: Sequence[str] = (),
    force: bool = False,
    progress: Progress = lambda host, stage, text: None,
) -> list[Outcome]:
    """Install this machine's distrl on the inventory's SSH hosts (those in ``names``, when given), in
    parallel; one ``Outcome`` per host, in inventory order. A host that fails does not stop the others;
    local hosts are skipped (they run this machine's distrl). ``DeployError`` (stage ``wheel``) when the
    wheel cannot be built."""
    chosen = [(index, host) for index, host in enumerate(inventory.hosts) if not names or host.name in names]
    outcomes: dict[str, Outcome] = {}
    todo: list[tuple[int, DeploySettings]] = []
    for index, host in chosen:
        if host.is_local:
            outcomes[host.name] = Outcome(
                host=host.name, status="skipped", detail="local: runs this machine's distrl", elapsed_s=0.0
            )
            continue
        try:
            todo.append((index, deploy_settings(host, f"hosts[{index}]")))
        except DeployError as exc:
            outcomes[host.name] = Outcome(
                host=host.name, status="failed", detail=str(exc), elapsed_s=0.0, error=exc
            )
    if todo:
        with tempfile.TemporaryDirectory(prefix="distrl-deploy-") as folder:
            wheel = await anyio.to_thread.run_sync(build_wheel, Path(folder))

            async def one(index: int, settings: DeploySettings) -> None:
                host = inventory.hosts[index]
                started = time.monotonic()
                try:
                    outcomes[host.name] = await deploy_host(
                        host, settings, wheel, inventory.timeouts, force=force, progress=progress
                    )
                except DeployError as exc:
                    elapsed = time.monotonic() - started
                    outcomes[host.name] = Outcome(
                        host=host.name, status="failed", detail=str(exc), elapsed_s=elapsed, error=exc
                    )
                    progress(host.name, exc.stage or "failed", f"FAILED: {exc}")

            # entries for one account on one machine share its ~/.distrl: those go one after another
            accounts: dict[tuple[str, int, str, str], list[tuple[int, DeploySettings]]] = {}
            for index, settings in todo:
                host = inventory.hosts[index]
                accounts.setdefault((host.address, host.port, host.user, host.proxy_jump), []).append(
                    (index, settings)
                )

            async def in_turn(entries: list[tuple[int, DeploySettings]]) -> None:
                for index, settings in entries:
                    await one(index, settings)

            async with anyio.create_task_group() as tg:
                for entries in accounts.values():
                    tg.start_soon(in_turn, entries, name=f"deploy {inventory.hosts[entries[0][0]].name}")
    return [outcomes[host.name] for _, host in chosen]
