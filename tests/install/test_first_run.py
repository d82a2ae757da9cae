"""The README's first command on a fresh clone with a new virtual environment: it installs
livetable, plays three rounds and exits 0, and nothing it prints is a warning."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# pip's words about the machine's own pip configuration (an index location that does not
# exist on this machine, say) are not livetable's: a studio PC configured otherwise never
# sees them. Everything else that says "warning" is.
PIP_CONFIGURATION_NOTE = re.compile(r"^WARNING: Location '[^']+' is ignored: ")
WARNING = re.compile(r"warn", re.IGNORECASE)


@pytest.mark.slow
def test_scripts_demo_on_a_fresh_clone_prints_no_warning_and_exits_0(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("needs a git checkout to clone")
    clone = tmp_path / "livetable"
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(clone)], check=True, timeout=120)
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("VIRTUAL_ENV")
    }
    environment["PYTHON"] = sys.executable
    done = subprocess.run(
        [str(clone / "scripts" / "demo"), "--rounds", "3"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = done.stdout.splitlines() + done.stderr.splitlines()
    assert done.returncode == 0, done.stderr[-3000:]
    warnings = [
        line for line in lines if WARNING.search(line) and not PIP_CONFIGURATION_NOTE.match(line)
    ]
    assert warnings == [], "\n".join(warnings)
    assert "livetable demo: table demo: 3 round(s) settled" in done.stdout, done.stdout[-2000:]
