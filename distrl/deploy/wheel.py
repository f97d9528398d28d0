"""The wheel ``deploy`` pushes: this machine's distrl, built once per deploy, byte for byte the same
for the same code (so its SHA-256 says whether a host is up to date).

From a source tree (a checkout, installed editable or not at all): the project's files are copied to a
temporary folder (no stale ``build/`` of the checkout can leak in) and built there by
``pip wheel --no-deps`` with ``SOURCE_DATE_EPOCH`` fixed. From an installed wheel: the files its
``RECORD`` lists are packed again (``repack``), sorted and dated 1980, as the original wheel held them.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import importlib.util
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from distrl.build import digest, is_package_file
from distrl.errors import DeployError

__all__ = ["Wheel", "build_wheel", "repack", "wheel_build"]

_EPOCH = "315532800"
"""1980-01-01, the earliest date a zip file holds: every build of the same files is the same bytes."""
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE", "LICENSE.txt", "setup.cfg", "MANIFEST.in")
_NOT_PACKED = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
"""What an install adds to a wheel's dist-info."""


@dataclass(frozen=True, kw_only=True)
class Wheel:
    """A built wheel on this machine."""

    path: Path
    sha256: str
    """Hex SHA-256 of the file."""
    version: str
    build: str
    """The ``build_id`` its distrl reports once installed."""

    @property
    def size_bytes(self) -> int:
        return self.path.stat().st_size


def build_wheel(out: Path, *, project: Path | None = None) -> Wheel:
    """This machine's distrl as a wheel in the folder ``out`` (or the source tree ``project``'s);
    ``DeployError`` (stage ``wheel``) when it cannot be built."""
    import distrl

    package = Path(distrl.__file__).resolve().parent
    root = project or package.parent
    if _is_project(root / "pyproject.toml"):
        path = _build_from_source(root, out)
    elif project is not None:
        raise _error(f"{project} holds no pyproject.toml of distrl")
    else:
        try:
            path = repack("distrl", out)
        except importlib.metadata.PackageNotFoundError:
            raise _error(f"distrl at {package} is neither a source tree nor an installed wheel") from None
    version = path.name.split("-")[1]
    return Wheel(path=path, sha256=_sha256(path), version=version, build=wheel_build(path))


def wheel_build(path: Path) -> str:
    """The ``build_id`` of the distrl in the wheel at ``path``: the code as it was copied, whatever has
    changed here since."""
    with zipfile.ZipFile(path) as archive:
        names = [n.removeprefix("distrl/") for n in archive.namelist() if n.startswith("distrl/")]
        return digest((name, archive.read(f"distrl/{name}")) for name in names if is_package_file(name))


def _is_project(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return False
    return re.search(r'(?m)^name\s*=\s*"distrl"\s*$', text) is not None


def _build_from_source(root: Path, out: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="distrl-wheel-") as temporary:
        source = Path(temporary) / "src"
        source.mkdir()
        for name in _PROJECT_FILES:
            if (root / name).is_file():
                shutil.copy2(root / name, source / name)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        # symlinks=False: a link (hosts.example.toml) becomes the file it names, as in an sdist
        shutil.copytree(root / "distrl", source / "distrl", ignore=ignore, symlinks=False)
        built = Path(temporary) / "dist"
        command = [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(built),
            str(source),
        ]
        if importlib.util.find_spec("setuptools") is not None:
            command.insert(4, "--no-build-isolation")  # no download of setuptools: offline builds work
        env = {**os.environ, "SOURCE_DATE_EPOCH": _EPOCH, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
        wheels = sorted(built.glob("distrl-*.whl"))
        if result.returncode != 0 or len(wheels) != 1:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-10:])
            raise _error(f"pip wheel of {root} failed (exit {result.returncode})", output=tail)
        out.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(wheels[0], out / wheels[0].name))


def repack(name: str, out: Path) -> Path:
    """The installed distribution ``name`` packed again as a wheel in ``out`` (its dist-info's tags, the
    files its ``RECORD`` lists but compiled bytecode and what installing added); the path.
    ``PackageNotFoundError`` when it is not installed; ``DeployError`` when it was not installed from a
    wheel (an editable install lists no package files)."""
    dist = importlib.metadata.distribution(name)
    files = dist.files or []
    info = next((f for f in files if f.parts[0].endswith(".dist-info") and f.name == "WHEEL"), None)
    if info is None:
        raise _error(f"{name} was not installed from a wheel (no WHEEL file in its dist-info)")
    tags = [
        line.split(":", 1)[1].strip() for line in info.read_text().splitlines() if line.startswith("Tag:")
    ]
    python, abi, platform = (".".join(sorted({tag.split("-")[i] for tag in tags})) for i in range(3))
    project = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    path = out / f"{project}-{dist.version}-{python}-{abi}-{platform}.whl"
    dist_info = info.parts[0]
    packed = sorted(
        f
        for f in files
        if ".." not in f.parts  # scripts: the installer writes them again from entry_points.txt
        and "__pycache__" not in f.parts
        and not (f.parts[0] == dist_info and f.name in _NOT_PACKED)
    )
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for file in packed:
            local = Path(file.locate())
            data = local.read_bytes()
            entry = zipfile.ZipInfo(file.as_posix(), _ZIP_DATE)
            entry.external_attr = (stat.S_IFREG | stat.S_IMODE(local.stat().st_mode)) << 16  # keep +x
            archive.writestr(entry, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append((file.as_posix(), f"sha256={digest}", str(len(data))))
        record = io.StringIO()
        csv.writer(record, lineterminator="\n").writerows([*rows, (f"{dist_info}/RECORD", "", "")])
        archive.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", _ZIP_DATE), record.getvalue())
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _error(message: str, output: str = "") -> DeployError:
    return DeployError(f"cannot build the distrl wheel: {message}", stage="wheel", output=output)
