"""`livetable bench table`: how long the table takes per event, and per journaled event.

Three figures, each as percentiles from one run (the machine is shared and noisy):

- ``handle``: one :meth:`TableMachine.handle` call, for each game, over a long scripted
  session (the crash runner's well-behaved table: shoes, burns, rounds, decisions, cut
  cards, a few pauses); choosing the next event is outside the timed region;
- ``append``: one journal append committed with ``synchronous=FULL`` (what the disk's
  flush costs; run it where the real journal lives with ``--dir``);
- ``replay``: journal rows replayed per second at start-up.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.games.registry import GAME_IDS
from controller.kernel.cli_support import (
    add_json,
    examples,
    non_negative_int,
    positive_int,
)
from controller.kernel.stats import percentile


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "table",
        help="state machine time per event, journal append latency, replay rate",
        description=(
            "Time per event through the table's state machine (per game), journal append "
            "latency with synchronous=FULL, and the replay rate, as percentiles of one run."
        ),
        epilog=examples(
            "livetable bench table", "livetable bench table --dir /var/lib/livetable --json"
        ),
    )
    parser.add_argument("--events", type=positive_int, default=20_000, help="events per game")
    parser.add_argument("--appends", type=positive_int, default=300, help="journal appends timed")
    parser.add_argument("--dir", type=Path, default=None, help="where the test journal goes")
    parser.add_argument("--game", action="append", choices=GAME_IDS, help="only this game")
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed (default 1)")
    add_json(parser)
    parser.set_defaults(func=run)


def percentiles(samples: list[float], scale: float) -> dict[str, float]:
    """p50, p90, p99 (:func:`controller.kernel.stats.percentile`, as every bench) and the maximum of
    ``samples``, each times ``scale`` (seconds to the unit reported) to two decimals."""
    figures = {f"p{percent}": percentile(samples, percent) for percent in (50, 90, 99)}
    figures["max"] = max(samples)
    return {name: round(value * scale, 2) for name, value in figures.items()}


def bench_handle(
    game: str, events: int, seed: int, advance: Callable[[int], None] = lambda _steps: None
) -> dict[str, Any]:
    from controller.table.config import TableConfig
    from controller.table.events import ControllerStarted
    from controller.table.machine import TableMachine
    from controller.tools.crash_runner import next_event

    machine = TableMachine(TableConfig(table_id="bench", game=game))
    event: object = ControllerStarted(0.0)
    samples = []
    for seq in range(1, events + 1):
        start = time.perf_counter()
        machine.handle(event)
        samples.append(time.perf_counter() - start)
        event = next_event(machine, seed, seq + 1)
        advance(1)  # outside the timed span
    return {
        "game": game,
        "events": events,
        "rounds": machine.state.rounds_started,
        "handle_us": percentiles(samples, 1e6),
    }


def bench_journal(
    directory: Path,
    appends: int,
    seed: int,
    advance: Callable[[int], None] = lambda _steps: None,
) -> dict[str, Any]:
    from controller.service.journal import Journal
    from controller.service.journaled_table import replay
    from controller.table.config import TableConfig
    from controller.table.events import ControllerStarted
    from controller.table.machine import TableMachine
    from controller.tools.crash_runner import next_event

    config = TableConfig(table_id="bench", game="baccarat", journal_path=directory / "bench.db")
    machine = TableMachine(config)
    samples = []
    with Journal(config.journal_path) as journal:
        event: object = ControllerStarted(0.0)
        for seq in range(1, appends + 1):
            start = time.perf_counter()
            journal.append(event)
            samples.append(time.perf_counter() - start)
            machine.handle(event)
            event = next_event(machine, seed, seq + 1)
            advance(1)
        start = time.perf_counter()
        replay(journal, config)
        replay_s = time.perf_counter() - start
    return {
        "appends": appends,
        "append_ms": percentiles(samples, 1e3),
        "replay_rows_per_s": round(appends / replay_s),
    }


def run(args: argparse.Namespace) -> int:
    from controller.kernel.progress import progress

    games = args.game or list(GAME_IDS)
    # A bar on a terminal (stderr) only; it advances outside the timed spans.
    with progress(len(games) * args.events + args.appends, "events and appends") as advance:
        results: dict[str, Any] = {
            "handle": [bench_handle(game, args.events, args.seed, advance) for game in games]
        }
        with tempfile.TemporaryDirectory(dir=args.dir) as directory:
            results["journal"] = bench_journal(Path(directory), args.appends, args.seed, advance)
    if args.json:
        json.dump(results, sys.stdout)
        print()
        return 0
    for row in results["handle"]:
        figures = row["handle_us"]
        print(
            f"handle {row['game']:<20} {row['events']} events, {row['rounds']} rounds: "
            f"p50 {figures['p50']} us, p90 {figures['p90']} us, p99 {figures['p99']} us, "
            f"max {figures['max']} us"
        )
    journal = results["journal"]
    figures = journal["append_ms"]
    print(
        f"journal append (synchronous=FULL) x{journal['appends']}: p50 {figures['p50']} ms, "
        f"p90 {figures['p90']} ms, p99 {figures['p99']} ms, max {figures['max']} ms"
    )
    print(f"replay: {journal['replay_rows_per_s']} rows/s")
    return 0
