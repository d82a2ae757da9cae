"""The dealer's screen (``/dealer``) in a real headless Chromium, against the real studio
(``console_studio``: two ``livetable run`` tables on the shipped ACL): table t1's dealer
station signs in with its own account (``dealer-t1``, role dealer), and the screen shows
where the next card goes, a pause as one plain sentence, the round's cards; the dealer signs
in and out with a staff id; the words are the catalogue's, in English and in Spanish, and no
raw code of the API is on the page.

Screenshots at 1920x1080 and 1280x720 go to each test's ``screenshots`` folder, and into
``$LIVETABLE_DOC_SCREENSHOTS`` (``docs/console``) for the ones docs/console.md shows
(:data:`DOC_SCREENSHOTS`).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.console import test_browser
from tests.console.page_words import catalogue, raw_codes_shown
from tests.console.test_browser import (
    FULL_HD,
    HD,
    TIMEOUT_S,
    DealerHand,
    Relay,
    Screens,
    axe_violations,
    by_id,
    hold_a_deal,
    open_page,
)
from tests.support.console import ConsoleStudio
from tests.support.wait import wait_until

pytestmark = test_browser.pytestmark
# The console's browser tests' fixtures: a Chromium of the test's own, its screenshots.
browser = test_browser.browser
screens = test_browser.screens

DOC_SCREENSHOTS: dict[str, str] = {
    "dealer-dealing-en-1920x1080": "dealer-dealing.png",
    "dealer-paused-en-1920x1080": "dealer-paused.png",
    "dealer-paused-es-1280x720": "dealer-paused-es.png",
    "dealer-dealing-es-1280x720": "dealer-dealing-es.png",
    "dealer-blackjack-1920x1080": "dealer-blackjack.png",
    # The console's wall (tests/console/test_wall_ageing.py).
    "wall-pause-red-en-1280x720": "wall-pause-red.png",
    "wall-pause-red-es-1280x720": "wall-es.png",
}


def shoot(screens: Screens, page: Any, name: str) -> None:
    screens.shoot(page, name)
    if screens.docs is not None and name in DOC_SCREENSHOTS:
        import shutil

        shutil.copy(screens.taken[-1], screens.docs / DOC_SCREENSHOTS[name])


def fits(page: Any, viewport: dict[str, int]) -> None:
    size = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
    )
    assert size[0] <= viewport["width"] and size[1] <= viewport["height"], (
        f"the dealer's screen is {size[0]}x{size[1]}, more than {viewport}"
    )


def kiosk(
    browser: Any, studio: ConsoleStudio, viewport: dict[str, int], url: str | None = None
) -> Any:
    """The dealer station's browser, signed in as ``dealer-t1``: it lands on /dealer.
    ``url``: the console's, or a relay's to it."""
    from playwright.sync_api import expect

    visit = open_page(browser, f"{url or studio.url}/", viewport=viewport)
    page = visit.page
    page.wait_for_url(re.compile(r"/signin$"))
    page.fill(by_id("signin-username"), "dealer-t1")
    page.fill(by_id("signin-password"), studio.passwords["dealer-t1"])
    page.click(by_id("signin-submit"))
    page.wait_for_url(re.compile(r"/dealer$"))
    expect(page.locator("body")).to_have_attribute("data-loaded", "true")
    expect(page.locator("body")).to_have_attribute("data-stream", "up")
    return visit


def test_the_dealers_screen_shows_the_next_card_a_pause_and_signs_dealers_in_and_out(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    from playwright.sync_api import expect

    en, es = catalogue("en"), catalogue("es")
    hand = DealerHand(studio.tables["t1"])
    visit = kiosk(browser, studio, FULL_HD)
    page = visit.page
    expect(page.locator(by_id("dealer-table"))).to_have_text("Table t1")
    session = page.evaluate("async () => (await fetch('/api/session')).json()")
    assert session["role"] == "dealer", session

    # A round held at its first card: the screen says where it goes, on the sketch too.
    dealing = hold_a_deal(studio, hand, "t1")
    position = dealing["awaiting"]["position"]
    word = en[f"position.{position}"]
    expect(page.locator(by_id("dealer-next"))).to_have_text(word)
    expect(page.locator(by_id("dealer-instruction"))).to_have_text(
        en["action.deal_face_up"].replace("{position}", word)
    )
    expect(page.locator(by_id(f"layout-spot-{position}"))).to_have_attribute("data-next", "true")
    other = "banker" if position == "player" else "player"
    expect(page.locator(by_id(f"layout-spot-{other}"))).to_have_attribute("data-next", "false")
    expect(page.locator(by_id("dealer-round-title"))).to_have_text(
        en["dealer.round"].replace("{round}", str(dealing["round"]["id"]))
    )
    fits(page, FULL_HD)
    shoot(screens, page, "dealer-dealing-en-1920x1080")
    assert raw_codes_shown(page) == []

    # Cards dealt show with their totals.
    hand.draw_wanted()
    expect(
        page.locator(by_id(f"dealer-hand-{position}")).locator(by_id("dealer-card"))
    ).to_have_count(1)
    # The dealer, let go, draws the next card and the round plays out.
    wait_until(lambda: hand.wanted > 0, TIMEOUT_S, "the dealer about to draw the next card")
    hand.go()
    studio.tables["t1"].draw()
    studio.wait_state("t1", lambda s, _f: s["phase"] == "SHOE_READY", "the round played out")

    # A card out of turn: one plain sentence, the table's state never shown raw.
    studio.draw_out_of_turn("t1")
    sentence = page.locator(by_id("dealer-instruction"))
    expect(sentence).to_have_text(en["dealer.stop.card_out_of_turn"])
    expect(sentence).to_have_attribute("data-kind", "stop")
    expect(page.locator(by_id("dealer-next"))).to_have_text("\u2013")
    expect(page.locator(by_id("dealer-pause-age"))).to_contain_text("paused")
    fits(page, FULL_HD)
    shoot(screens, page, "dealer-paused-en-1920x1080")
    assert raw_codes_shown(page) == [], "a raw code on the dealer's screen"
    assert axe_violations(page, "the dealer's screen, paused") == []

    # A staff id, typed (a badge reader types it and presses Enter).
    page.locator(by_id("dealer-staff")).fill("D-1043")
    page.keyboard.press("Enter")
    studio.wait_state(
        "t1", lambda s, _f: (s.get("dealer") or {}).get("staff_id") == "D-1043", "D-1043 in"
    )
    expect(page.locator(by_id("dealer-on-duty"))).to_have_text(
        en["dealer.on_duty"].replace("{staff}", "D-1043")
    )
    expect(page.locator(by_id("dealer-answer"))).to_have_text(
        en["dealer.signed_in"].replace("{staff}", "D-1043")
    )
    signed = studio.tables["t1"].journal_rows("DealerSignedIn")
    assert signed and signed[-1]["staff_id"] == "D-1043", signed
    # A badge misread: said at once, nothing sent.
    page.locator(by_id("dealer-staff")).fill("D 10")
    page.keyboard.press("Enter")
    expect(page.locator(by_id("dealer-answer"))).to_have_text(en["dealer.bad_staff"])
    page.locator(by_id("dealer-signout")).click()
    studio.wait_state("t1", lambda s, _f: s.get("dealer") is None, "the dealer signed out")
    expect(page.locator(by_id("dealer-on-duty"))).to_have_text(en["dealer.nobody"])

    # The dealer's account does nothing else, even forged from its own page.
    forged = page.evaluate(
        """async () => {
            const session = await (await fetch("/api/session")).json();
            const answer = await fetch("/api/tables/t1/request", {
                method: "POST",
                headers: {"Content-Type": "application/json", "X-CSRF-Token": session.csrf},
                body: JSON.stringify({command: "resume", args: {resolution: "burn"}}),
            });
            return {status: answer.status, body: await answer.json()};
        }"""
    )
    assert forged["status"] == 403 and forged["body"]["code"] == "forbidden", forged
    assert studio.state("t1")["phase"] == "PAUSED"  # type: ignore[index]

    # In Spanish, chosen on the screen: the same pause in the studio's words, at 1280x720.
    page.set_viewport_size(HD)
    page.locator(by_id("dealer-language")).select_option("es")
    page.wait_for_load_state()
    expect(page.locator("body")).to_have_attribute("data-stream", "up")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(sentence).to_have_text(es["dealer.stop.card_out_of_turn"])
    expect(page.locator(by_id("dealer-table"))).to_have_text("Mesa t1")
    fits(page, HD)
    shoot(screens, page, "dealer-paused-es-1280x720")
    assert raw_codes_shown(page) == []

    # Resolved from the console: the screen follows, and the next deal is said in Spanish.
    bob = studio.supervisor("bob")
    try:
        assert bob.request("t1", "resume", timeout=TIMEOUT_S, resolution="burn")["ok"]
    finally:
        bob.close()
    dealing = hold_a_deal(studio, hand, "t1")
    word = es[f"position.{dealing['awaiting']['position']}"]
    expect(page.locator(by_id("dealer-next"))).to_have_text(word)
    expect(sentence).to_have_text(es["action.deal_face_up"].replace("{position}", word))
    fits(page, HD)
    shoot(screens, page, "dealer-dealing-es-1280x720")
    assert raw_codes_shown(page) == []
    hand.go()
    visit.check_clean()
    # The dealer's account reads no events: its connection never asked for them.
    assert studio.console is not None
    log = studio.console.log()
    assert "dealer-t1 signed in (dealer)" in log, log[-3000:]
    assert "catching up" not in log, log[-3000:]


def test_a_supervisor_opens_a_blackjack_tables_screen_by_its_id(
    studio: ConsoleStudio, browser: Any, screens: Screens
) -> None:
    """/dealer?table=t2 for a supervisor (a preview of another table's screen): blackjack's
    boxes on the sketch, the one that gets the next card marked."""
    from playwright.sync_api import expect

    hand = DealerHand(studio.tables["t2"])
    visit = test_browser.sign_in(browser, studio, "alice", viewport=FULL_HD)
    page = visit.page
    page.goto(f"{studio.url}/dealer?table=t2")
    expect(page.locator("body")).to_have_attribute("data-stream", "up")
    dealing = hold_a_deal(studio, hand, "t2")
    position = dealing["awaiting"]["position"]
    spot = position.split(".")[0]
    expect(page.locator(by_id(f"layout-spot-{spot}"))).to_have_attribute("data-next", "true")
    expect(page.locator(by_id("dealer-table"))).to_have_text("Table t2")
    shoot(screens, page, "dealer-blackjack-1920x1080")
    assert raw_codes_shown(page) == []

    # Dealt card by card up to the dealer's hole card: the screen says "face down", and
    # shows it as a card's back; its face is in no state, so on no screen.
    en = catalogue("en")
    for _ in range(20):
        state = studio.state("t2")
        assert state is not None
        awaiting = state["awaiting"] or {}
        if awaiting.get("what") == "card" and awaiting.get("face_down"):
            break
        wait_until(lambda: hand.wanted > 0, TIMEOUT_S, "the dealer about to draw")
        seq = state["journal"]["seq"]
        hand.draw_wanted()
        studio.wait_state("t2", lambda s, _f, seq=seq: s["journal"]["seq"] > seq, "the card taken")
    else:
        raise AssertionError(f"no hole card asked for: {studio.state('t2')}")
    expect(page.locator(by_id("dealer-instruction"))).to_have_text(
        en["action.deal_face_down"].replace("{position}", en["position.dealer"])
    )
    wait_until(lambda: hand.wanted > 0, TIMEOUT_S, "the dealer about to draw the hole card")
    hole = hand.draw_wanted()
    # The state shows the hole card as null (its face in no message): the screen shows a
    # card's back there, and the dealer's face-up cards, if any yet, as they are.
    view = studio.wait_state(
        "t2", lambda s, _f: None in s["round"]["view"]["dealer"]["cards"], "the hole card"
    )["round"]["view"]
    up = [card for card in view["dealer"]["cards"] if card is not None]
    assert hole.card is not None, hole
    dealer_hand = page.locator(by_id("dealer-hand-dealer"))
    expect(dealer_hand.locator(by_id("dealer-card-back"))).to_have_count(1)
    expect(dealer_hand.locator(by_id("dealer-card"))).to_have_count(len(up))
    for card in up:
        expect(dealer_hand.locator(f'[data-card="{card}"]')).to_have_count(1)
    hand.go()
    visit.check_clean()


@pytest.fixture
def studio(console_studio: ConsoleStudio) -> ConsoleStudio:
    return console_studio


def test_the_dealers_screen_reconnects_by_itself_and_shows_what_came_meanwhile(
    studio: ConsoleStudio, browser: Any
) -> None:
    from playwright.sync_api import expect

    en = catalogue("en")
    assert studio.console is not None
    relay = Relay(studio.console.port)
    try:
        visit = kiosk(browser, studio, HD, url=relay.url)
        page = visit.page
        banner = page.locator(by_id("banner-connection"))
        expect(banner).to_be_hidden()
        relay.cut()
        expect(banner).to_be_visible()
        expect(banner).to_have_text(en["dealer.connection"])
        expect(page.locator("body")).to_have_attribute("data-stream", "down")
        # Meanwhile a card comes out of turn.
        studio.draw_out_of_turn("t1")
        relay.restore()
        expect(page.locator("body")).to_have_attribute(
            "data-stream", "up", timeout=TIMEOUT_S * 1000
        )
        expect(banner).to_be_hidden()
        expect(page.locator(by_id("dealer-instruction"))).to_have_text(
            en["dealer.stop.card_out_of_turn"]
        )
        assert page.url.endswith("/dealer"), page.url
        visit.check_clean()
    finally:
        relay.close()


def test_a_spanish_browser_signs_in_and_reads_the_dealers_screen_in_spanish(
    studio: ConsoleStudio, browser: Any
) -> None:
    """The language is the browser's when nobody chose one: the sign-in page (where a kiosk
    lands when its session is gone), its refusal, and the screen."""
    from playwright.sync_api import expect

    es = catalogue("es")
    context = browser.new_context(viewport=HD, locale="es-ES")
    page = context.new_page()
    page.goto(f"{studio.url}/dealer")
    page.wait_for_url(re.compile(r"/signin"))
    expect(page.locator("body")).to_have_attribute("data-translated", "true")
    expect(page.locator(by_id("signin-submit"))).to_have_text(es["signin.submit"])
    page.fill(by_id("signin-username"), "dealer-t1")
    page.fill(by_id("signin-password"), "not-its-password")
    page.click(by_id("signin-submit"))
    expect(page.locator("body")).to_have_attribute("data-translated", "true")
    message = page.locator(by_id("signin-message"))
    expect(message).to_have_text(re.compile(r"^Cuenta o contraseña incorrectas\. Espere \d+ s"))
    assert raw_codes_shown(page) == []
    # After the wait the page asked for, the right password: the screen, in Spanish.
    wait = int(re.findall(r"\d+", message.inner_text())[0])
    page.wait_for_timeout(wait * 1000 + 200)
    page.fill(by_id("signin-username"), "dealer-t1")
    page.fill(by_id("signin-password"), studio.passwords["dealer-t1"])
    page.click(by_id("signin-submit"))
    page.wait_for_url(re.compile(r"/dealer$"))
    expect(page.locator(by_id("dealer-table"))).to_have_text("Mesa t1")
    expect(page.locator(by_id("dealer-instruction"))).to_have_text(es["awaiting.round_request"])
    context.close()
