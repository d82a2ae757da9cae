"""The wheel is the release: ``python -m build`` makes the sdist from the tree's files (as a
tagged checkout has them) and the wheel from that sdist, and the wheel holds exactly the
package's files, the console's static files and the vision models among them, with the
repository's systemd/ folder (unit files, broker files, examples) inside it as
``controller/systemd``, where ``livetable files`` finds it. Its metadata names the
dependencies pyproject.toml names.
"""

from __future__ import annotations

import email.parser
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("controller", "drivers", "vision", "simulators")
# The repository's folder that ships inside the package, and where (setup.py maps it).
SHIPPED_FOLDER = "systemd"
SHIPPED_IN_WHEEL = "controller/systemd"
# Building is quick (about 10 s on a loaded 2-core machine); generous, the machine is shared.
BUILD_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Release:
    source_files: list[str]  # the tree's files the release is built from, as git names them
    wheel: Path
    sdist: Path


def tree_files() -> list[str]:
    """The working tree's files as a checkout has them: tracked, and new ones git would add."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(name for name in listed.split("\0") if name and (REPO_ROOT / name).is_file())


def build_release(where: Path) -> Release:
    """The sdist and the wheel, built by ``python -m build`` from a copy of the tree's files
    (so nothing untracked or built before creeps in). ``--no-isolation``: with this venv's
    setuptools and build (the test extra), not a fresh download of them."""
    files = tree_files()
    source = where / "source"
    for name in files:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, source / name)
    dist = where / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    return Release(files, wheel, sdist)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    yield build_release(tmp_path_factory.mktemp("release"))


def wheel_files(wheel: Path) -> set[str]:
    """The wheel's files, but its own metadata (``*.dist-info``)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    return {name for name in names if not name.split("/", 1)[0].endswith(".dist-info")}


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode())


def test_the_wheel_holds_the_package_and_the_shipped_folder_and_nothing_else(
    release: Release,
) -> None:
    expected = {name for name in release.source_files if name.split("/", 1)[0] in PACKAGES}
    expected |= {
        f"{SHIPPED_IN_WHEEL}/{name.split('/', 1)[1]}"
        for name in release.source_files
        if name.startswith(f"{SHIPPED_FOLDER}/")
    }
    held = wheel_files(release.wheel)
    assert sorted(expected - held) == [], "files the package needs that the wheel lacks"
    assert sorted(held - expected) == [], "files in the wheel that the tree does not ship"
    # What the installed package reads at run time, by name, among them.
    for needed in (
        "controller/console/static/index.html",
        "controller/console/static/console.js",
        "controller/console/static/favicon.svg",
        "vision/models/generic.onnx",
        "vision/models/generic.json",
        f"{SHIPPED_IN_WHEEL}/livetable@.service",
        f"{SHIPPED_IN_WHEEL}/livetable@.service.d/camera.conf",
        f"{SHIPPED_IN_WHEEL}/sysusers.d/livetable.conf",
        f"{SHIPPED_IN_WHEEL}/mosquitto/livetable.conf",
        f"{SHIPPED_IN_WHEEL}/examples/console/console.toml",
    ):
        assert needed in held, needed


def test_the_sdist_holds_what_the_wheel_is_built_from(release: Release) -> None:
    with tarfile.open(release.sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    shipped = [name for name in release.source_files if name.startswith(f"{SHIPPED_FOLDER}/")]
    assert shipped and set(shipped) <= names, sorted(set(shipped) - names)
    assert {"pyproject.toml", "setup.py", "README.md"} <= names


def test_the_wheel_names_pyprojects_version_and_dependencies(release: Release) -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    metadata = wheel_metadata(release.wheel)
    assert metadata["Name"] == project["name"] and metadata["Version"] == project["version"]
    assert release.wheel.name == f"{project['name']}-{project['version']}-py3-none-any.whl"
    required = [Requirement(line) for line in metadata.get_all("Requires-Dist") or []]

    def named(requirements: list[Requirement]) -> set[str]:
        return {f"{r.name}{sorted(r.extras)}{r.specifier}" for r in requirements}

    def under(extra: str | None) -> list[Requirement]:
        return [
            r
            for r in required
            if (r.marker is None) == (extra is None)
            and (extra is None or r.marker.evaluate({"extra": extra}))  # type: ignore[union-attr]
        ]

    expected = [Requirement(line) for line in project["dependencies"]]
    assert named(under(None)) == named(expected)
    for extra, lines in project["optional-dependencies"].items():
        assert named(under(extra)) == named([Requirement(line) for line in lines]), extra
    assert set(metadata.get_all("Provides-Extra") or []) == set(project["optional-dependencies"])


def test_files_names_the_checkouts_folder_and_lists_every_file_in_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from controller.tools.cli import main

    assert main(["files"]) == 0
    assert capsys.readouterr().out == f"{REPO_ROOT / SHIPPED_FOLDER}\n"
    assert main(["files", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    shipped = [name for name in tree_files() if name.startswith(f"{SHIPPED_FOLDER}/")]
    assert listed == sorted(str(REPO_ROOT / name) for name in shipped)
