"""`livetable rules replay` and `livetable rtp`: the game rules from the command line.

``rules replay`` reads one JSON request per line on stdin and writes one JSON line per input
line, in order, flushed after each, so another program can drive it line by line. A line
the rules cannot play gives ``{"error": "..."}`` and the following lines still run.

``rtp`` prints the return to player of every bet of a game, exactly (the game's PAR sheet:
pay lines, RTP, hit frequency, standard deviation; ``--par-sheet FILE.html`` writes it as a
printable page) or by simulation through the same live engine the table runs.

Both take the games from :mod:`controller.games.registry`, whose entry points import a
rules module only when a line or a game asks for it: the baccarat commands work whatever
state blackjack is in.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import IO, Any, Final

from controller.games.registry import (
    FAMILIES,
    GAME_IDS,
    GAMES,
    VARIANTS,
    GameSpec,
    Interval,
    Progress,
    find_game,
    game_spec,
    games_in,
)
from controller.games.replay_request import check_choice, unknown_key_words
from controller.kernel.cli_support import (
    add_json,
    default_to_help,
    examples,
    non_negative_int,
    positive_int,
)
from controller.kernel.errors import RulesError, TableError
from controller.kernel.words import in_words, nearest

logger = logging.getLogger(__name__)


def _families_help(kind: str) -> str:
    """The ``input`` or ``output`` blocks of every game family, from the registry."""
    blocks = []
    for family in FAMILIES.values():
        games = games_in(family.name)
        if kind == "input" and games != (family.name,):
            heading = f"{family.name} ({', '.join(games)})"
        else:
            heading = family.name
        text = family.replay_input if kind == "input" else family.replay_output
        blocks.append(f"{kind}, {heading}:\n{text}")
    return "\n\n".join(blocks)


REPLAY_DESCRIPTION = f"""\
Play rounds through the table's own rules engine: one JSON object per line on stdin, one JSON
object per line on stdout, in the same order, each written as soon as its line is read.
Blank lines are skipped.

{_families_help("input")}

{_families_help("output")}

output, a line that cannot be played:
  {{"line": N, "error": "line N: what is wrong"}}

Cards are written like AS, TD (or 10D), 9H. A key not listed above is refused, naming the
nearest one that is (a misspelt "decisions" is never taken as none). The exit status is 0
when every line was played, 1 when any line gave an error (counted on stderr at the end)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    rules = subparsers.add_parser(
        "rules",
        help="game rules tools",
        description="Game rules tools.",
        epilog=examples("livetable rules replay < rounds.jsonl > results.jsonl"),
    )
    rules_subparsers = rules.add_subparsers(dest="rules_command", metavar="WHAT")
    replay = rules_subparsers.add_parser(
        "replay",
        help="play JSON-line rounds from stdin, one JSON result line each",
        description=REPLAY_DESCRIPTION,
        epilog=examples(
            "livetable rules replay < rounds.jsonl > results.jsonl",
            """echo '{"game": "baccarat", "cards": ["AS", "TD", "5H", "KC", "9S"]}' """
            "| livetable rules replay",
        ),
    )
    replay.set_defaults(func=run_replay)
    default_to_help(rules)

    rtp = subparsers.add_parser(
        "rtp",
        help="return to player of every bet of a game",
        description=(
            "Return to player of every bet: --exact (combinatorial, first round off a full "
            "8-deck shoe: every bet's pay lines, RTP, hit frequency and standard deviation; "
            "--par-sheet FILE.html writes them as a printable PAR sheet), or --rounds N "
            "--seed S to simulate through the live engine."
        ),
        epilog=examples(
            "livetable rtp --game baccarat --exact",
            "livetable rtp --game blackjack-boundless --exact --par-sheet boundless.html",
            "livetable rtp --game blackjack-classic --rounds 1000000 --seed 7 --json",
        ),
    )
    rtp.add_argument("--game", required=True, choices=GAME_IDS, help="the game")
    rtp.add_argument(
        "--mode",
        choices=VARIANTS,
        default=VARIANTS[0],
        help=f"rule variant ({', '.join(_games_with(lambda spec: bool(spec.variants)))} only)",
    )
    method = rtp.add_mutually_exclusive_group(required=True)
    method.add_argument(
        "--exact",
        action="store_true",
        help=f"exact enumeration ({', '.join(_exact_games())} only)",
    )
    method.add_argument("--rounds", type=positive_int, help="simulate this many rounds")
    rtp.add_argument("--seed", type=non_negative_int, default=1, help="simulation seed (default 1)")
    rtp.add_argument(
        "--par-sheet",
        metavar="FILE.html",
        help="with --exact: also write the game's PAR sheet as a printable HTML page",
    )
    add_json(rtp)
    rtp.set_defaults(func=run_rtp)


def _games_with(test: Callable[[GameSpec], bool]) -> tuple[str, ...]:
    return tuple(spec.id for spec in GAMES.values() if test(spec))


def _exact_games() -> tuple[str, ...]:
    return _games_with(lambda spec: spec.exact_rtp is not None or spec.par_sheet is not None)


# -- rules replay -------------------------------------------------------------------------


def replay_request(request: object) -> dict[str, Any]:
    """Play one parsed request; RulesError for anything the rules cannot play."""
    if not isinstance(request, dict):
        raise RulesError(f"a request must be a JSON object, not {type(request).__name__}")
    if "game" not in request:
        # A misspelt "game" (the one key every line has) is named as the games' own keys are.
        needs = f"a line needs game: {in_words(GAME_IDS)}"
        unknown = [key for key in request if nearest(key, ("game",))]
        if unknown:
            raise RulesError(f"{unknown_key_words(unknown[:1], ('game',))} ({needs})")
        raise RulesError(needs)
    game = request["game"]
    check_choice(game, GAME_IDS, "game")
    spec = game_spec(game)
    try:
        return spec.replay(request)
    except ImportError as error:
        # The entry point imports its rules module now: a game whose module is missing or
        # broken answers this, and the other games' lines still play.
        raise RulesError(f"{game} cannot be replayed in this build: {error}") from None


def replay_line(line: str, number: int | None = None) -> dict[str, Any]:
    """The output object for one input line; never raises for bad input. With the line's
    ``number``, an error names it: ``{"line": N, "error": "line N: ..."}``."""
    error = _replay_error(line)
    if isinstance(error, dict):
        return error
    if number is None:
        return {"error": error}
    return {"line": number, "error": f"line {number}: {error}"}


def _replay_error(line: str) -> dict[str, Any] | str:
    """The answer to ``line``, or the words of its error."""
    # The line without its line break: else a line cut short fails after the break, and its
    # column would be column 1 of a second line that is not there.
    text = line.rstrip("\r\n")
    try:
        request = json.loads(text)
    except json.JSONDecodeError as error:
        cut = " (the line ends before its JSON does: cut short?)" if error.pos >= len(text) else ""
        return f"malformed JSON at column {error.colno}: {error.msg}{cut}"
    try:
        return replay_request(request)
    except TableError as error:
        return str(error)
    except Exception as error:
        # A bug, not bad input: say so on this line and keep serving the following ones.
        logger.exception("rules replay failed on %r", line)
        return f"internal error: {type(error).__name__}: {error}"


@dataclass(slots=True)
class ReplayCount:
    """What a replay stream did: lines answered, and the numbers of those that failed."""

    answered: int = 0
    failed: int = 0
    first_failures: list[int] = field(default_factory=list)

    def summary(self) -> str:
        shown = ", ".join(map(str, self.first_failures))
        more = ", ..." if self.failed > len(self.first_failures) else ""
        return (
            f"rules replay: {self.failed} of {self.answered} line(s) could not be played "
            f"(line {shown}{more})"
        )


def replay_stream(lines: Iterable[str], output: IO[str]) -> ReplayCount:
    """Answer every non-blank line of ``lines`` on ``output``, flushing after each."""
    count = ReplayCount()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        answer = replay_line(line, number)
        output.write(json.dumps(answer) + "\n")
        output.flush()
        count.answered += 1
        if "error" in answer:
            count.failed += 1
            if len(count.first_failures) < 10:
                count.first_failures.append(number)
    return count


def run_replay(_args: argparse.Namespace) -> int:
    # readline() rather than iterating the file: iteration reads ahead in blocks, and a
    # caller that writes one line and waits for the answer would wait forever.
    count = replay_stream(iter(sys.stdin.readline, ""), sys.stdout)
    if count.failed:
        print(f"livetable: error: {count.summary()}", file=sys.stderr)
        return 1
    return 0


# -- rtp --------------------------------------------------------------------------------------


def run_rtp(args: argparse.Namespace) -> int:
    if args.par_sheet is not None and not args.exact:
        raise RulesError("--par-sheet needs --exact (a PAR sheet holds exact figures only)")
    if args.exact and GAMES[args.game].par_sheet is not None:
        return _run_par_sheet(args)
    if args.par_sheet is not None:
        raise RulesError(f"{args.game} has no PAR sheet yet; --exact prints its RTP")
    if args.exact:
        exact_rtp = GAMES[args.game].exact_rtp
        if exact_rtp is None:
            raise RulesError(
                f"--exact is available for {', '.join(_exact_games())} only; simulate {args.game}"
            )
        started = time.perf_counter()
        exact = {bet: float(value) for bet, value in exact_rtp(args.mode).items()}
        elapsed = time.perf_counter() - started
        _print_exact(args, exact, elapsed)
        return 0
    if args.rounds is None or args.rounds < 1:
        raise RulesError("--rounds must be a positive number of rounds")
    progress_bar = _ProgressBar(args.rounds, sys.stderr) if sys.stderr.isatty() else None
    started = time.perf_counter()
    try:
        results = simulate(args.game, args.mode, args.rounds, args.seed, progress_bar)
    finally:
        if progress_bar is not None:
            progress_bar.close()
    elapsed = time.perf_counter() - started
    _print_simulation(args, results, elapsed)
    return 0


def _run_par_sheet(args: argparse.Namespace) -> int:
    par_sheet = GAMES[args.game].par_sheet
    assert par_sheet is not None  # run_rtp checked
    if args.par_sheet is not None and not args.par_sheet.lower().endswith((".html", ".htm")):
        raise RulesError(f"--par-sheet writes HTML: name a .html file, not {args.par_sheet!r}")
    sheet = par_sheet(args.mode)
    if args.par_sheet is not None:
        from controller.tools.par_sheet_html import par_sheet_html

        # Written whole to a side file, then renamed: a failed write leaves no half sheet.
        target = Path(args.par_sheet)
        partial = target.with_name(target.name + ".partial")
        partial.write_text(par_sheet_html(sheet, _version()), encoding="utf-8")
        partial.replace(target)
    if args.json:
        print(json.dumps(sheet.as_json()))
        return 0
    title = args.game + (f" ({sheet.variant})" if sheet.variant else "")
    print(f"{title}, exact: first round off a full 8-deck shoe")
    for rule in sheet.rules:
        print(f"  {rule}")
    print(f"{'bet':<20} {'RTP':>9} {'hit freq':>9} {'std dev':>8}")
    for bet, par in sheet.bets.items():
        print(
            f"{bet:<20} {float(par.rtp) * 100:>8.4f}% {float(par.hit_frequency) * 100:>8.4f}%"
            f" {par.standard_deviation:>8.4f}"
        )
    timings = ", ".join(f"{name} {value:.2f} s" for name, value in sheet.seconds.items())
    print(f"({timings})")
    if args.par_sheet is not None:
        print(f"PAR sheet written to {args.par_sheet}")
    return 0


def _version() -> str:
    try:
        return metadata.version("livetable")
    except metadata.PackageNotFoundError:
        return "unknown"


def simulate(
    game: str, mode: str, rounds: int, seed: int, progress: Progress | None
) -> dict[str, Interval]:
    """bet -> (rtp, ci_low, ci_high) from ``rounds`` simulated rounds of ``game``."""
    spec = find_game(game)
    if spec is None:
        raise RulesError(f"unknown game {game!r}")
    try:
        return dict(spec.simulate_rtp(mode, rounds, seed, progress))
    except ImportError as error:
        raise RulesError(f"{game} cannot be simulated in this build: {error}") from None


def _print_exact(args: argparse.Namespace, rtps: Mapping[str, float], elapsed: float) -> None:
    if args.json:
        document = {
            "game": args.game,
            "mode": args.mode if GAMES[args.game].variants else None,
            "method": "exact",
            "seconds": round(elapsed, 3),
            "bets": {bet: {"rtp": value} for bet, value in rtps.items()},
        }
        print(json.dumps(document))
        return
    mode = args.mode if GAMES[args.game].variants else None
    title = f"{args.game} ({mode})" if mode else args.game
    print(f"{title}, exact: first round off a full 8-deck shoe")
    print(f"{'bet':<20} {'RTP':>9}")
    for bet, value in rtps.items():
        print(f"{bet:<20} {value * 100:>8.4f}%")
    print(f"({elapsed:.2f} s)")


def _print_simulation(
    args: argparse.Namespace, results: Mapping[str, Interval], elapsed: float
) -> None:
    mode = args.mode if GAMES[args.game].variants else None
    if args.json:
        document = {
            "game": args.game,
            "mode": mode,
            "method": "simulation",
            "rounds": args.rounds,
            "seed": args.seed,
            "seconds": round(elapsed, 3),
            "bets": {
                bet: {
                    "rtp": _json_float(rtp),
                    "ci_low": _json_float(low),
                    "ci_high": _json_float(high),
                }
                for bet, (rtp, low, high) in results.items()
            },
        }
        print(json.dumps(document))
        return
    title = f"{args.game} ({mode})" if mode else args.game
    print(f"{title}, simulated: {args.rounds} rounds, seed {args.seed}")
    print(f"{'bet':<20} {'RTP':>9}   95 % confidence interval")
    for bet, (rtp, low, high) in results.items():
        print(f"{bet:<20} {rtp * 100:>8.4f}%   {low * 100:.4f}% .. {high * 100:.4f}%")
    rate = args.rounds / elapsed if elapsed > 0 else math.inf
    print(f"({elapsed:.1f} s, {rate:,.0f} rounds/s)")


def _json_float(value: float) -> float | None:
    """JSON has no NaN: a bet never placed in the run has no RTP."""
    return None if math.isnan(value) else value


class _ProgressBar:
    """A one-line progress bar redrawn in place on a terminal."""

    WIDTH: Final = 40

    def __init__(self, total: int, stream: IO[str]) -> None:
        self.total = total
        self.stream = stream
        self.started = time.perf_counter()
        self.last_drawn = -1.0

    def __call__(self, done: int) -> None:
        now = time.perf_counter()
        if now - self.last_drawn < 0.1 and done < self.total:
            return  # redrawing more often only costs time
        self.last_drawn = now
        fraction = min(1.0, done / self.total)
        filled = int(self.WIDTH * fraction)
        elapsed = now - self.started
        eta = elapsed / fraction - elapsed if fraction > 0 else 0.0
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.stream.write(f"\r[{bar}] {fraction * 100:5.1f}% {done}/{self.total} eta {eta:.0f} s")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()
