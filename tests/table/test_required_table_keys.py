"""`[table] id` and `[table] journal_path` have no default: a file without one is refused
with the one-line error every other bad key gets (the file and the key named), instead of a
table called ``table`` (which the studio ACL silences) or a journal in the current folder.
Every writer of a table configuration gives both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.kernel.errors import ConfigurationError
from controller.service.config import load_config
from simulators.table_config import write_table_config
from tests.support.daemon import REPO_ROOT

FULL = {
    "id": '"t7"',
    "game": '"baccarat"',
    "journal_path": '"t7.journal"',
}
SHOE = '[shoe]\nport = "/dev/null"\nprotocol = "angel-eye"\n'
MQTT = '[mqtt]\nhost = "127.0.0.1"\n'


def _table_without(key: str) -> str:
    lines = [f"{name} = {value}" for name, value in FULL.items() if name != key]
    return "[table]\n" + "\n".join(lines) + "\n" + SHOE + MQTT


def _refusal(path: Path, text: str, environ: dict[str, str] | None = None) -> str:
    path.write_text(text)
    with pytest.raises(ConfigurationError) as refused:
        load_config(path, environ={} if environ is None else environ)
    return str(refused.value)


def test_a_complete_table_section_loads(tmp_path: Path) -> None:
    path = tmp_path / "t7.toml"
    path.write_text(_table_without(""))
    table = load_config(path, environ={}).table
    assert (table.table_id, table.journal_path) == ("t7", tmp_path / "t7.journal")


@pytest.mark.parametrize("key", ["id", "journal_path"])
def test_a_missing_key_is_refused_naming_the_file_and_the_key(tmp_path: Path, key: str) -> None:
    path = tmp_path / "t7.toml"
    assert _refusal(path, _table_without(key)) == f"{path}: [table] needs {key}"


def test_the_environment_may_give_the_journal_path_instead(tmp_path: Path) -> None:
    """Containers set LIVETABLE_JOURNAL_PATH, which overrides the file's journal_path."""
    path = tmp_path / "t7.toml"
    path.write_text(_table_without("journal_path"))
    environ = {"LIVETABLE_JOURNAL_PATH": str(tmp_path / "data" / "t7.journal")}
    table = load_config(path, environ=environ).table
    assert table.journal_path == tmp_path / "data" / "t7.journal"


def test_an_empty_journal_path_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "t7.toml"
    text = _table_without("journal_path").replace("[shoe]", 'journal_path = ""\n[shoe]')
    assert _refusal(path, text) == f"{path}: journal_path must be a non-empty string"


def test_livetable_run_without_an_id_says_so_in_one_line_and_writes_nothing(
    tmp_path: Path,
) -> None:
    config = tmp_path / "t7.toml"
    config.write_text(_table_without("id"))
    work = tmp_path / "cwd"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", "run", "--config", str(config)],
        cwd=work,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [f"livetable: error: {config}: [table] needs id"]
    assert sorted(work.iterdir()) == [] and sorted(tmp_path.iterdir()) == sorted([config, work])


def test_livetable_run_without_a_journal_path_leaves_the_current_folder_alone(
    tmp_path: Path,
) -> None:
    config = tmp_path / "t7.toml"
    config.write_text(_table_without("journal_path"))
    work = tmp_path / "cwd"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "controller.tools.cli", "run", "--config", str(config)],
        cwd=work,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [f"livetable: error: {config}: [table] needs journal_path"]
    assert sorted(work.iterdir()) == []


def test_the_shared_writer_gives_both_keys(tmp_path: Path) -> None:
    """The writer of the demo's, the bench's and the tests' tables."""
    path = write_table_config(
        tmp_path / "t3.toml", table_id="t3", game="baccarat", shoe_port="/dev/null", broker_port=1
    )
    table = load_config(path, environ={}).table
    assert (table.table_id, table.journal_path) == ("t3", tmp_path / "t3.journal")


def test_the_documented_table_section_gives_both_keys(tmp_path: Path) -> None:
    """The TOML example in controller/table/config.py's docstring (the reference for the
    keys, shown by docs/table.md's pointer to it) loads as it is."""
    import controller.table.config

    doc = controller.table.config.__doc__ or ""
    example = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "t1.toml"
    path.write_text(example)
    table = load_config(path, environ={}).table
    assert table.table_id == "t1" and table.journal_path == Path("/var/lib/livetable/t1.journal")
