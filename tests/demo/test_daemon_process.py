"""The tests' and the demo's handle on a ``livetable run`` child process."""

from __future__ import annotations

from pathlib import Path

from simulators.daemon_process import DaemonProcess


def test_the_log_of_this_start_leaves_out_what_earlier_starts_wrote(tmp_path: Path) -> None:
    # A configuration that is not there: each start logs one error of its own and exits.
    daemon = DaemonProcess(tmp_path / "missing.toml", tmp_path / "daemon.log")
    daemon.start()
    assert daemon.process is not None and daemon.process.wait(30) != 0
    first = daemon.log()
    assert "missing.toml" in first
    daemon.start()
    assert daemon.process is not None and daemon.process.wait(30) != 0
    assert daemon.log() == first + daemon.log_of_this_start()
    assert daemon.log_of_this_start().count("missing.toml") == first.count("missing.toml")
