"""`livetable bench shoe`: the driver timed from a simulated shoe in another process.

Speed itself is never asserted here (the machine is shared): only that every frame is
timed and the figures are in order.
"""

from __future__ import annotations

import json

import pytest

from controller.tools.cli import main
from simulators.shoe import bench


@pytest.mark.parametrize("protocol", ["angel-eye", "native"])
def test_bench_measures_every_frame(protocol: str) -> None:
    figures = bench.measure(protocol, 40)
    assert figures["frames"] == 40
    assert 0 < figures["min_ms"] <= figures["p50_ms"] <= figures["p99_ms"] <= figures["max_ms"]
    assert figures["consumer_p50_ms"] <= figures["consumer_p99_ms"]


def test_bench_shoe_reports_one_json_line_per_protocol(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "shoe", "--protocol", "ascii", "--frames", "20", "--json", "-v"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    figures = json.loads(line)
    assert figures["protocol"] == "ascii" and figures["frames"] == 20
    assert figures["p99_target_ms"] == bench.P99_TARGET_MS
    assert figures["meets"] == (figures["p99_ms"] < bench.P99_TARGET_MS)


def test_bench_shoe_refuses_no_frames(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "shoe", "--frames", "0"])
    assert exit_.value.code == 2
    assert "argument --frames: 0 is not a positive" in capsys.readouterr().err
