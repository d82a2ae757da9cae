"""What a person reads on the console's pages: the catalogues' words, and the API's codes that
must never be shown raw in their place.

Every code of the API written with an underscore (a pause's reason, a need, a refusal, an
event type, a command, a resolution ...): plain words never are, so one on a page is a code
shown raw (``card_out_of_turn``) instead of its words.
"""

from __future__ import annotations

import json
from typing import Any

from controller.console.common import STATIC_DIR
from controller.kernel.api_commands import COMMANDS
from controller.kernel.vocabulary import DEALER_ACTIONS, NEEDS, RESOLUTIONS
from controller.service.wire import ERROR_CODES, EVENT_TYPES
from controller.table.state import HoldReason, PauseReason, Phase

RAW_CODES = sorted(
    code
    for code in (
        *(reason.value for reason in PauseReason),
        *(hold.value for hold in HoldReason),
        *(phase.value for phase in Phase),
        *NEEDS,
        *ERROR_CODES,
        *DEALER_ACTIONS,
        *EVENT_TYPES,
        *COMMANDS,
        *RESOLUTIONS,
    )
    if "_" in code
)


def catalogue(language: str) -> dict[str, str]:
    return json.loads((STATIC_DIR / "i18n" / f"{language}.json").read_text(encoding="utf-8"))


def raw_codes_shown(page: Any) -> list[str]:
    """The API's codes found in any text node of the page, its title, and the words its
    elements give in attributes (a tooltip, an image's alt, a label, a placeholder)."""
    texts: list[str] = page.evaluate(
        """() => {
            const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            const found = [document.title];
            while (walker.nextNode()) found.push(walker.currentNode.nodeValue);
            for (const option of document.querySelectorAll("option")) found.push(option.text);
            for (const name of ["title", "alt", "aria-label", "placeholder"]) {
                for (const element of document.querySelectorAll(`[${name}]`)) {
                    found.push(element.getAttribute(name));
                }
            }
            return found;
        }"""
    )
    return sorted({code for text in texts for code in RAW_CODES if code in text})


def in_language(page: Any, language: str) -> None:
    """Choose ``language`` on this browser (as the header's picker does) for its next page."""
    page.evaluate("(code) => window.localStorage.setItem('livetable.language', code)", language)
