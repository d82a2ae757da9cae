"""The release, as the tests build and install it: :func:`build_release` makes the sdist and
the wheel with ``python -m build`` from a copy of the tree's files, :func:`build_wheel` a
wheel of the same files under another version number (for an upgrade), and
:func:`install_alone` installs a wheel alone into a fresh venv, run from a folder outside
the repository.

The fresh venv is given this venv's third-party packages by a plain path line in a .pth file
(which adds the folder to ``sys.path`` without running the editable install's own .pth in
it) and the wheel is installed with ``--no-deps``: quick, and offline; the dependencies the
wheel declares are pyproject's (tests/install/test_release_wheel.py checks them).

:func:`shared_release` builds the tree's release once per test run, however many pytest-xdist
workers ask for it: the first builds it under a lock in the run's shared temporary folder,
the others take the wheel it left there.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("controller", "drivers", "vision", "simulators")
# Building is quick (about 10 s on a loaded 2-core machine); generous, the machine is shared.
BUILD_TIMEOUT_S = 180.0
# Each step of the installed wheel: generous, the machine is shared.
STEP_TIMEOUT_S = 120.0
VERSION_LINE = re.compile(r'(?m)^version = "([^"]+)"$')


@dataclass(frozen=True)
class Release:
    source_files: list[str]  # the tree's files the release is built from, as git names them
    wheel: Path
    sdist: Path
    version: str


def tree_files() -> list[str]:
    """The working tree's files as a checkout has them: tracked, and new ones git would add."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(name for name in listed.split("\0") if name and (REPO_ROOT / name).is_file())


def tree_version() -> str:
    """pyproject.toml's version of the tree."""
    found = VERSION_LINE.findall((REPO_ROOT / "pyproject.toml").read_text())
    assert len(found) == 1, found
    return str(found[0])


def next_patch(version: str) -> str:
    """The next patch release after ``version`` (``0.2.0`` -> ``0.2.1``)."""
    major, minor, patch = (int(part) for part in version.split("."))
    return f"{major}.{minor}.{patch + 1}"


def copy_tree(where: Path, version: str | None = None) -> Path:
    """The tree's files (:func:`tree_files`) copied into ``where/source``, so nothing
    untracked or built before creeps into a build; ``version``: the copy's pyproject.toml
    says this version instead of the tree's (the same tree, released under another
    number)."""
    source = where / "source"
    for name in tree_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, source / name)
    if version is not None:
        pyproject = source / "pyproject.toml"
        text, replaced = VERSION_LINE.subn(f'version = "{version}"', pyproject.read_text())
        assert replaced == 1, "pyproject.toml has no one version line"
        pyproject.write_text(text)
    return source


def build(source: Path, dist: Path, *options: str) -> None:
    """``python -m build`` of ``source`` into ``dist``. ``--no-isolation``: with this venv's
    setuptools and build (the test extra), not a fresh download of them."""
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", *options, "--outdir", str(dist),
         str(source)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def build_release(where: Path) -> Release:
    """The release: the sdist built from a copy of the tree's files, and the wheel built
    from that sdist, as ``python -m build`` makes them."""
    build(copy_tree(where), where / "dist")
    (wheel,) = (where / "dist").glob("*.whl")
    (sdist,) = (where / "dist").glob("*.tar.gz")
    return Release(tree_files(), wheel, sdist, tree_version())


def build_wheel(where: Path, version: str) -> Path:
    """A wheel of the tree released as ``version``, built straight from a copy of the tree
    (no sdist: twice as quick)."""
    build(copy_tree(where, version), where / "dist", "--wheel")
    (wheel,) = (where / "dist").glob("*.whl")
    return wheel


def shared_release(run_folder: Path, worker: str) -> Release:
    """The tree's release, built once for the whole test run: under pytest-xdist
    (``worker`` not ``master``) in ``run_folder``, the run's temporary folder that every
    worker shares, the first worker to ask building it under a lock; the others wait on the
    lock and read what it built."""
    if worker == "master":
        return build_release(run_folder)
    where = run_folder / "release"
    where.mkdir(exist_ok=True)
    built = where / "built.json"
    with open(where / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not built.exists():
            release = build_release(where)
            built.write_text(
                json.dumps(
                    {
                        "source_files": release.source_files,
                        "wheel": str(release.wheel),
                        "sdist": str(release.sdist),
                        "version": release.version,
                    }
                )
            )
        saved = json.loads(built.read_text())
    return Release(
        saved["source_files"], Path(saved["wheel"]), Path(saved["sdist"]), saved["version"]
    )


@dataclass(frozen=True)
class Installed:
    venv: Path
    site_packages: Path
    cwd: Path  # a folder outside the repository
    env: dict[str, str]

    @property
    def program(self) -> str:
        """The venv's ``livetable``."""
        return str(self.venv / "bin" / "livetable")

    def run(self, *args: str, timeout: float = STEP_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            args, cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stderr[-3000:]}"
        return done

    def livetable(self, *args: str, timeout: float = STEP_TIMEOUT_S) -> str:
        """What ``livetable ARGS`` printed on its standard output."""
        return self.run(self.program, *args, timeout=timeout).stdout


def install_alone(wheel: Path, where: Path) -> Installed:
    """A fresh venv with only the wheel installed in it (and this venv's third-party
    packages on its path), and an environment that names nothing of the repository."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site_packages,) = venv.glob("lib/python3*/site-packages")
    third_party = Path(sysconfig.get_paths()["purelib"])
    # This venv has livetable only as an editable install (a finder module or a path in a
    # .pth file, which a plain path line does not run): no package of the tree is in it.
    assert not [p for p in PACKAGES if (third_party / p).exists()], sorted(third_party.iterdir())
    (site_packages / "third-party.pth").write_text(f"{third_party}\n")
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")),
            *("install", "--quiet", "--no-deps", "--no-index", str(wheel)),
        ],
        check=True,
        capture_output=True,
        timeout=STEP_TIMEOUT_S,
    )
    cwd = where / "elsewhere"
    (cwd / "tmp").mkdir(parents=True)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST"))
    }
    env.update(PATH=f"{venv / 'bin'}:{os.environ['PATH']}", TMPDIR=str(cwd / "tmp"))
    return Installed(venv, site_packages, cwd, env)
