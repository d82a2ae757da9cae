"""`livetable bench journal-year`: a year of journal, and how long a start takes on it.

A table dealing around the clock writes about 20,000 journal rows a day (:data:`ROWS_PER_DAY`:
some 80 baccarat rounds an hour, each some ten rows). The bench writes ``--days`` of them
(365 by default, about 7 million rows) as the table writes them (the crash runner's
well-behaved table: shoes, burns, rounds, cut cards, a few pauses; a checkpoint at each shoe's
end), without waiting for the disk at each row (what is measured is the start, not the
append: ``livetable bench table`` times that). Then, each in a fresh process:

- ``start``: :meth:`JournaledTable.open` on that journal (what ``livetable run`` does before
  it says READY), its wall time and the process's resident memory after it and at its peak;
  the same at a quarter of the rows, so that a start that grows with the journal shows;
- ``play``: ``--rounds`` rounds played on after that start, through the runtime and the
  publisher with its outbox (as the daemon carries effects out), the resident memory
  sampled every tenth of them: a leak shows as a rising line.

``--full-replay`` also times a replay of every row (a start before checkpoints, and what
``journal verify --replay`` does).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from controller.games.registry import GAME_IDS
from controller.kernel.cli_support import add_json, examples, non_negative_int, positive_int

ROWS_PER_DAY: Final = 20_000
START_TIME: Final = 1_800_000_000.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "journal-year",
        help="a year of journal: start-up time and memory, memory over hours of play",
        description=(
            "Write --days of a busy table's journal (20,000 rows a day), then measure a "
            "start on it (time, resident memory) and the memory over --rounds of play."
        ),
        epilog=examples(
            "livetable bench journal-year --days 30",
            "livetable bench journal-year --dir /var/lib/livetable --json",
        ),
    )
    parser.add_argument("--days", type=positive_int, default=365, help="days of journal")
    parser.add_argument(
        "--rows-per-day",
        type=positive_int,
        default=ROWS_PER_DAY,
        help=f"journal rows a day (default {ROWS_PER_DAY})",
    )
    parser.add_argument(
        "--rounds", type=non_negative_int, default=20_000, help="rounds played after the start"
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the journal goes")
    parser.add_argument("--game", choices=GAME_IDS, default="baccarat", help="the table's game")
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed (default 1)")
    parser.add_argument(
        "--full-replay", action="store_true", help="also time a replay of every row"
    )
    add_json(parser)
    parser.set_defaults(func=run)


def rss_mib() -> float:
    """This process's resident memory now, in MiB (from /proc)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return round(pages * resource.getpagesize() / (1 << 20), 1)


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def write_journal(path: Path, game: str, rows: int, seed: int) -> dict[str, Any]:
    """Play the crash runner's table until the journal at ``path`` holds ``rows`` rows."""
    from controller.kernel.progress import progress
    from controller.service.journaled_table import JournaledTable
    from controller.table.config import TableConfig
    from controller.table.events import ControllerStarted
    from controller.tools.crash_runner import next_event

    config = TableConfig(table_id="bench", game=game, journal_path=path)
    table, _ = JournaledTable.open(config, at=START_TIME, start=False, durable=False)
    began = time.perf_counter()
    try:
        journal = table.journal
        event: object = ControllerStarted(START_TIME + journal.last_seq + 1)
        with progress(rows, "journal rows") as advance:
            while journal.last_seq < rows:
                before = journal.last_seq
                table.handle(event)
                checkpoint = table.take_checkpoint()
                if checkpoint is not None:
                    table.handle(checkpoint)
                advance(journal.last_seq - before)
                event = next_event(table.machine, seed, journal.last_seq + 1)
        rounds = table.machine.state.rounds_started
        shoes = table.machine.state.shoes_started
    finally:
        table.close()
    return {
        "rows": rows,
        "rounds": rounds,
        "shoes": shoes,
        "write_s": round(time.perf_counter() - began, 1),
        "bytes": path.stat().st_size,
    }


def measure_start(path: Path, rounds: int, seed: int, full: bool) -> dict[str, Any]:
    """In this process: open the table on ``path`` as a start does, then play ``rounds``."""
    from controller.service.journal import Journal
    from controller.service.journaled_table import JournaledTable, config_of, replay
    from controller.service.outbox import Outbox, outbox_path
    from controller.service.publishing import Publications
    from controller.service.runtime import TableRuntime
    from controller.table.effects import EffectBatch
    from controller.tools.crash_runner import next_event

    with Journal(path, read_only=True) as journal:
        config = config_of(journal)
    config = dataclasses.replace(config, journal_path=path)
    result: dict[str, Any] = {"rss_before_mib": rss_mib()}
    began = time.perf_counter()
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)
    result["start_s"] = round(time.perf_counter() - began, 3)
    result["rss_after_start_mib"] = rss_mib()
    result["peak_rss_start_mib"] = peak_rss_mib()
    table.close()
    if full:
        with Journal(path, read_only=True) as journal:
            began = time.perf_counter()
            replay(journal, config, config.operational())
            result["full_replay_s"] = round(time.perf_counter() - began, 1)
    if rounds == 0:
        return result
    # The play: what the daemon does per row (the runtime's queue and timers, the publisher
    # and its outbox, a broker that acknowledges every event), on a clock that follows the
    # events' times (so the timers fall due as they would), without waiting for the disk.
    table, _ = JournaledTable.open(config, at=START_TIME, start=False, durable=False)
    outbox = Outbox(outbox_path(path))
    publications = Publications("bench", outbox, table.journal.epoch)
    publications.live()

    class Publish:
        def carry_out(self, batch: EffectBatch) -> None:
            publications.record(batch)
            outbox.note_delivered(outbox.last_seq)

    from controller.table.events import ControllerStarted

    event: Any = ControllerStarted(START_TIME + table.journal.last_seq)
    runtime = TableRuntime(table, Publish(), clock=lambda: float(event.at))
    machine = table.machine
    first = machine.state.rounds_started
    samples: list[float] = []
    every = max(1, rounds // 10)
    try:
        while machine.state.rounds_started - first < rounds:
            played = machine.state.rounds_started - first
            runtime.submit(event)
            runtime.step(0.0)
            if machine.state.rounds_started - first != played and played % every == 0:
                samples.append(rss_mib())
            event = next_event(machine, seed, table.journal.last_seq + 1)
        samples.append(rss_mib())
        result["outbox_bytes"] = outbox_path(path).stat().st_size
    finally:
        table.close()
        outbox.close()
    result["play_rounds"] = rounds
    result["play_rss_mib"] = samples
    return result


def start_in_child(path: Path, rounds: int, seed: int, full: bool) -> dict[str, Any]:
    """:func:`measure_start` in a fresh interpreter, so its memory is a start's alone."""
    command = [sys.executable, "-m", "controller.tools.bench_journal", str(path), str(rounds)]
    command += [str(seed), "full" if full else "start"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the start's process failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def run(args: argparse.Namespace) -> int:
    rows = args.days * args.rows_per_day
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        path = Path(directory) / "bench.journal"
        quarter = write_journal(path, args.game, max(1, rows // 4), args.seed)
        at_quarter = start_in_child(path, 0, args.seed, False)
        written = write_journal(path, args.game, rows, args.seed)
        written["write_s"] = round(written["write_s"] + quarter["write_s"], 1)
        at_full = start_in_child(path, args.rounds, args.seed, args.full_replay)
    results = {
        "days": args.days,
        "game": args.game,
        "journal": written,
        "start_at_quarter": {"rows": quarter["rows"], **at_quarter},
        "start": at_full,
    }
    if args.json:
        json.dump(results, sys.stdout)
        print()
        return 0
    print(
        f"journal: {args.days} days, {written['rows']} rows, {written['rounds']} rounds, "
        f"{written['shoes']} shoes, {written['bytes'] / (1 << 20):.0f} MiB "
        f"(written in {written['write_s']} s)"
    )
    for label, figures in (("a quarter", at_quarter), ("all", at_full)):
        print(
            f"start on {label} of it: {figures['start_s']} s, resident "
            f"{figures['rss_after_start_mib']} MiB (peak {figures['peak_rss_start_mib']} MiB, "
            f"{figures['rss_before_mib']} MiB before the journal was opened)"
        )
    if "full_replay_s" in at_full:
        print(f"full replay of every row: {at_full['full_replay_s']} s")
    if args.rounds:
        line = ", ".join(str(sample) for sample in at_full["play_rss_mib"])
        print(f"resident MiB over {args.rounds} rounds of play: {line}")
        print(f"outbox after them: {at_full['outbox_bytes'] / (1 << 20):.0f} MiB")
    return 0


def child_main(argv: list[str]) -> int:
    path, rounds, seed, mode = argv
    result = measure_start(Path(path), int(rounds), int(seed), mode == "full")
    json.dump(result, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
