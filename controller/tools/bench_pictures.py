"""`livetable bench pictures`: what a picture of every card costs the table, per card.

A table (its journal in a temporary folder) deals rounds driven as the crash runner drives
them, with the camera simulator's felt as the camera: every card the table takes is laid in
its slot (face down where the round says so), the felt is cleared as a round ends. The
table's own :class:`~controller.service.pictures.Photographer` pictures each card and each
round's end, as ``livetable run`` does, on the table's thread: the CPU time of that work
(the crop, the JPEG, the SHA-256, the file) and of journaling its row are measured per
picture, the camera's own rendering of the frame left out (a real camera delivers frames
on its own thread). Reported: CPU milliseconds per card picture and per table picture
(p50, p99), bytes per picture, and the disk a round takes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from controller.kernel.cli_support import add_json, examples, non_negative_int, positive_int
from controller.kernel.stats import percentile

DEFAULT_ROUNDS = 40


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pictures",
        help="what a picture of every card costs the table (CPU and bytes per card)",
        description=(
            "Deal rounds on a table with the camera simulator's felt as its camera and "
            "measure what the picture of every card costs on the table's thread (the crop, "
            "the JPEG, the SHA-256, the file and its journal row) and on disk."
        ),
        epilog=examples(
            "livetable bench pictures",
            "livetable bench pictures --game blackjack-classic --rounds 20 --json",
        ),
    )
    parser.add_argument("--game", default="baccarat", help="the game dealt (default baccarat)")
    parser.add_argument(
        "--rounds", type=positive_int, default=DEFAULT_ROUNDS, help="rounds dealt (default 40)"
    )
    parser.add_argument(
        "--design", default="kde-standard", help="card design on the felt (default kde-standard)"
    )
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed (default 1)")
    add_json(parser)
    parser.set_defaults(func=run)


def measure(game: str, rounds: int, design: str, seed: int, folder: Path) -> dict[str, Any]:
    """Deal ``rounds`` rounds of ``game`` with pictures, journal in ``folder``."""
    from controller.games.registry import GAME_IDS
    from controller.kernel.errors import ConfigurationError, DeviceError
    from controller.service.config import LivetableConfig
    from controller.service.journaled_table import JournaledTable
    from controller.service.pictures import PictureStore, photographer, pictures_dir
    from controller.service.runtime import TableRuntime
    from controller.table.config import TableConfig
    from controller.table.effects import EffectBatch, PublishEvent
    from controller.table.events import CardDrawn
    from controller.tools.crash_runner import START_TIME, next_event
    from drivers.camera import card_slot
    from simulators.camera import SimulatedCamera

    if game not in GAME_IDS:
        raise ConfigurationError(f"unknown game {game!r} (expected one of {', '.join(GAME_IDS)})")
    config = TableConfig(table_id="bench", game=game, journal_path=folder / "bench.journal")
    camera = SimulatedCamera(game, design, seed=seed)
    table, _ = JournaledTable.open(config, at=START_TIME, start=False)

    class Nothing:
        def carry_out(self, batch: EffectBatch) -> None:
            pass

    runtime = TableRuntime(table, Nothing())
    taker = photographer(LivetableConfig(table=config), table, camera, time.time)
    current: list[object] = [None]
    costs: dict[str, list[float]] = {"card": [], "table": []}
    # Wall time too: the row's flush to disk (synchronous=FULL) waits without CPU.
    waits: dict[str, list[float]] = {"card": [], "table": []}
    counts: dict[str, int] = {}

    def follow(batch: EffectBatch) -> list[object]:
        event = current[0]
        for effect in batch.effects:
            if isinstance(effect, PublishEvent) and effect.name == "card_dealt":
                position = str(effect.payload["position"])
                live = table.machine.state.round
                held = live.cards_held(position) if live is not None else None
                counts[position] = counts.get(position, 0) + 1
                if isinstance(event, CardDrawn):
                    # A split's cards are not moved on this felt: a slot already taken
                    # keeps its card (the picture is taken all the same).
                    with contextlib.suppress(DeviceError):
                        camera.deal(
                            card_slot(position, held or counts[position]),
                            event.card,
                            face_down=bool(effect.payload.get("face_down")),
                        )
        camera.latest()  # the camera's rendering, done by the camera's thread in service
        pictures = []
        # One effect at a time, so that each picture's cost is its own.
        for effect in batch.effects:
            started, clock_started = time.process_time(), time.perf_counter()
            taken = taker.after(EffectBatch((effect,), batch.journal_seq, None, batch.at))
            for picture in taken:
                runtime.table.handle(picture)  # its row, as the runtime journals it
                kind = "card" if picture.view == "card" else "table"
                costs[kind].append(time.process_time() - started)
                waits[kind].append(time.perf_counter() - clock_started)
            pictures += taken
        if any(picture.view != "card" for picture in pictures):
            camera.clear()
            counts.clear()
        return []

    runtime.follow = follow
    for event in table.start_events(START_TIME):
        runtime.handle(event)
    settled = seq = 0
    wall = time.perf_counter()
    while settled < rounds:
        seq += 1
        event = next_event(table.machine, seed, seq)
        current[0] = event
        for effect in runtime.handle(event):
            ended = ("round_settled", "round_voided")
            if isinstance(effect, PublishEvent) and effect.name in ended:
                settled += 1
    wall = time.perf_counter() - wall
    rows = table.journal.last_seq
    table.close()
    store = PictureStore(pictures_dir(config.journal_path))
    sizes: dict[str, list[int]] = {"card": [], "table": []}
    from controller.service.journal import Journal
    from controller.service.pictures import picture_rows

    with Journal(config.journal_path, read_only=True) as journal:
        for row in picture_rows(journal):
            sizes["card" if row.fields["view"] == "card" else "table"].append(row.fields["size"])
    return {
        "game": game,
        "rounds": rounds,
        "journal_rows": rows,
        "frame": list(camera.latest().image.shape[1::-1]),
        "cards_pictured": len(sizes["card"]),
        "tables_pictured": len(sizes["table"]),
        "missed": taker.missed,
        "card_cpu_ms": _spread([1000 * each for each in costs["card"]]),
        "table_cpu_ms": _spread([1000 * each for each in costs["table"]]),
        "card_wall_ms": _spread([1000 * each for each in waits["card"]]),
        "table_wall_ms": _spread([1000 * each for each in waits["table"]]),
        "card_bytes": _spread(sizes["card"]),
        "table_bytes": _spread(sizes["table"]),
        "bytes_per_round": store.bytes_kept / max(1, rounds),
        "wall_s": wall,
    }


def _spread(values: list[float] | list[int]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "mean": None}
    return {
        "p50": percentile(values, 50),
        "p99": percentile(values, 99),
        "mean": sum(values) / len(values),
    }


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="livetable-bench-pictures-") as folder:
        result = measure(args.game, args.rounds, args.design, args.seed, Path(folder))
    if args.json:
        json.dump(result, sys.stdout)
        print()
        return 0
    card, table = result["card_cpu_ms"], result["table_cpu_ms"]
    card_wall, table_wall = result["card_wall_ms"], result["table_wall_ms"]
    width, height = result["frame"]
    print(
        f"{result['game']}: {result['rounds']} rounds, {result['cards_pictured']} cards and "
        f"{result['tables_pictured']} tables pictured ({width}x{height} frames), "
        f"{result['missed']} missed"
    )
    print(
        f"  a card:  {card['p50']:.2f} ms CPU p50, {card['p99']:.2f} p99 "
        f"({card_wall['p50']:.2f} / {card_wall['p99']:.2f} ms of the table's thread); "
        f"{result['card_bytes']['mean']:,.0f} bytes on average"
    )
    if table["p50"] is not None:
        print(
            f"  a table: {table['p50']:.2f} ms CPU p50, {table['p99']:.2f} p99 "
            f"({table_wall['p50']:.2f} / {table_wall['p99']:.2f} ms of the table's thread); "
            f"{result['table_bytes']['mean']:,.0f} bytes on average"
        )
    print(f"  disk: {result['bytes_per_round']:,.0f} bytes a round")
    return 0
