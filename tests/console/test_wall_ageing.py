"""The console's wall in a real headless Chromium: a pause turns amber, then red, as it ages
([console] pause_amber_s and pause_red_s), the page's title counts the pauses, a browser
notification is offered and, once allowed on that click, says each new pause; the words are
the catalogue's, in English and in Spanish, and no raw code of the API is on the page.
"""

from __future__ import annotations

import re
from typing import Any

from tests.console import test_browser
from tests.console.page_words import catalogue, raw_codes_shown
from tests.console.test_browser import HD, Screens, by_id
from tests.console.test_dealer_screen import shoot
from tests.support.console import ConsoleStudio

pytestmark = test_browser.pytestmark
browser = test_browser.browser
screens = test_browser.screens

# The page's Notification, recorded: a headless Chromium shows none, the test reads them.
RECORD_NOTIFICATIONS = """
window.livetableNotes = [];
const Real = window.Notification;
class Recorded extends Real {
  constructor(title, options) {
    super(title, options);
    const { body, tag } = options || {};
    window.livetableNotes.push({ title, body, tag });
  }
}
Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
Recorded.requestPermission = (...args) => Real.requestPermission(...args);
window.Notification = Recorded;
"""


def signed_in(browser: Any, studio: ConsoleStudio, account: str, viewport: dict[str, int]) -> Any:
    """A browser that allows notifications, signed in as ``account`` on the wall."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport=viewport, permissions=["notifications"])
    context.add_init_script(RECORD_NOTIFICATIONS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"script error: {error}"))
    page.goto(f"{studio.url}/")
    page.wait_for_url(re.compile(r"/signin$"))
    page.fill(by_id("signin-username"), account)
    page.fill(by_id("signin-password"), studio.passwords[account])
    page.click(by_id("signin-submit"))
    page.wait_for_url(re.compile(r"/$"))
    expect(page.locator("body")).to_have_attribute("data-stream", "up")
    return test_browser.Visit(page, errors)


def test_a_pause_turns_amber_then_red_is_counted_in_the_title_and_notified(
    console_studio_with: Any, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    en, es = catalogue("en"), catalogue("es")
    studio: ConsoleStudio = console_studio_with(
        console_settings={"pause_amber_s": 2, "pause_red_s": 4}
    )
    visit = signed_in(browser, studio, "alice", HD)
    page = visit.page
    notify = page.locator(by_id("notify-toggle"))
    expect(notify).to_have_text(en["console.notify_offer"])
    notify.click()  # the permission is asked on this click
    expect(notify).to_have_text(en["console.notify_on"])
    expect(notify).to_have_attribute("aria-pressed", "true")

    studio.draw_out_of_turn("t1")
    item = page.locator(by_id("queue-item-t1"))
    tile = page.locator(by_id("tile-t1"))
    expect(item).to_have_attribute("data-state", "paused")
    expect(page).to_have_title("(1 paused) livetable console")
    # The words of its reason and of what it needs, never the codes.
    expect(item.locator(by_id("queue-message"))).to_have_text(en["reason.card_out_of_turn"])
    expect(item.locator(by_id("queue-needs"))).to_have_text(en["need.held"].replace("{count}", "1"))
    # Fresh, then amber after 2 s, then red after 4 s: the queue item and the tile alike.
    first = item.get_attribute("data-age")
    assert first in ("fresh", "amber"), first
    expect(item).to_have_attribute("data-age", "amber")
    expect(tile).to_have_attribute("data-age", "amber")
    expect(item).to_have_attribute("data-age", "red")
    expect(tile).to_have_attribute("data-age", "red")
    shoot(screens, page, "wall-pause-red-en-1280x720")
    assert raw_codes_shown(page) == [], "a raw code on the console's page"
    notes = page.evaluate("() => window.livetableNotes")
    assert notes == [
        {
            "title": en["console.notify_title"].replace("{table}", "t1"),
            "body": en["reason.card_out_of_turn"],
            "tag": "livetable-pause-t1",
        }
    ], notes

    # In Spanish, chosen on the page: the same pause in the studio's words.
    page.locator(by_id("language")).select_option("es")
    page.wait_for_load_state()
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("body")).to_have_attribute("data-stream", "up")
    expect(item.locator(by_id("queue-message"))).to_have_text(es["reason.card_out_of_turn"])
    expect(item.locator(by_id("queue-needs"))).to_have_text(es["need.held"].replace("{count}", "1"))
    expect(tile.locator(by_id("tile-status"))).to_have_text(es["status.paused"])
    title = es["console.title"]
    expect(page).to_have_title(f"({es['console.count_paused'].replace('{n}', '1')}) {title}")
    expect(item).to_have_attribute("data-age", "red")
    expect(notify).to_have_text(es["console.notify_on"])
    shoot(screens, page, "wall-pause-red-es-1280x720")
    assert raw_codes_shown(page) == [], "a raw code on the console's page"

    # A refusal in words: accept is refused between rounds (no card is expected).
    answer = page.evaluate(
        """async () => {
            const session = await (await fetch("/api/session")).json();
            const answer = await fetch("/api/tables/t1/request", {
                method: "POST",
                headers: {"Content-Type": "application/json", "X-CSRF-Token": session.csrf},
                body: JSON.stringify({command: "open_round", args: {}}),
            });
            return answer.json();
        }"""
    )
    assert answer["ok"] is False and answer["code"] == "refused", answer
    words = page.evaluate(
        "async (code) => (await import('/static/i18n.js')).refusalWords(code, 'x')",
        answer["code"],
    )
    assert words == es["refusal.refused"], words
    visit.check_clean()
