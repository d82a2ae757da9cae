"""``livetable bench shoe``: latency from a frame's last byte on the pty to its event on the queue.

It drives the real shoe driver (:mod:`drivers.shoe.driver`) from a simulated shoe, so it
lives beside the simulator: the drivers never import the simulators.

The simulated shoe runs in its own process, as a real shoe is outside ours. It writes one
card frame to a real pty and notes the time just before the write() that hands over its last
byte (so the figure includes that system call); the driver's reader thread decodes it and
puts the event on the queue, which notes the time of ``put``. One frame at a time (a dealer
never has two on the line), so the figure is the driver's own latency, not queueing.
"consumer woken" adds the time until the thread waiting on the queue runs. Reported as
percentiles from one run: the machine is shared, compare runs on the same machine only.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.kernel.cli_support import (
    add_json,
    examples,
    non_negative_int,
    positive_int,
    print_json,
)
from controller.kernel.errors import DeviceError
from controller.kernel.stats import percentile
from drivers.shoe.registry import protocol_names

P99_TARGET_MS = 2.0


class StampedQueue(queue.Queue):  # type: ignore[type-arg]
    """A queue that notes when each item was put (time.perf_counter)."""

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        super().put((time.perf_counter(), item), block, timeout)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "shoe",
        help="shoe driver latency, pty to queue",
        description=(
            "Latency of the shoe driver: from the last byte of a card frame written to a real "
            "pty, by a simulated shoe in another process, to the driver's event put on its "
            "queue, one frame at a time; and the time until the thread waiting on the queue "
            "runs. Percentiles from one run, against the target p99 < "
            f"{P99_TARGET_MS:g} ms: compare runs on the same machine only."
        ),
        epilog=examples(
            "livetable bench shoe", "livetable bench shoe --protocol angel-eye --frames 2000"
        ),
    )
    parser.add_argument(
        "--protocol",
        choices=(*protocol_names(), "all"),
        default="all",
        help="the shoe protocol timed (default all, one after the other)",
    )
    parser.add_argument(
        "--frames", type=positive_int, default=10_000, help="card frames timed per protocol"
    )
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed (default 1)")
    add_json(parser)
    parser.set_defaults(func=run)


def _shoe_process(protocol: str, link: str, seed: int) -> None:
    """The simulated shoe, in its own process as a real shoe is: one ``draw`` line in, the
    time just before its frame's last byte was written out (``repr`` of a float)."""
    from simulators.shoe.simulator import ShoeSimulator

    with ShoeSimulator(protocol, link, seed=seed) as simulator:
        print("ready", flush=True)
        for line in sys.stdin:
            if line.strip() != "draw":
                break
            if simulator.cards_left == 0:
                simulator.new_shoe()
            simulator.draw()
            print(repr(simulator.last_write_at), flush=True)


def _no_progress(_steps: int) -> None:
    pass


def measure(
    protocol: str,
    frames: int,
    seed: int = 1,
    advance: Callable[[int], None] = _no_progress,
) -> dict[str, float]:
    """Latencies in milliseconds for ``frames`` frames; see the module docstring.

    The simulator runs in a child process (``python -m simulators.shoe.bench --shoe ...``;
    time.perf_counter is the system-wide monotonic clock, so its stamps compare with ours),
    so it does not compete with the driver for this interpreter's GIL, as a real shoe would
    not.
    """
    # Imported here: `livetable --help` must not open ptys or start threads.
    from drivers.shoe.driver import ShoeConfig, ShoeDriver
    from drivers.shoe.events import CardDrawn, CardMisread, CutCardDrawn, ShoeOnline

    latencies: list[float] = []
    wakeups: list[float] = []
    with tempfile.TemporaryDirectory(prefix="livetable-bench-") as directory:
        link = str(Path(directory) / "shoe")
        shoe = subprocess.Popen(
            [sys.executable, "-m", "simulators.shoe.bench", "--shoe", protocol, link, str(seed)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert shoe.stdin is not None and shoe.stdout is not None
        try:
            if shoe.stdout.readline().strip() != "ready":
                raise DeviceError("the simulated shoe did not start")
            events = StampedQueue()
            driver = ShoeDriver(ShoeConfig(link, protocol), events.put)
            with driver:
                while not isinstance(events.get(timeout=10)[1], ShoeOnline):
                    pass
                while len(latencies) < frames:
                    shoe.stdin.write("draw\n")
                    shoe.stdin.flush()
                    while True:
                        put_at, event = events.get(timeout=10)
                        if isinstance(event, CardDrawn | CutCardDrawn | CardMisread):
                            break
                    got_at = time.perf_counter()
                    written = float(shoe.stdout.readline())
                    latencies.append((put_at - written) * 1000)
                    wakeups.append((got_at - written) * 1000)
                    advance(1)  # after the frame's stamps were taken
        finally:
            with contextlib.suppress(OSError):
                shoe.stdin.close()
            try:
                shoe.wait(10)
            except subprocess.TimeoutExpired:  # pragma: no cover - only if the child hung
                shoe.kill()
                shoe.wait()
            shoe.stdout.close()
    latencies.sort()
    return {
        "frames": len(latencies),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "min_ms": latencies[0],
        "max_ms": latencies[-1],
        "mean_ms": statistics.fmean(latencies),
        "consumer_p50_ms": percentile(wakeups, 50),
        "consumer_p99_ms": percentile(wakeups, 99),
    }


def run(args: argparse.Namespace) -> int:
    # The ASCII shoe's cut card reads as a bad line: expected here, not worth a warning each.
    # Only while the bench runs: a caller in the same process keeps the driver's warnings.
    shoe_logger = logging.getLogger("drivers.shoe")
    level = shoe_logger.level
    shoe_logger.setLevel(logging.ERROR)
    try:
        return _run(args)
    finally:
        shoe_logger.setLevel(level)


def _run(args: argparse.Namespace) -> int:
    from controller.kernel.progress import progress

    protocols = protocol_names() if args.protocol == "all" else (args.protocol,)
    if not args.json:
        print(
            f"shoe latency, last byte on the pty -> event put on the queue ({args.frames} frames)"
        )
    for protocol in protocols:
        # A bar on a terminal's stderr only, one protocol at a time (its lines print between).
        with progress(args.frames, f"{protocol} frames") as advance:
            figures = measure(protocol, args.frames, args.seed, advance)
        meets = figures["p99_ms"] < P99_TARGET_MS
        if args.json:
            print_json(
                {"protocol": protocol, **figures, "p99_target_ms": P99_TARGET_MS, "meets": meets}
            )
            continue
        print(
            f"{protocol:>10}: p50 {figures['p50_ms']:.3f} ms  p99 {figures['p99_ms']:.3f} ms  "
            f"min {figures['min_ms']:.3f} ms  max {figures['max_ms']:.3f} ms  "
            f"mean {figures['mean_ms']:.3f} ms  "
            f"({'meets' if meets else 'MISSES'} p99 < {P99_TARGET_MS} ms; consumer woken: "
            f"p50 {figures['consumer_p50_ms']:.3f} ms, p99 {figures['consumer_p99_ms']:.3f} ms)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--shoe":
        _shoe_process(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit("usage: livetable bench shoe (this module's own entry is for its child shoe)")
