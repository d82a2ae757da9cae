"""A round's pictures in the console, against the real thing: table t1's daemon carries on
a journal written with the camera simulator's pictures, on the studio's locked-down broker;
``livetable console`` reads them with the supervisor's own ``pictures`` requests and serves
the page each one, whole and as journaled."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from controller.service.pictures import pictures_dir
from tests.console.inprocess import TIMEOUT_S
from tests.console.page_words import catalogue, in_language, raw_codes_shown
from tests.console.test_browser import browser, by_id, sign_in  # noqa: F401 (browser: a fixture)
from tests.support.console import ConsoleHttp, ConsoleStudio
from tests.support.pictures import picture_fields, write_pictured_journal
from tests.support.wait import wait_until


def test_the_history_of_a_round_lists_its_pictures_and_serves_each(
    tmp_path: Path,
    browser: Any,  # noqa: F811
) -> None:
    from playwright.sync_api import expect

    studio = ConsoleStudio(tmp_path / "studio", tables={"t1": "baccarat"})
    try:
        journal = studio.tables["t1"].journal_path
        write_pictured_journal(journal, "baccarat", rounds=2, numbered=False)
        rows = picture_fields(journal, 2)
        assert len(rows) >= 5, "four cards or more, and the table as it settled"
        studio.start()
        alice = ConsoleHttp(studio.url)
        assert alice.sign_in("alice", studio.passwords["alice"]).status == 303
        wait_until(lambda: "t1" in alice.tables(), TIMEOUT_S, "the console's feed of t1")
        answer = alice.get("/api/tables/t1/rounds/2/pictures")
        assert answer.status == 200, answer.text
        listed = answer.json()
        assert listed["camera"] is True
        assert [p["row"] for p in listed["pictures"]] == [row["row"] for row in rows]
        for picture, row in zip(listed["pictures"], rows, strict=True):
            assert picture["status"] == "kept" and picture["view"] == row["view"]
            image = alice.get(picture["url"])
            assert image.status == 200 and image.headers["Content-Type"] == "image/jpeg"
            assert hashlib.sha256(image.body).hexdigest() == row["sha256"]
        # The printable history: each card's picture beside its row, the table's below.
        visit = sign_in(browser, studio, "alice")
        sheet = visit.page.context.new_page()
        sheet.goto(f"{studio.url}/history?table=t1&round=2")
        shown = sheet.locator(by_id("history-picture"))
        expect(shown).to_have_count(len(rows))
        beside = f"{by_id('history-row')}[data-type=card_dealt] {by_id('history-picture')}"
        cards = sheet.locator(beside)
        expect(cards).to_have_count(sum(row["view"] == "card" for row in rows))
        expect(sheet.locator(f"{by_id('history-pictures')} img.table-picture")).to_have_count(1)
        loaded = sheet.evaluate(
            "() => [...document.querySelectorAll('[data-testid=history-picture] img')]"
            ".map((img) => img.complete && img.naturalWidth > 0)"
        )
        assert loaded == [True] * len(rows)
        sheet.close()
        visit.check_clean()
        # Retention took one: the page says pruned, and has no image for it.
        (pictures_dir(journal) / f"{rows[0]['sha256']}.jpg").unlink()
        (pictures_dir(journal) / "pruned.jsonl").write_text(
            f'{{"sha256": "{rows[0]["sha256"]}", "size": 1, "at": 0, "why": "age"}}\n'
        )
        again = alice.get("/api/tables/t1/rounds/2/pictures").json()["pictures"]
        pruned = [p for p in again if p["sha256"] == rows[0]["sha256"]]
        assert pruned and all(p["status"] == "pruned" and "url" not in p for p in pruned)
        # The page says so in words, in English and in Spanish, with no raw code: a settled
        # round, its cards, its pictures and the pruned one.
        sheet = visit.page.context.new_page()
        for language in ("en", "es"):
            words = catalogue(language)
            sheet.goto(f"{studio.url}/history?table=t1&round=2")
            if language != "en":
                in_language(sheet, language)
                sheet.reload()
            expect(sheet.locator("html")).to_have_attribute("lang", language)
            status = sheet.locator(f'{by_id("history-picture-status")}[data-status=pruned]')
            expect(status.first).to_contain_text(words["picture.pruned"])
            expect(sheet.locator(by_id("history-title"))).to_contain_text(words["history.settled"])
            assert raw_codes_shown(sheet) == [], f"a raw code on the {language} history"
        sheet.close()
        assert alice.get("/api/tables/t1/rounds/x/pictures").status == 400
        assert ConsoleHttp(studio.url).get("/api/tables/t1/rounds/2/pictures").status == 401
    finally:
        studio.close()


def test_the_card_picker_sees_the_slot_of_a_misread_card_live(
    tmp_path: Path,
    browser: Any,  # noqa: F811
) -> None:
    """Table t1 with the camera simulator (an empty felt: the camera cannot read the card
    the shoe misread, and the table pauses for it to be entered): the console shows a
    supervisor the slot now; the viewer, whom the table refuses, gets no picture."""
    import cv2
    import numpy as np
    from playwright.sync_api import expect

    from controller.tools.demo_table import InProcessDaemon
    from drivers.camera_reader import ReaderConfig
    from simulators.camera import SimulatedCamera
    from simulators.camera.renderer import Perturbations
    from tests.support.pictures import plain_faces

    deck = Path(__file__).resolve().parents[1] / "fixtures" / "camera" / "plastic-demo-deck.npz"
    studio = ConsoleStudio(tmp_path / "studio", tables={"t1": "baccarat"})
    try:
        camera = SimulatedCamera(
            "baccarat", faces=plain_faces, seed=1, perturbations=Perturbations.none()
        )
        table = studio.tables["t1"]
        reader = ReaderConfig(deck=deck, deadline_s=0.5)
        table.daemon = InProcessDaemon(table.workdir / "t1.toml", camera, reader)  # type: ignore[assignment]
        studio.start()
        studio.hold_dealer("t1")
        studio.play("t1", 1)
        state = studio.wait_state(
            "t1",
            lambda s, _f: s["phase"] == "DEALING" and (s["awaiting"] or {}).get("what") == "card",
            "a round waiting for its first card",
        )
        round_id = state["round"]["id"]
        with table.draw_lock:
            table.shoe.draw(garbled=True)
        studio.wait_state(
            "t1",
            lambda s, _f: s["phase"] == "PAUSED" and "enter_card" in " ".join(s["pause"]["needs"]),
            "paused for the misread card to be entered",
        )
        alice = ConsoleHttp(studio.url)
        assert alice.sign_in("alice", studio.passwords["alice"]).status == 303
        wait_until(lambda: "t1" in alice.tables(), TIMEOUT_S, "the console's feed of t1")
        live = alice.get(f"/api/tables/t1/rounds/{round_id}/live")
        assert live.status == 200, live.text
        assert live.json()["picture"] is True, live.text
        image = alice.get(live.json()["url"])
        assert image.status == 200 and image.headers["Content-Type"] == "image/jpeg"
        pixels = cv2.imdecode(np.frombuffer(image.body, np.uint8), cv2.IMREAD_COLOR)
        slot = camera.region("player.card1").image
        assert pixels is not None and pixels.shape[:2] == slot.shape[:2]
        # In the browser: the picker shows it beside the faces.
        visit = sign_in(browser, studio, "alice")
        visit.queue_item("t1").locator(by_id("resolve-enter-card")).click()
        picker = visit.page.locator(by_id("card-picker"))
        expect(picker.locator(by_id("card-live"))).to_be_visible()
        visit.page.wait_for_function(
            "() => { const img = document.querySelector('[data-testid=card-live-image]');"
            " return img !== null && img.complete && img.naturalWidth > 0; }",
            timeout=TIMEOUT_S * 1000,
        )
        assert raw_codes_shown(visit.page) == [], "a raw code in the card picker"
        # In Spanish, chosen on the wall: the picker in its words, the picture still there.
        es = catalogue("es")
        visit.page.locator(by_id("language")).select_option("es")
        visit.page.wait_for_load_state()
        expect(visit.page.locator("body")).to_have_attribute("data-stream", "up")
        visit.queue_item("t1").locator(by_id("resolve-enter-card")).click()
        expect(picker.locator(by_id("card-picker-title"))).to_have_text(
            es["picker.title"].replace("{table}", "t1")
        )
        expect(picker.locator(f"{by_id('card-live')} figcaption")).to_have_text(
            es["picker.live_caption"]
        )
        expect(picker.locator(by_id("card-faces-note"))).not_to_have_text(es["picker.loading"])
        assert raw_codes_shown(visit.page) == [], "a raw code in the Spanish card picker"
        visit.check_clean()
        viewer = ConsoleHttp(studio.url)
        assert viewer.sign_in("viewer", studio.passwords["viewer"]).status == 303
        wait_until(lambda: "t1" in viewer.tables(), TIMEOUT_S, "the viewer's feed of t1")
        refused = viewer.get(f"/api/tables/t1/rounds/{round_id}/live")
        assert refused.status == 502 and "supervisors only" in refused.text
    finally:
        studio.close()
