"""distrl as a user receives it: the license that ``pyproject.toml`` names, its text in the wheel and the
sdist; and its public names, every one listed by ``dir`` (tab completion), every error among them, no
name that nothing uses."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import distrl
from distrl import errors
from distrl.deploy import build_wheel

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_and_the_sdist_carry_the_license_text(tmp_path: Path) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text

    wheel = build_wheel(tmp_path / "wheel", project=ROOT)
    info = f"distrl-{wheel.version}.dist-info"
    with zipfile.ZipFile(wheel.path) as archive:
        assert archive.read(f"{info}/licenses/LICENSE").decode() == text
        metadata = archive.read(f"{info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()

    source = tmp_path / "source"  # a copy: the sdist's build writes its egg-info beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "distrl", source / "distrl", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "sdist"
    out.mkdir()
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from setuptools import build_meta; print(build_meta.build_sdist({str(out)!r}))",
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    name = built.stdout.strip().splitlines()[-1]
    with tarfile.open(out / name) as archive:
        member = archive.extractfile(f"distrl-{wheel.version}/LICENSE")
        assert member is not None
        assert member.read().decode() == text


def test_every_public_name_is_listed_and_every_error_is_public() -> None:
    listed = dir(distrl)
    assert set(distrl.__all__) <= set(listed)  # the lazy ones too (collect, train, Policy...)
    assert {"collect", "train", "CollectResult", "SimDevice", "Learner"} <= set(listed)
    assert not {"_os", "_sys", "_warnings"} & set(listed)  # the import-time modules are not left behind
    assert len(distrl.__all__) == len(set(distrl.__all__))
    public_errors = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.DistrlError)
    }
    assert public_errors <= set(distrl.__all__)
    assert {"LearnerError", "JudgeError", "TaskFileError"} <= public_errors
    assert not hasattr(errors, "TooManyRestarts")  # nothing raised it
    assert not {"TooManyRestarts", "CollectionStats", "PolicyVersion"} & set(distrl.__all__)


def test_the_ci_constraints_pin_every_dependency_within_its_bounds() -> None:
    """``tools/constraints.txt`` (``tools/lock``; CI installs through it): every dependency
    ``pyproject.toml`` declares, with every extra, has a pin there that its bounds allow. A dependency
    added or a bound raised without ``tools/lock`` fails here, not in CI's install."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins: dict[str, str] = {}
    for line in (ROOT / "tools" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not a pin (name==version)"
            pins[canonicalize_name(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [
        r for extra in project["optional-dependencies"].values() for r in extra
    ]
    assert len(declared) > 10
    for text in declared:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not pinned: run tools/lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {requirement.name}=={pins[name]}, outside {text!r}: run tools/lock"
        )
