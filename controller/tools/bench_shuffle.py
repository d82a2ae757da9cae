"""`livetable bench shuffle`: how often the table's check of a new shoe alarms.

Each simulated shoe is dealt from the top through the table's own check
(:mod:`controller.games.shuffle_check`) over its watched cards: shuffled shoes measure false
alarms (the check's bound is one in 1e8), shoes in factory order and riffled from it measure
detection, and after how many cards it came. Worker processes share the shoes out; each
order's shoes come from one seeded generator per worker, so a run is repeatable.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from controller.games.shuffle_check import WATCHED_CARDS, check_cards
from controller.kernel.cli_support import add_json, examples, non_negative_int, positive_int
from controller.kernel.stats import percentile
from simulators.shoe.orders import shoe_cards

DEFAULT_ORDERS = ("shuffled", "factory", "riffle:1", "riffle:2", "riffle:3")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "shuffle",
        help="false alarms and detections of the check for an unshuffled shoe",
        description=(
            "Deal simulated 8-deck shoes through the table's check for a shoe that was never "
            "shuffled: false alarms on shuffled shoes, detections (and after how many cards) "
            "on decks in factory order and riffled from it."
        ),
        epilog=examples(
            "livetable bench shuffle --shoes 1000000 --order shuffled",
            "livetable bench shuffle --shoes 10000 --json",
        ),
    )
    parser.add_argument("--shoes", type=positive_int, default=10_000, help="shoes per order")
    parser.add_argument(
        "--order",
        action="append",
        help=f"an order as `livetable sim shoe --order` takes it (repeatable; default: "
        f"{', '.join(DEFAULT_ORDERS)})",
    )
    parser.add_argument("--workers", type=positive_int, default=2, help="processes (default 2)")
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed (default 1)")
    add_json(parser)
    parser.set_defaults(func=run)


def _deal(order: str, shoes: int, seed: int) -> list[int | None]:
    """For each of ``shoes`` shoes: after how many cards the check alarmed, or None."""
    rng = random.Random(seed)
    return [check_cards(shoe_cards(order, 8, rng)[:WATCHED_CARDS])[1] for _ in range(shoes)]


def measure(order: str, shoes: int, workers: int, seed: int) -> dict[str, Any]:
    shares = [shoes // workers + (index < shoes % workers) for index in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        parts = pool.map(
            _deal, [order] * workers, shares, [seed * 1000 + i for i in range(workers)]
        )
        alarms = [at for part in parts for at in part if at is not None]
    return {
        "order": order,
        "shoes": shoes,
        "alarmed": len(alarms),
        "rate": len(alarms) / shoes,
        "cards_p50": percentile(alarms, 50) if alarms else None,
        "cards_max": max(alarms) if alarms else None,
    }


def run(args: argparse.Namespace) -> int:
    results = [
        measure(order, args.shoes, args.workers, args.seed)
        for order in (args.order or DEFAULT_ORDERS)
    ]
    if args.json:
        json.dump({"watched_cards": WATCHED_CARDS, "results": results}, sys.stdout)
        print()
        return 0
    print(f"check of a new shoe over its first {WATCHED_CARDS} cards")
    for row in results:
        cards = (
            f"after {row['cards_p50']:g} cards (median), {row['cards_max']} at most"
            if row["alarmed"]
            else ""
        )
        print(
            f"  {row['order']:<10} {row['alarmed']:>8} of {row['shoes']} alarmed "
            f"({100 * row['rate']:.2f} %) {cards}"
        )
    return 0
