"""Every game the table can run, in one place: one frozen :class:`GameSpec` per game.

Whatever lists the games or picks code by game takes it from here: the table's configuration
check and its live rounds (``controller/table``), `livetable rules replay` and `livetable
rtp`, the camera simulator's layouts and `livetable sim camera --game`, the benchmarks and
the tests. Adding a game is its rules module (a
:class:`~controller.games.base.LiveRound`), one entry in :data:`GAMES` and how it is shown,
its :class:`~controller.kernel.presentation.Presentation` (on the ground floor, where the
API's clients read it too; :attr:`GameSpec.presentation`).

The entry points are small functions that import their rules module when first called, so
a baccarat table never imports blackjack, and a blackjack module that fails to import stops
only the blackjack games. This module itself imports no rules module: it sits on top of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Final

from controller.games.base import LiveRound
from controller.kernel.cards import Card
from controller.kernel.config_file import unknown_choice
from controller.kernel.presentation import PRESENTATIONS, Presentation

if TYPE_CHECKING:
    from controller.games.par_sheets import GamePar

Progress = Callable[[int], None]
PlayDealt = Callable[[Sequence[Card], int, int], int]
"""``(cards, start, rounds)`` -> the next index: `bench rules`' loop of a game dealt without
decisions (live rounds dealt from ``cards[start:]``, wrapping, each settled)."""
Interval = tuple[float, float, float]
"""An RTP and its 95 % confidence interval, as fractions: ``(rtp, low, high)``."""

BACCARAT: Final = "baccarat"
BLACKJACK: Final = "blackjack"
DRAGON_TIGER: Final = "dragon-tiger"
"""The families: what the benches and the rules tools share within one family."""


@dataclass(frozen=True, slots=True)
class Family:
    """What the games of one family share in `rules replay`: the shape of a request's line
    and of its answer, in words for the command's help (``{...}`` as JSON shows it)."""

    name: str
    replay_input: str
    replay_output: str


FAMILIES: Final[Mapping[str, Family]] = {
    family.name: family
    for family in (
        Family(
            BACCARAT,
            replay_input="""\
  {"game": "baccarat", "mode": "traditional" (default) | "no-commission", "cards": [...]}
  cards in dealing order: player, banker, player, banker, then the third cards""",
            replay_output="""\
  {"player", "banker": [cards], "player_total", "banker_total", "winner", "cards_used",
   "bets": {bet: net per unit staked}}""",
        ),
        Family(
            DRAGON_TIGER,
            replay_input="""\
  {"game": ..., "cards": [dragon, tiger]}""",
            replay_output="""\
  {"game", "dragon", "tiger": [card], "dragon_total", "tiger_total": rank 1-13 (ace low),
   "winner": dragon | tiger | tie, "suited_tie", "cards_used", "bets": {bet: net}}""",
        ),
        Family(
            BLACKJACK,
            replay_input="""\
  {"game": ..., "cards": [...], "boxes": N (default 1), "insurance": [bool per box],
   "decisions": [[tokens of box 1], ...]}  (insurance and decisions may be left out)
  cards in the game's live dealing order; tokens H S D P R (play), Y N (insurance, even
  money); a box whose tokens run out is auto-played by the timeout rule""",
            replay_output="""\
  {"boxes": [{"net", "hands": [[cards]], "totals": [total per hand], "outcomes": [win |
   lose | push | blackjack | surrender | even_money per hand]}], "dealer": [cards],
   "dealer_total", "cards_used"}, and "side_bets" for Boundless""",
        ),
    )
}
"""Every family, in the order `rules replay --help` describes them."""


@dataclass(frozen=True, slots=True)
class GameSpec:
    """One game: its id, limits, variants and the entry points into its rules."""

    id: str
    """The id in configuration files, on the command line and in every published state."""
    family: str
    """Its family's name, a key of :data:`FAMILIES`."""
    default_boxes: int
    """Boxes (or seats) a round has when the round request does not say."""
    max_boxes: int
    """The most boxes one round may have (Boundless: 1, one shared hand for every player)."""
    variants: tuple[str, ...]
    """Rule variants it accepts, the default first; empty: the game has none."""
    round_factory: Callable[[int, int, str], LiveRound]
    """``(round_number, boxes, variant)`` -> a fresh live round; see :meth:`new_round`."""
    bet_ids: Callable[[], tuple[str, ...]]
    """Every bet the game settles."""
    bets_in_round: Callable[[int], tuple[str, ...]]
    """The bets open in round N (1-based) of a shoe; see :meth:`available_bets`."""
    replay: Callable[[Mapping[str, Any]], dict[str, Any]]
    """`rules replay`: one parsed JSON request in, its JSON-ready answer out (RulesError)."""
    simulate_rtp: Callable[[str, int, int, Progress | None], Mapping[str, Interval]]
    """`rtp --rounds`: ``(variant, rounds, seed, progress)`` -> bet -> :data:`Interval`."""
    exact_rtp: Callable[[str], Mapping[str, Fraction]] | None = None
    """`rtp --exact`: ``variant`` -> bet -> exact RTP; ``None`` where only simulation exists."""
    par_sheet: Callable[[str], GamePar] | None = None
    """`rtp --exact` and `--par-sheet`: ``variant`` -> the game's PAR sheet (every bet's pay
    lines, RTP, hit frequency, standard deviation); ``None`` where there is none."""
    play_dealt: PlayDealt | None = None
    """`bench rules` of a game dealt without decisions; ``None``: a blackjack game, played by
    its strategy (``blackjack_rtp.play_rounds``)."""

    @property
    def presentation(self) -> Presentation:
        """How the game is shown: its hands, words, felt and bets' names
        (``controller/kernel/presentation.py``, where the API's clients read it too)."""
        return PRESENTATIONS[self.id]

    @property
    def label(self) -> str:
        """Its plain name, for people (shown beside the id in help texts)."""
        return self.presentation.label

    @property
    def default_variant(self) -> str | None:
        return self.variants[0] if self.variants else None

    def new_round(
        self, round_number: int, boxes: int | None = None, variant: str | None = None
    ) -> LiveRound:
        """A fresh live round; RulesError if the rules refuse the arguments.

        ``variant`` only matters to a game that has variants (the table passes its
        ``variant`` whatever the game); ``None`` is the game's default.
        """
        chosen = variant if variant is not None else self.default_variant or ""
        return self.round_factory(
            round_number, self.default_boxes if boxes is None else boxes, chosen
        )

    def available_bets(self, round_number: int) -> list[str]:
        """The bets the platform may accept in round ``round_number`` (1-based) of a shoe."""
        return list(self.bets_in_round(round_number))


# -- baccarat ---------------------------------------------------------------------------------


def _baccarat_round(round_number: int, boxes: int, variant: str) -> LiveRound:
    from controller.games.baccarat import BaccaratRound

    return BaccaratRound(variant, round_number)  # one table, no boxes


def _baccarat_bet_ids() -> tuple[str, ...]:
    from controller.games.baccarat import BET_IDS

    return BET_IDS


def _baccarat_bets_in_round(round_number: int) -> tuple[str, ...]:
    from controller.games.baccarat import available_bets

    return available_bets(round_number)


def _baccarat_replay(request: Mapping[str, Any]) -> dict[str, Any]:
    from controller.games.baccarat import replay

    return replay(request)


def _baccarat_simulate(
    variant: str, rounds: int, seed: int, progress: Progress | None
) -> Mapping[str, Interval]:
    from controller.games.baccarat_rtp import simulate

    return simulate(variant, rounds, seed, progress)


def _baccarat_exact(variant: str) -> Mapping[str, Fraction]:
    from controller.games.baccarat_rtp import exact_rtp

    return exact_rtp(variant)


def _baccarat_par_sheet(variant: str) -> GamePar:
    from controller.games.par_sheets import baccarat_par

    return baccarat_par(variant)


def _baccarat_play_dealt(cards: Sequence[Card], start: int, rounds: int) -> int:
    from controller.games.baccarat_rtp import play_dealt

    return play_dealt(cards, start, rounds)


# -- dragon tiger -----------------------------------------------------------------------------


def _dragon_tiger_round(round_number: int, boxes: int, variant: str) -> LiveRound:
    from controller.games.dragon_tiger import DragonTigerRound

    return DragonTigerRound(round_number)  # one table, no boxes, no variants


def _dragon_tiger_bet_ids() -> tuple[str, ...]:
    from controller.games.dragon_tiger import BET_IDS

    return BET_IDS


def _dragon_tiger_bets_in_round(round_number: int) -> tuple[str, ...]:
    from controller.games.dragon_tiger import available_bets

    return available_bets(round_number)


def _dragon_tiger_replay(request: Mapping[str, Any]) -> dict[str, Any]:
    from controller.games.dragon_tiger import replay

    return replay(request)


def _dragon_tiger_simulate(
    variant: str, rounds: int, seed: int, progress: Progress | None
) -> Mapping[str, Interval]:
    from controller.games.dragon_tiger_rtp import simulate

    return simulate(variant, rounds, seed, progress)


def _dragon_tiger_exact(variant: str) -> Mapping[str, Fraction]:
    from controller.games.dragon_tiger_rtp import exact_rtp

    return exact_rtp(variant)


def _dragon_tiger_par_sheet(variant: str) -> GamePar:
    from controller.games.dragon_tiger_rtp import par_sheet

    return par_sheet(variant)


def _dragon_tiger_play_dealt(cards: Sequence[Card], start: int, rounds: int) -> int:
    from controller.games.dragon_tiger import play_dealt

    return play_dealt(cards, start, rounds)


# -- blackjack --------------------------------------------------------------------------------


def _blackjack_round(game: str) -> Callable[[int, int, str], LiveRound]:
    def new_round(round_number: int, boxes: int, variant: str) -> LiveRound:
        from controller.games.blackjack import BlackjackRound

        return BlackjackRound(game, boxes)  # the round number changes nothing in blackjack

    return new_round


def _boundless_round(round_number: int, boxes: int, variant: str) -> LiveRound:
    from controller.games.blackjack import BlackjackRound

    return BlackjackRound("blackjack-boundless", 1)  # one shared hand, whoever plays it


def _main_bet_only() -> tuple[str, ...]:
    return ("main",)


def _main_bet_in_every_round(round_number: int) -> tuple[str, ...]:
    return ("main",)


def _boundless_bet_ids() -> tuple[str, ...]:
    from controller.games.boundless_side_bets import SIDE_BETS

    return ("main", *SIDE_BETS)


def _boundless_bets_in_round(round_number: int) -> tuple[str, ...]:
    from controller.games.boundless_side_bets import SIDE_BETS, side_bet_available

    return ("main", *(bet for bet in SIDE_BETS if side_bet_available(bet, round_number)))


def _blackjack_replay(request: Mapping[str, Any]) -> dict[str, Any]:
    from controller.games.blackjack_replay import replay

    return replay(request)


def _blackjack_simulate(game: str) -> Callable[..., Mapping[str, Interval]]:
    def simulate(
        variant: str, rounds: int, seed: int, progress: Progress | None
    ) -> Mapping[str, Interval]:
        from controller.games.blackjack_rtp import simulate

        return simulate(game, rounds, seed, progress)

    return simulate


def _blackjack_par_sheet(game: str) -> Callable[[str], GamePar]:
    def par_sheet(variant: str) -> GamePar:
        from controller.games.par_sheets import blackjack_par

        return blackjack_par(game)

    return par_sheet


def _blackjack(
    game: str,
    boxes: int,
    bet_ids: Callable[[], tuple[str, ...]] = _main_bet_only,
    bets_in_round: Callable[[int], tuple[str, ...]] = _main_bet_in_every_round,
    round_factory: Callable[[int, int, str], LiveRound] | None = None,
) -> GameSpec:
    return GameSpec(
        id=game,
        family=BLACKJACK,
        default_boxes=boxes,
        max_boxes=boxes,
        variants=(),
        round_factory=round_factory or _blackjack_round(game),
        bet_ids=bet_ids,
        bets_in_round=bets_in_round,
        replay=_blackjack_replay,
        simulate_rtp=_blackjack_simulate(game),
        par_sheet=_blackjack_par_sheet(game),
    )


# -- the registry -----------------------------------------------------------------------------

GAMES: Final[Mapping[str, GameSpec]] = {
    spec.id: spec
    for spec in (
        GameSpec(
            id="baccarat",
            family=BACCARAT,
            default_boxes=1,
            max_boxes=1,
            variants=("traditional", "no-commission"),
            round_factory=_baccarat_round,
            bet_ids=_baccarat_bet_ids,
            bets_in_round=_baccarat_bets_in_round,
            replay=_baccarat_replay,
            simulate_rtp=_baccarat_simulate,
            exact_rtp=_baccarat_exact,
            par_sheet=_baccarat_par_sheet,
            play_dealt=_baccarat_play_dealt,
        ),
        _blackjack(
            "blackjack-boundless",
            1,
            _boundless_bet_ids,
            _boundless_bets_in_round,
            _boundless_round,
        ),
        _blackjack("blackjack-classic", 5),
        _blackjack("blackjack-21", 7),  # Decision: seats default to 7
        GameSpec(
            id=DRAGON_TIGER,
            family=DRAGON_TIGER,
            default_boxes=1,
            max_boxes=1,
            variants=(),
            round_factory=_dragon_tiger_round,
            bet_ids=_dragon_tiger_bet_ids,
            bets_in_round=_dragon_tiger_bets_in_round,
            replay=_dragon_tiger_replay,
            simulate_rtp=_dragon_tiger_simulate,
            exact_rtp=_dragon_tiger_exact,
            par_sheet=_dragon_tiger_par_sheet,
            play_dealt=_dragon_tiger_play_dealt,
        ),
    )
}
GAME_IDS: Final = tuple(GAMES)
VARIANTS: Final = tuple(dict.fromkeys(v for spec in GAMES.values() for v in spec.variants))
"""Every rule variant of any game, in order (today: baccarat's two modes)."""


def find_game(game: object) -> GameSpec | None:
    """The spec of ``game``, or ``None`` if there is no such game."""
    return GAMES.get(game) if isinstance(game, str) else None


def game_spec(game: object) -> GameSpec:
    """The spec of ``game``; :class:`ConfigurationError` naming the known ids otherwise."""
    spec = find_game(game)
    if spec is None:
        raise unknown_choice("game", game, GAME_IDS)
    return spec


def games_in(family: str) -> tuple[str, ...]:
    """The ids of one family's games, in registry order."""
    return tuple(spec.id for spec in GAMES.values() if spec.family == family)
