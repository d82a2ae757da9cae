"""The game registry: every spec's entry points work, agree with the rules modules they stand
for, and import only their own game's rules."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from controller.games.base import LiveRound
from controller.games.registry import (
    BACCARAT,
    BLACKJACK,
    DRAGON_TIGER,
    FAMILIES,
    GAME_IDS,
    GAMES,
    VARIANTS,
    GameSpec,
    find_game,
    game_spec,
    games_in,
)
from controller.kernel.cards import ALL_FACES
from controller.kernel.errors import ConfigurationError, RulesError

SPECS = list(GAMES.values())
# One card of each face in rank order: enough for any one round, and no ninth copy.
ONE_DECK = [str(card) for card in ALL_FACES]


@pytest.mark.parametrize("spec", SPECS, ids=GAME_IDS)
def test_a_new_round_is_a_live_round_of_that_game(spec: GameSpec) -> None:
    round_: LiveRound = spec.new_round(1)
    assert round_.game == spec.id
    assert round_.next_step() is not None
    assert not round_.complete
    assert 1 <= spec.default_boxes <= spec.max_boxes
    assert spec.label and spec.family in (BACCARAT, BLACKJACK, DRAGON_TIGER)


def test_the_blackjack_games_are_the_rules_presets() -> None:
    from controller.games.blackjack_hand import PRESETS

    assert sorted(games_in(BLACKJACK)) == sorted(PRESETS)


@pytest.mark.parametrize("spec", games_in(BLACKJACK))
def test_blackjack_box_limits_are_the_rules_own(spec: str) -> None:
    from controller.games.blackjack_hand import PRESETS

    game = game_spec(spec)
    assert game.max_boxes == PRESETS[spec].max_boxes
    game.new_round(1, game.max_boxes)
    if not PRESETS[spec].shared_hand:
        with pytest.raises(RulesError, match=f"at most {game.max_boxes}"):
            game.new_round(1, game.max_boxes + 1)


@pytest.mark.parametrize("spec", SPECS, ids=GAME_IDS)
def test_bets_open_in_every_round_are_bets_of_the_game(spec: GameSpec) -> None:
    every_bet = set(spec.bet_ids())
    assert "main" in every_bet or spec.family in (BACCARAT, DRAGON_TIGER)
    opened = [spec.available_bets(round_number) for round_number in range(1, 90)]
    for bets in opened:
        assert set(bets) <= every_bet
        assert bets == sorted(bets, key=spec.bet_ids().index)
    assert set(opened[0]) == every_bet  # everything is open in a shoe's first round
    # Availability only ever shrinks as the shoe goes on.
    for earlier, later in itertools.pairwise(opened):
        assert set(later) <= set(earlier)


def test_available_bets_are_what_the_rules_modules_say() -> None:
    from controller.games import baccarat
    from controller.games.boundless_side_bets import SIDE_BETS, side_bet_available

    for round_number in (1, 40, 41, 45, 46, 80):
        assert game_spec("baccarat").available_bets(round_number) == list(
            baccarat.available_bets(round_number)
        )
        assert game_spec("blackjack-boundless").available_bets(round_number) == [
            "main",
            *(bet for bet in SIDE_BETS if side_bet_available(bet, round_number)),
        ]
        assert game_spec("blackjack-classic").available_bets(round_number) == ["main"]


def test_baccarat_variants_are_its_modes() -> None:
    from controller.games.baccarat import MODES

    spec = game_spec("baccarat")
    assert spec.variants == MODES
    assert spec.default_variant == "traditional"
    assert VARIANTS == MODES  # no other game has variants today
    for mode in MODES:
        assert spec.new_round(3, variant=mode).public_view()["mode"] == mode
    with pytest.raises(RulesError, match="mode"):
        spec.new_round(1, variant="commission")


@pytest.mark.parametrize("spec", SPECS, ids=GAME_IDS)
def test_replay_plays_a_line_of_every_game(spec: GameSpec) -> None:
    answer = spec.replay({"game": spec.id, "cards": ONE_DECK})
    # A Dragon Tiger round is two cards; any other game's at least four.
    fewest = 2 if spec.family == DRAGON_TIGER else 4
    assert fewest <= answer["cards_used"] <= len(ONE_DECK)


@pytest.mark.parametrize("spec", SPECS, ids=GAME_IDS)
def test_simulated_rtp_covers_only_bets_of_the_game(spec: GameSpec) -> None:
    results = spec.simulate_rtp(spec.default_variant or "", 300, 5, None)
    assert "main" in results or spec.family in (BACCARAT, DRAGON_TIGER)
    assert set(results) <= set(spec.bet_ids())


def test_baccarat_and_dragon_tiger_have_an_exact_rtp_alone_and_every_game_a_par_sheet() -> None:
    assert [spec.id for spec in SPECS if spec.exact_rtp is not None] == ["baccarat", "dragon-tiger"]
    assert [spec.id for spec in SPECS if spec.par_sheet is None] == []


def test_unknown_games() -> None:
    assert find_game("poker") is None
    assert find_game(["baccarat"]) is None
    with pytest.raises(ConfigurationError, match="unknown game 'poker'"):
        game_spec("poker")


@pytest.mark.parametrize("game", GAME_IDS)
def test_a_table_of_one_game_imports_no_other_games_rules(game: str) -> None:
    """The entry points import their rules when called: a baccarat table loads no blackjack,
    and a blackjack table no baccarat."""
    code = (
        "import sys\n"
        "from controller.table import games\n"
        f"round_ = games.new_round({game!r}, 1)\n"
        f"games.available_bets({game!r}, 1)\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(done.stdout.split())
    blackjack = {name for name in loaded if "blackjack" in name or "boundless" in name}
    if game_spec(game).family == BACCARAT:
        assert "controller.games.baccarat" in loaded
        assert not blackjack
    elif game_spec(game).family == DRAGON_TIGER:
        assert "controller.games.dragon_tiger" in loaded
        assert "controller.games.baccarat" not in loaded
        assert not blackjack
    else:
        assert "controller.games.blackjack" in loaded
        assert "controller.games.baccarat" not in loaded
        assert "controller.games.blackjack_replay" not in loaded  # the table replays nothing


def test_every_games_family_describes_its_replay_lines() -> None:
    """A game added to the registry with a new family fails here until the family says, for
    `rules replay --help`, what its lines hold."""
    assert {spec.family for spec in GAMES.values()} == set(FAMILIES)
    for family in FAMILIES.values():
        assert family.replay_input.strip() and family.replay_output.strip(), family.name
