"""`livetable bench rules`: rounds per second through the live step-by-step rules engine.

Baccarat rounds (and those of any game dealt without decisions: the registry's
``play_dealt``) are driven exactly as the table drives them — ``next_step()``, ``deal(card)``
until complete, then the settlement of all 18 bets — from cards shuffled beforehand, so the
figure is the engine's and not the random generator's. Blackjack rounds are played by the
blackjack engineer's ``blackjack_rtp.play_rounds`` (one box, basic strategy, the live
``BlackjackRound``; its shoe shuffling is inside the measured time).

One thread, so one core. Rates are reported as percentiles over batches of one run: the
machine is shared and noisy, a single mean would hide that.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from controller.games.registry import GAME_IDS, PlayDealt, game_spec
from controller.kernel.cards import ALL_FACES, DECKS_PER_SHOE, Card
from controller.kernel.cli_support import (
    add_json,
    examples,
    non_negative_int,
    positive_int,
)
from controller.kernel.stats import percentile

# The rules engine's speed targets in rounds per second on one core (docs/rules-baccarat.md,
# "Speed" and the bench table of its appendix).
BACCARAT_TARGET: Final = 100_000
BLACKJACK_TARGET: Final = 30_000


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rules",
        help="rounds per second through the live rules engine",
        description=(
            "Rounds per second through the live step-by-step rules engine, one core: "
            "baccarat and each blackjack game, as percentiles over batches."
        ),
        epilog=examples("livetable bench rules", "livetable bench rules --game baccarat --json"),
    )
    parser.add_argument("--batches", type=positive_int, default=15, help="timed batches per game")
    parser.add_argument(
        "--baccarat-rounds",
        type=positive_int,
        default=20_000,
        help="rounds per batch of baccarat and every game dealt without decisions",
    )
    parser.add_argument(
        "--blackjack-rounds",
        type=positive_int,
        default=5_000,
        help="blackjack rounds per batch",
    )
    parser.add_argument(
        "--game",
        action="append",
        choices=GAME_IDS,
        help="only this game (repeatable); default all",
    )
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed (default 1)")
    add_json(parser)
    parser.set_defaults(func=run)


def baccarat_card_stream(seed: int, shoes: int = 20) -> list[Card]:
    """Shuffled 8-deck shoes end to end: the cards the benchmark deals from."""
    rng = random.Random(seed)
    stream: list[Card] = []
    for _ in range(shoes):
        shoe = list(ALL_FACES) * DECKS_PER_SHOE
        rng.shuffle(shoe)
        stream.extend(shoe)
    return stream


def play_baccarat_rounds(cards: Sequence[Card], start: int, rounds: int) -> int:
    """Play ``rounds`` live baccarat rounds dealing from ``cards[start:]`` (wrapping); the
    next index (the registry's ``play_dealt`` of baccarat)."""
    play = game_spec("baccarat").play_dealt
    assert play is not None
    return play(cards, start, rounds)


Rates = tuple[list[float], list[float]]


def _time_batches(
    play_batch: Callable[[int], None],
    batches: int,
    rounds: int,
    advance: Callable[[int], None] = lambda _steps: None,
) -> Rates:
    """Rounds per wall-clock second and per CPU second of this thread, per batch.

    On a shared machine the wall-clock rate also measures the other processes; the CPU-time
    rate is what one core does for this engine alone. Both are reported.
    """
    wall_rates, cpu_rates = [], []
    for index in range(batches):
        wall_started, cpu_started = time.perf_counter(), time.thread_time()
        play_batch(index)
        cpu = time.thread_time() - cpu_started
        wall = time.perf_counter() - wall_started
        wall_rates.append(rounds / wall)
        cpu_rates.append(rounds / max(cpu, 1e-9))
        advance(1)  # outside the timed span
    return wall_rates, cpu_rates


def bench_dealt(
    play: PlayDealt,
    batches: int,
    rounds: int,
    seed: int,
    advance: Callable[[int], None] = lambda _s: None,
) -> Rates:
    """Rates per batch of a game that takes only cards, through its ``play_dealt``."""
    cards = baccarat_card_stream(seed)
    position = 0

    def batch(_index: int) -> None:
        nonlocal position
        position = play(cards, position, rounds)

    batch(-1)  # warm-up: caches and the settlement memo, as on a running table
    return _time_batches(batch, batches, rounds, advance)


def bench_blackjack(
    game: str,
    batches: int,
    rounds: int,
    seed: int,
    advance: Callable[[int], None] = lambda _s: None,
) -> Rates | str:
    """Rates per batch, or why blackjack cannot be measured in this build."""
    try:
        blackjack_rtp = importlib.import_module("controller.games.blackjack_rtp")
    except ImportError as error:
        return f"blackjack rules not available: {error}"
    play_rounds = getattr(blackjack_rtp, "play_rounds", None)
    if play_rounds is None:
        simulate = blackjack_rtp.simulate

        def play_rounds(game: str, rounds: int, seed: int) -> None:
            simulate(game, rounds, seed, None)

    play_rounds(game, max(1, rounds // 10), seed)  # warm-up
    return _time_batches(
        lambda index: play_rounds(game, rounds, seed + index), batches, rounds, advance
    )


def _percentiles(rates: list[float], prefix: str = "") -> dict[str, float]:
    return {
        f"{prefix}p10": percentile(rates, 10),
        f"{prefix}p50": percentile(rates, 50),
        f"{prefix}p90": percentile(rates, 90),
        f"{prefix}min": min(rates),
        f"{prefix}max": max(rates),
    }


def _summary(rates: Rates, target: int) -> dict[str, Any]:
    wall, cpu = rates
    figures: dict[str, Any] = {**_percentiles(wall), **_percentiles(cpu, "cpu_")}
    figures["batches"] = len(wall)
    figures["target"] = target
    # The target is per core: judged on CPU time, so other processes on a shared machine
    # do not decide it; the wall-clock figures stay in the report beside it.
    figures["meets_target"] = figures["cpu_p50"] >= target
    return figures


def run(args: argparse.Namespace) -> int:
    if args.batches < 1 or args.baccarat_rounds < 1 or args.blackjack_rounds < 1:
        print("livetable: error: batches and rounds must be positive", file=sys.stderr)
        return 2
    games = args.game or list(GAME_IDS)
    report: dict[str, Any] = {}
    from controller.kernel.progress import progress

    with progress(len(games) * args.batches, "batches") as advance:
        _measure(args, games, report, advance)
    if args.json:
        print(json.dumps(report))
        return 0
    print("rounds per second through the live engine, one thread (percentiles over batches)")
    print("wall: per wall-clock second; cpu: per CPU second of this thread (one core's rate)")
    print(
        f"{'game':<22}{'wall p10':>10}{'wall p50':>10}{'wall p90':>10}"
        f"{'cpu p10':>10}{'cpu p50':>10}{'cpu p90':>10}{'target':>10}  verdict (cpu p50)"
    )
    for game, figures in report.items():
        if "error" in figures:
            print(f"{game:<22}  {figures['error']}")
            continue
        verdict = "meets target" if figures["meets_target"] else "BELOW target"
        print(
            f"{game:<22}{figures['p10']:>10,.0f}{figures['p50']:>10,.0f}"
            f"{figures['p90']:>10,.0f}{figures['cpu_p10']:>10,.0f}{figures['cpu_p50']:>10,.0f}"
            f"{figures['cpu_p90']:>10,.0f}{figures['target']:>10,}  {verdict}"
        )
    return 0


def _measure(
    args: argparse.Namespace,
    games: list[str],
    report: dict[str, Any],
    advance: Callable[[int], None],
) -> None:
    for game in games:
        play = game_spec(game).play_dealt
        # A game that takes only cards is dealt from a stream; a blackjack game needs a player.
        if play is not None:
            rates = bench_dealt(play, args.batches, args.baccarat_rounds, args.seed, advance)
            report[game] = {**_summary(rates, BACCARAT_TARGET), "rounds": args.baccarat_rounds}
        else:
            measured = bench_blackjack(
                game, args.batches, args.blackjack_rounds, args.seed, advance
            )
            if isinstance(measured, str):
                report[game] = {"error": measured}
            else:
                report[game] = {
                    **_summary(measured, BLACKJACK_TARGET),
                    "rounds": args.blackjack_rounds,
                }
