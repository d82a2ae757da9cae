"""The pages' catalogues of words (controller/console/static/i18n/<language>.json): every
code the tables' API can publish has words in every language, and every key a page asks for
is in them.

The codes come from their one list each: the pause reasons and holds
(``controller.table.state``), a pause's needs, the dealer line's actions, the resolutions of
a pause, why a shoe ended, the table's answers to commands and a blackjack decision's
tokens and kinds (``controller.kernel.vocabulary``; a hand's states,
``controller.games.blackjack_hand``), the responses' error codes and the event types
(``controller.service.wire``), the commands of the API (``controller.kernel.api_commands``;
what those the console offers do: ``controller.console.api``), the games and their variants
(``controller.games.registry``), the camera's views of a round
(``controller.service.pictures``), the wall's statuses (``controller.console.fleet``) and
every game's hands (``controller.kernel.presentation``). The keys the pages ask for are read
from their sources: ``t("...")`` in the ES modules, ``data-i18n*="..."`` in the HTML, and the
audit's columns.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from controller.console.api import OFFERED
from controller.console.common import STATIC_DIR
from controller.console.config import LANGUAGES
from controller.console.fleet import STATUS_ORDER
from controller.games.blackjack_hand import HAND_STATES, PLAYING
from controller.games.registry import GAMES, VARIANTS
from controller.kernel.api_commands import COMMANDS
from controller.kernel.presentation import PRESENTATIONS
from controller.kernel.vocabulary import (
    ANSWERS,
    DEALER_ACTIONS,
    DECISION_KINDS,
    DECISION_TOKENS,
    NEEDS,
    RESOLUTIONS,
    SHOE_ENDS,
)
from controller.service.pictures import VIEWS
from controller.service.wire import ERROR_CODES, EVENT_TYPES
from controller.table.state import HoldReason, PauseReason, Phase

I18N = STATIC_DIR / "i18n"
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def catalogue(language: str) -> dict[str, Any]:
    return json.loads((I18N / f"{language}.json").read_text(encoding="utf-8"))


def api_keys() -> set[str]:
    """Every key the codes of the API need in each catalogue."""
    keys = {f"reason.{reason.value}" for reason in PauseReason}
    keys |= {f"dealer.stop.{reason.value}" for reason in PauseReason}
    keys |= {f"hold.{hold.value}" for hold in HoldReason}
    keys |= {f"dealer.hold.{hold.value}" for hold in HoldReason}
    keys |= {f"hold_name.{hold.value}" for hold in HoldReason}
    keys |= {f"shoe_end.{code}" for code in SHOE_ENDS}
    keys |= {f"answer_message.{code}" for code in ANSWERS}
    keys |= {f"choice.{token}" for token in DECISION_TOKENS}
    keys |= {f"decision.{kind}" for kind in DECISION_KINDS}
    keys |= {f"hand.{state}" for state in HAND_STATES if state != PLAYING}
    keys |= {f"need.{code}" for code in NEEDS}
    keys |= {f"refusal.{code}" for code in ERROR_CODES}
    keys |= {f"action.{action}" for action in DEALER_ACTIONS}
    keys |= {f"status.{status}" for status in STATUS_ORDER}
    keys |= {f"phase.{phase.value}" for phase in Phase}
    keys |= {f"position.{hand}" for shown in PRESENTATIONS.values() for hand in shown.hands}
    keys |= {f"event.{event}" for event in EVENT_TYPES}
    keys |= {f"resolution.{resolution}" for resolution in RESOLUTIONS if resolution}
    keys |= {f"picture.moment.{view}" for view in VIEWS if view != "card"}
    keys |= command_keys(OFFERED)
    keys |= {f"game.{game}" for game in GAMES} | {f"variant.{variant}" for variant in VARIANTS}
    return keys


def command_keys(offered: tuple[str, ...]) -> set[str]:
    """Every command's name and fields in words (the audit lists any the table journaled),
    and what each command the console offers does (its button's tooltip)."""
    keys = {f"command.{name}" for name in COMMANDS}
    keys |= {f"field.{field.name}" for command in COMMANDS.values() for field in command.fields}
    return keys | {f"command_help.{name}" for name in offered}


def audit_columns() -> set[str]:
    """The audit's columns the console names (its list in history.js), each a key."""
    module = (STATIC_DIR / "history.js").read_text(encoding="utf-8")
    found = re.search(r"const columns = \[([^\]]*)\]", module)
    assert found is not None, "the audit's columns were not found in history.js"
    return {f"audit.column_{column}" for column in re.findall(r'"(\w+)"', found.group(1))}


def page_keys() -> set[str]:
    """Every literal key the pages ask for."""
    keys: set[str] = set()
    for module in STATIC_DIR.glob("*.js"):
        keys |= set(re.findall(r"\bt\(\s*\"([a-z_.]+)\"", module.read_text(encoding="utf-8")))
    for page in STATIC_DIR.glob("*.html"):
        text = page.read_text(encoding="utf-8")
        keys |= set(re.findall(r'data-i18n(?:-[a-z]+)?="([a-z_.]+)"', text))
    return keys | audit_columns()


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_code_of_the_api_has_words_in_each_catalogue(language: str) -> None:
    words = catalogue(language)
    missing = sorted(api_keys() - set(words))
    assert missing == [], f"{language}.json has no words for {missing}"
    empty = sorted(key for key, text in words.items() if not isinstance(text, str) or not text)
    assert empty == [], f"{language}.json: empty or not text: {empty}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_key_a_page_asks_for_is_in_each_catalogue(language: str) -> None:
    asked = page_keys()
    assert len(asked) > 30, "the pages' keys were not found"
    missing = sorted(asked - set(catalogue(language)))
    assert missing == [], f"{language}.json has no words for {missing}"


def test_the_catalogues_have_the_same_keys_and_the_same_placeholders() -> None:
    english = catalogue("en")
    for language in LANGUAGES:
        words = catalogue(language)
        assert set(words) == set(english), (
            language,
            sorted(set(words) ^ set(english)),
        )
        for key, text in english.items():
            assert set(PLACEHOLDER.findall(words[key])) == set(PLACEHOLDER.findall(text)), (
                f"{language}.json {key}: {words[key]!r} fills other values than {text!r}"
            )


def test_a_missing_code_fails_the_check() -> None:
    """The check above is not empty: a catalogue without one reason's words misses it."""
    words = catalogue("es")
    del words["reason.card_out_of_turn"]
    assert "reason.card_out_of_turn" in api_keys() - set(words)


def test_a_table_text_without_words_fails_the_check() -> None:
    """Why a shoe ended and the table's answers are in the check: a catalogue without the
    words of one misses it."""
    words = catalogue("es")
    del words["shoe_end.ended"], words["answer_message.shoe_ended"]
    assert {"shoe_end.ended", "answer_message.shoe_ended"} <= api_keys() - set(words)


def test_a_command_the_console_offers_without_words_fails_the_check() -> None:
    """A command the console offers needs its name and what it does in words: a catalogue
    without them misses them."""
    assert "open_round" in OFFERED
    words = catalogue("es")
    del words["command.open_round"], words["command_help.open_round"]
    assert {"command.open_round", "command_help.open_round"} <= api_keys() - set(words)


def test_the_catalogues_are_the_languages_the_console_offers() -> None:
    assert sorted(path.stem for path in I18N.glob("*.json")) == sorted(LANGUAGES)
    module = (STATIC_DIR / "i18n.js").read_text(encoding="utf-8")
    offered = re.search(r"export const LANGUAGES = \[([^\]]*)\]", module)
    assert offered is not None
    assert re.findall(r'"(\w+)"', offered.group(1)) == list(LANGUAGES)
