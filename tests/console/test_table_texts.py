"""The table's own texts on a Spanish page, in a real headless Chromium against the real
studio (``console_studio``): what the table publishes in English beside a code (why a shoe
ended, its answers to commands in the audit, a blackjack decision) is shown in the
catalogue's words, never the English.
"""

from __future__ import annotations

import re
from typing import Any

from tests.console import test_browser
from tests.console.page_words import catalogue, in_language, raw_codes_shown
from tests.console.test_browser import TIMEOUT_S, Screens, Visit, by_id, next_event, sign_in
from tests.support.console import ConsoleStudio

pytestmark = test_browser.pytestmark
# The console's browser tests' fixtures: a Chromium of the test's own, its screenshots.
browser = test_browser.browser
screens = test_browser.screens


def in_spanish(visit: Visit) -> None:
    from playwright.sync_api import expect

    in_language(visit.page, "es")
    visit.page.reload()
    expect(visit.page.locator("body")).to_have_attribute("data-stream", "up")
    expect(visit.page.locator("html")).to_have_attribute("lang", "es")


def test_a_shoe_ended_by_a_supervisor_and_its_audit_read_in_spanish(
    console_studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    studio = console_studio
    alice = sign_in(browser, studio, "alice")
    in_spanish(alice)
    page = alice.page
    client = studio.supervisor("bob")
    try:
        answer = client.request("t2", "end_shoe", timeout=TIMEOUT_S, reason="fin de turno")
    finally:
        client.close()
    assert answer["ok"], answer
    assert answer["message"] == "shoe 1 ended", answer
    es = catalogue("es")
    tile = alice.tile("t2")
    recent = tile.locator(by_id("tile-recent"))
    # Why the shoe ended: the table's "ended by bob", in Spanish.
    expect(recent).not_to_contain_text("ended by bob")
    expect(recent).to_contain_text(es["shoe_end.ended"].format(by="bob"))
    # The audit: the table's answer "shoe 1 ended", in Spanish.
    tile.locator(by_id("action-audit")).click()
    audit = page.locator(by_id("audit-dialog"))
    ended = audit.locator(by_id("audit-row")).first
    expect(ended.locator('[data-column="command"]')).to_have_text(es["command.end_shoe"])
    message = ended.locator('[data-column="message"]')
    expect(message).to_have_text(es["answer_message.shoe_ended"].format(shoe=1))
    # The shoe bob declared before, too.
    declared = audit.locator(by_id("audit-row")).last
    expect(declared.locator('[data-column="message"]')).to_have_text(
        es["answer_message.shoe_declared"].format(shoe=1)
    )
    screens.shoot(page, "audit-es")
    assert raw_codes_shown(page) == [], "a raw code in the Spanish audit"
    alice.check_clean()


def test_a_blackjack_decision_reads_in_spanish_in_the_rounds_history(
    console_studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    studio = console_studio
    alice = sign_in(browser, studio, "alice")
    # Rounds of t2 (blackjack) until one asks a decision (a dealer blackjack asks none).
    studio.play("t2", 20)
    taken = next_event(studio, "t2", "decision_taken", after=0)
    token, round_id = taken["data"]["decision"], taken["data"]["round_id"]
    sheet = alice.page.context.new_page()
    sheet.goto(f"{studio.url}/history?table=t2&round={round_id}")
    in_language(sheet, "es")
    sheet.reload()
    expect(sheet.locator("body")).to_have_attribute("data-loaded", "true")
    row = sheet.locator(f'{by_id("history-row")}[data-seq="{taken["seq"]}"]')
    # The decision by its words ("plantarse"), not its token ("S").
    expect(row).not_to_contain_text(f"decisión: {token} ")
    es = catalogue("es")
    expect(row).to_contain_text(f"decisión: {es[f'choice.{token}']} ")
    asked = sheet.locator(f"{by_id('history-row')}[data-type=decision_requested]").first
    expect(asked).not_to_contain_text(re.compile(r"\b[HSDPRYN](/[HSDPRYN])+\b"))
    screens.shoot(sheet, "history-decision-es")
    assert raw_codes_shown(sheet) == [], "a raw code in the Spanish history of a blackjack round"
    in_language(sheet, "en")  # this browser's wall stays in English
    sheet.close()
    alice.check_clean()
