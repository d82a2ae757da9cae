"""A table run by a script, behind its journal: ``python -m controller.tools.crash_runner``.

It plays every part around the state machine the simple way: a supervisor who declares new
shoes and resumes pauses, a platform that opens rounds and decides, a dealer who draws from
a shuffled 8-deck shoe (reproducible from ``--seed`` and the shoe id) and pulls the cut card
three quarters of the way through, and timers that expire at once. What it does next
depends only on the table's state, so after a crash it carries on where the journal ends.

Each event is printed as ``ack <seq> <hash>`` once it is committed to the journal; at start
it prints ``pid <pid>`` and, after the replay, ``replayed <seq> <sha256 of the state
snapshot>``. The crash test kills it with SIGKILL at random points and checks the journal
against those lines.

``--zygote`` saves the crash test 200 interpreter start-ups: the process imports everything
once, then for each ``fork`` line on its stdin forks a child that runs the table as above (a
real process with its own SQLite connection, killed for real); ``reap`` waits for that child
and prints ``exit <pid> <returncode>``. The zygote never opens the journal itself.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from controller.games.base import DecisionNeeded
from controller.games.registry import GAMES
from controller.kernel.cards import ALL_FACES, DECKS_PER_SHOE, Card
from controller.service.journal import Journal, canonical_json
from controller.service.journaled_table import JournaledTable, bind_config, replay
from controller.table.config import TableConfig
from controller.table.events import CardDrawn as CardDrawnEvent
from controller.table.events import (
    ControllerStarted,
    CutCardDrawn,
    PlatformDecided,
    RoundRequested,
    SupervisorCommanded,
    TimerExpired,
)
from controller.table.machine import TableMachine
from controller.table.state import Phase

# The dealer pulls the cut card after this many cards of the 416 (about 3/4 of the shoe).
CUT_CARD_AFTER = 312
START_TIME = 1_800_000_000.0


def snapshot_digest(machine: TableMachine) -> str:
    return hashlib.sha256(canonical_json(machine.snapshot()).encode()).hexdigest()


def shoe_order(seed: int, shoe_id: int) -> list[Card]:
    cards = [card for card in ALL_FACES for _ in range(DECKS_PER_SHOE)]
    random.Random(f"{seed}/{shoe_id}").shuffle(cards)
    return cards


def next_event(machine: TableMachine, seed: int, seq: int) -> object:
    """What the people and devices around the table do next, given its state."""
    state = machine.state
    at = START_TIME + seq
    chance = random.Random(f"{seed}#{seq}")
    phase = state.phase
    if phase is Phase.AWAITING_SHUFFLE:
        return SupervisorCommanded(f"s{seq}", "new_shoe", "runner", "supervisor", at)
    if phase is Phase.PAUSED:
        pause = state.pause
        assert pause is not None
        if pause.held:
            return SupervisorCommanded(f"s{seq}", "resume", "runner", "supervisor", at, "", "burn")
        if pause.offline_gap:
            # The dealer may have drawn cards while nobody read the shoe (the table was
            # down or the cable out): the supervisor enters each from the felt, then says
            # that no other card left the shoe.
            if (
                pause.resume_to is Phase.DEALING
                and pause.unread is None
                and state.count is not None
                and state.shoe_id is not None
                and chance.random() < 0.5
            ):
                card = shoe_order(seed, state.shoe_id)[state.count.cards_seen]
                return SupervisorCommanded(
                    f"s{seq}", "resume", "runner", "supervisor", at, "", "enter_card", card
                )
            return SupervisorCommanded(
                f"s{seq}", "resume", "runner", "supervisor", at, "", "no_cards_drawn"
            )
        return SupervisorCommanded(f"s{seq}", "resume", "runner", "supervisor", at)
    if phase is Phase.SHOE_READY:
        return RoundRequested(f"r{seq}", "runner", at, 0)
    if phase is Phase.BETTING:
        (timer_id,) = state.timers
        return TimerExpired(timer_id, at)
    if phase is Phase.DECIDING:
        if chance.random() < 0.3:
            (timer_id,) = state.timers
            return TimerExpired(timer_id, at)
        step = state.round.next_step()  # type: ignore[union-attr]
        assert isinstance(step, DecisionNeeded)
        token = chance.choice(sorted(step.options))
        return PlatformDecided(state.round_id or 0, step.kind, step.box, step.hand, token, at)
    assert state.count is not None and state.shoe_id is not None
    if (
        phase is Phase.DEALING
        and state.final_round is None
        and state.count.cards_seen >= CUT_CARD_AFTER
    ):
        return CutCardDrawn(None, at)
    if phase in (Phase.BURN_REVEAL, Phase.BURNING, Phase.DEALING):
        if chance.random() < 0.01:
            return SupervisorCommanded(f"s{seq}", "pause", "runner", "supervisor", at, "check")
        card = shoe_order(seed, state.shoe_id)[state.count.cards_seen]
        return CardDrawnEvent(card, state.count.cards_seen + 1, at)
    raise AssertionError(f"the runner has no move in {phase}")  # pragma: no cover


def say(line: str) -> None:
    """One line on stdout in one write(2): a SIGKILL cannot cut it in half. (print() may
    write the text and the newline separately, and a kill between them glues this line to
    whatever the zygote prints next.)"""
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def run(journal_path: Path, config: TableConfig, seed: int, limit: int | None) -> int:
    say(f"pid {os.getpid()}")
    journal = Journal(journal_path)
    try:
        machine = replay(journal, config, bind_config(journal, config))
        say(f"replayed {journal.last_seq} {snapshot_digest(machine)}")
        table = JournaledTable(config, journal, machine)
        event: object = ControllerStarted(START_TIME + journal.last_seq + 1)
        done = 0
        while limit is None or done < limit:
            table.handle(event)
            say(f"ack {journal.last_seq} {journal.last_hash}")
            done += 1
            event = next_event(machine, seed, journal.last_seq + 1)
    finally:
        journal.close()
    return 0


def zygote(journal_path: Path, config: TableConfig, seed: int, limit: int | None) -> int:
    # Every game's rules are imported before forking, so no child pays for it: a round and
    # the first round's bets run each game's lazy imports.
    for spec in GAMES.values():
        spec.new_round(1)
        spec.available_bets(1)
    child = 0
    for line in sys.stdin:
        command = line.strip()
        if command == "fork":
            sys.stdout.flush()
            child = os.fork()
            if child == 0:
                status = 1
                try:
                    status = run(journal_path, config, seed, limit)
                except BaseException:
                    traceback.print_exc()
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(status)
        elif command == "reap" and child:
            _, wait_status = os.waitpid(child, 0)
            say(f"exit {child} {_returncode(wait_status)}")
            child = 0
        else:
            say(f"error unknown command {command!r}")
    return 0


def _returncode(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return -os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.tools.crash_runner")
    parser.add_argument("--journal", type=Path, required=True)
    parser.add_argument("--game", default="baccarat")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--events", type=int, default=None, help="stop after this many")
    parser.add_argument("--zygote", action="store_true", help="fork a table per 'fork' line")
    args = parser.parse_args(argv)
    config = TableConfig(table_id="runner", game=args.game, journal_path=args.journal)
    entry = zygote if args.zygote else run
    return entry(args.journal, config, args.seed, args.events)


if __name__ == "__main__":
    sys.exit(main())
