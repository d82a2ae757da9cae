"""The console's systemd unit as systemd reads it: ``systemd-analyze verify`` finds nothing
in a copy whose ExecStart is this checkout's ``livetable``, and ``systemd-analyze security``
scores its sandbox at least as tight as the table's."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
UNIT = REPO_ROOT / "systemd" / "livetable-console.service"
INSTALLED_EXEC = "/opt/livetable/.venv/bin/livetable"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
# The score when written was 1.2 ("OK"); a change that weakens the sandbox past 2.0 fails.
MAX_EXPOSURE = 20  # --threshold counts tenths

needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None,
    reason="systemd-analyze is not installed (Debian package 'systemd'; scripts/test installs it)",
)


def _unit_copy(tmp_path: Path) -> Path:
    livetable = Path(sys.executable).parent / "livetable"
    assert livetable.is_file(), "livetable is not installed in this virtual environment"
    text = UNIT.read_text()
    assert text.count(INSTALLED_EXEC) == 1
    units = tmp_path / "units"
    units.mkdir()
    (units / UNIT.name).write_text(text.replace(INSTALLED_EXEC, str(livetable)))
    return units


def _run(units: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    return subprocess.run(
        [SYSTEMD_ANALYZE, *args], cwd=units, capture_output=True, text=True, check=False
    )


@needs_systemd_analyze
def test_systemd_analyze_verify_finds_nothing(tmp_path: Path) -> None:
    done = _run(_unit_copy(tmp_path), "verify", "--man=no", f"./{UNIT.name}")
    # Unknown keys and bad values are only warnings (exit 0): any output fails the test.
    assert done.returncode == 0 and done.stdout == done.stderr == "", done.stdout + done.stderr


@needs_systemd_analyze
def test_the_sandbox_stays_tight(tmp_path: Path) -> None:
    done = _run(
        _unit_copy(tmp_path),
        "security",
        "--offline=true",
        f"--threshold={MAX_EXPOSURE}",
        "--no-pager",
        f"./{UNIT.name}",
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_unit_runs_the_console_with_the_studio_configuration() -> None:
    settings: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    assert settings["ExecStart"] == [
        f"{INSTALLED_EXEC} console --config /etc/livetable/console.toml"
    ]
    assert settings["DynamicUser"] == ["yes"], "the console keeps nothing: no user of its own"
    assert settings["MemoryDenyWriteExecute"] == ["yes"]
    assert "StateDirectory" not in settings, "the console stores nothing on disk"
