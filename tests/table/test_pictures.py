"""A picture of every card: the camera simulator's frames, stored by SHA-256 beside the
journal, each digest in a ``CardPictured`` row right after its card's row; retention prunes
the oldest and ``check_pictures`` tells pruned from tampered and missing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from controller.kernel.cards import parse_card
from controller.service.config import EvidenceConfig, LivetableConfig
from controller.service.journal import Journal
from controller.service.pictures import (
    Photographer,
    PictureStore,
    check_pictures,
    photographer,
    picture_rows,
    pictures_answer,
    pictures_dir,
)
from controller.service.runtime import TableRuntime
from controller.table.effects import EffectBatch, PublishEvent
from controller.table.events import CardPictured
from controller.tools.crash_runner import START_TIME
from simulators.camera import SimulatedCamera
from simulators.camera.renderer import Perturbations
from tests.support.pictures import Recorder, pictured_table, plain_faces, play, settled
from tests.table.driver import config_for

SEED = 5


def run_table(
    tmp_path: Path, game: str, rounds: int, **evidence: Any
) -> tuple[TableRuntime, Recorder]:
    config = config_for(game, tmp_path)
    runtime, recorder = pictured_table(config)
    if evidence:
        whole = LivetableConfig(table=config, evidence=EvidenceConfig(**evidence))
        camera = runtime.follow.__self__.source  # type: ignore[union-attr]
        runtime.follow = photographer(whole, runtime.table, camera, runtime.clock).after
    play(runtime, settled(rounds))
    return runtime, recorder


def pictured_rows(journal: Journal) -> dict[int, dict[str, Any]]:
    return {row.seq: row.fields for row in picture_rows(journal)}


def test_every_card_dealt_has_its_picture_in_the_next_row(tmp_path: Path) -> None:
    runtime, recorder = run_table(tmp_path, "baccarat", rounds=3)
    journal = runtime.table.journal
    pictures = pictured_rows(journal)
    store = PictureStore(pictures_dir(journal.path))
    dealt = ended = 0
    for batch in recorder.batches:
        names = [e.name for e in batch.effects if isinstance(e, PublishEvent)]
        if batch.journal_seq is None:
            continue
        wanted = [
            "card" if name == "card_dealt" else "settled"
            for name in names
            if name in ("card_dealt", "round_settled")
        ]
        following = [pictures.get(batch.journal_seq + n + 1) for n in range(len(wanted))]
        assert [p and p["view"] for p in following] == wanted, batch
        for picture in following:
            assert picture is not None and picture["card_row"] == batch.journal_seq
            data = store.read(picture["sha256"])
            assert data is not None and hashlib.sha256(data).hexdigest() == picture["sha256"]
            assert picture["size"] == len(data) and data[:3] == b"\xff\xd8\xff"  # a JPEG
        dealt += wanted.count("card")
        ended += wanted.count("settled")
    assert ended == 3 and dealt >= 12
    # Burn cards: cards drawn before the first round (every CardDrawn row but the dealt).
    drawn = [row.seq for row in journal.entries() if row.kind == "CardDrawn"]
    burned = [seq for seq in drawn if seq + 1 not in pictures]
    assert burned, "the shoe's burn cards were drawn"
    assert len(pictures) == dealt + ended
    assert journal.verify() == journal.last_seq
    assert check_pictures(journal, store.folder).line() == (
        f"{dealt + ended} picture(s): {dealt + ended} kept, 0 pruned by retention"
    )
    rows = [CardPictured.__name__ for _ in pictures]
    assert rows and all(isinstance(r.event(), CardPictured) for r in picture_rows(journal))


def test_a_slot_picture_shows_its_slot_and_the_table_picture_the_whole_frame(
    tmp_path: Path,
) -> None:
    runtime, _ = run_table(tmp_path, "baccarat", rounds=1)
    journal = runtime.table.journal
    store = PictureStore(pictures_dir(journal.path))
    import cv2

    for fields in pictured_rows(journal).values():
        image = cv2.imdecode(np.frombuffer(store.read(fields["sha256"]), np.uint8), 1)
        if fields["view"] == "settled":
            assert image.shape[:2] == (360, 640)
            assert fields["position"] is None and fields["slot"] is None
        else:
            assert image.shape[0] < 360 and fields["slot"].startswith(fields["position"])


def test_pruned_pictures_are_reported_pruned_and_changed_ones_tampered(tmp_path: Path) -> None:
    runtime, _ = run_table(tmp_path, "baccarat", rounds=2)
    journal = runtime.table.journal
    folder = pictures_dir(journal.path)
    store = PictureStore(folder)
    total = len(picture_rows(journal))
    # Retention by bytes: the oldest go, their digests recorded.
    kept_bytes = store.bytes_kept
    removed = store.prune(START_TIME, keep_days=1, keep_bytes=kept_bytes - 3000)
    # Pictures are stored by content: rows with the same bytes share one file.
    gone = sum(1 for row in picture_rows(journal) if row.fields["sha256"] in removed)
    assert removed and 0 < gone < total
    check = check_pictures(journal, folder)
    assert (check.kept, check.pruned, check.problems) == (total - gone, gone, ())
    # A picture changed on disk is named, with its row.
    fields = next(
        (row.seq, row.fields)
        for row in picture_rows(journal)
        if row.fields["sha256"] not in removed
    )
    path = store.path(fields[1]["sha256"])
    path.write_bytes(path.read_bytes() + b"\0")
    # One deleted by hand, not by retention: missing.
    other = next(
        row.fields["sha256"]
        for row in picture_rows(journal)
        if row.fields["sha256"] not in removed and row.seq != fields[0]
    )
    store.path(other).unlink()
    problems = check_pictures(journal, folder).problems
    assert problems[0].startswith(f"row {fields[0]}: the picture {path} was tampered with")
    assert any("missing" in line and other in line for line in problems)
    broken = {fields[1]["sha256"], other}
    assert len(problems) == sum(
        1 for row in picture_rows(journal) if row.fields["sha256"] in broken
    )


def test_retention_by_days_prunes_the_old_ones_first(tmp_path: Path) -> None:
    store = PictureStore(tmp_path / "p")
    old = store.put(b"old", at=1000.0)
    new = store.put(b"new", at=1000.0 + 5 * 86_400)
    assert store.prune(1000.0 + 6 * 86_400, keep_days=3, keep_bytes=1 << 30) == [old]
    assert store.read(old) is None and store.read(new) == b"new"
    assert list(store.pruned()) == [old]
    assert json.loads((tmp_path / "p" / "pruned.jsonl").read_text())["why"] == "age"


def test_a_face_down_picture_is_secret_until_its_round_settles(tmp_path: Path) -> None:
    runtime, _ = run_table(tmp_path, "blackjack-classic", rounds=1)
    journal = runtime.table.journal
    store = PictureStore(pictures_dir(journal.path))
    rows = picture_rows(journal, 1)
    face_down = [row for row in rows if row.fields["face_down"]]
    assert face_down, "the dealer's hole card was dealt face down"
    before = [row for row in rows if row.fields["view"] != "settled"]
    for settled_rows, secret in ((before, True), (rows, False)):
        answer = pictures_answer("t", 1, settled_rows, store, 0, 0, 1 << 22)
        text = json.dumps(answer)
        for row in face_down:
            assert (row.fields["sha256"] in text) is not secret
        entries = {e["row"]: e for e in answer["data"]["pictures"]}
        for row in face_down:
            assert (entries[row.seq]["status"] == "secret") is secret
            assert ("data" in entries[row.seq]) is not secret


def test_pages_fit_the_room_and_rebuild_every_picture(tmp_path: Path) -> None:
    runtime, _ = run_table(tmp_path, "baccarat", rounds=1)
    journal = runtime.table.journal
    store = PictureStore(pictures_dir(journal.path))
    rows = picture_rows(journal, 1)
    room = 6000
    got: dict[int, bytes] = {}
    start = {"row": 0, "offset": 0}
    pages = 0
    while start is not None:
        answer = pictures_answer("t", 1, rows, store, start["row"], start["offset"], room)
        assert answer["ok"], answer
        assert len(json.dumps(answer, separators=(",", ":")).encode()) <= room
        for entry in answer["data"]["pictures"]:
            import base64

            assert entry["offset"] == len(got.get(entry["row"], b""))
            got[entry["row"]] = got.get(entry["row"], b"") + base64.b64decode(entry["data"])
        start = answer["data"]["next"]
        pages += 1
    assert pages > 1
    for row in rows:
        assert hashlib.sha256(got[row.seq]).hexdigest() == row.fields["sha256"]


def test_no_frame_no_picture_and_the_card_is_taken(tmp_path: Path) -> None:
    class Dark:
        def latest(self) -> None:
            return None

    config = config_for("baccarat", tmp_path)
    taker = Photographer(Dark(), PictureStore(tmp_path / "p"), EvidenceConfig())
    batch = EffectBatch(
        (PublishEvent("card_dealt", {"round_id": 1, "position": "player", "face_down": False}),),
        7,
        "0" * 64,
        1.0,
    )
    assert taker.after(batch) == [] and taker.missed == 1
    assert config.game == "baccarat"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"keep_days": 0}, "[evidence] keep_days must be"),
        ({"keep_bytes": 10}, "[evidence] keep_bytes must be"),
        ({"pictures": "yes"}, "[evidence] pictures must be"),
        ({"colour": 1}, "unknown keys in [evidence]: colour"),
    ],
)
def test_a_bad_evidence_section_is_named(section: dict[str, Any], message: str) -> None:
    from controller.kernel.errors import ConfigurationError
    from controller.service.config import evidence_config_from_mapping

    with pytest.raises(ConfigurationError) as caught:
        evidence_config_from_mapping(section)
    assert message in str(caught.value)


def test_journal_verify_names_a_changed_picture_and_reports_pruned_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.tools.cli import main

    runtime, _ = run_table(tmp_path, "baccarat", rounds=2)
    path = runtime.table.journal.path
    runtime.table.close()
    store = PictureStore(pictures_dir(path))
    with Journal(path, read_only=True) as journal:
        total = len(picture_rows(journal))
        digests = [row.fields["sha256"] for row in picture_rows(journal)]
    assert main(["journal", "verify", str(path)]) == 0
    assert f"{total} picture(s): {total} kept, 0 pruned by retention" in capsys.readouterr().out
    removed = store.prune(START_TIME, keep_days=1, keep_bytes=store.bytes_kept - 3000)
    gone = sum(digest in removed for digest in digests)
    assert main(["journal", "verify", str(path), "--json"]) == 0
    reported = json.loads(capsys.readouterr().out)["pictures"]
    assert reported == {"kept": total - gone, "pruned": gone}
    changed = store.path(digests[-1])
    changed.write_bytes(b"\xff\xd8\xff" + changed.read_bytes()[3:] + b"edited")
    assert main(["journal", "verify", str(path)]) == 1
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith(f"livetable: error: {path}: row ") and str(changed) in line
    assert "tampered" in line


def signed_pictured_journal(tmp_path: Path) -> tuple[Path, Path]:
    """A baccarat journal of two rounds with pictures, its head signed after them: the
    journal and the table's public key."""
    from controller.service.signing import HeadSigner, generate_key_pair, load_signing_key

    runtime, _ = run_table(tmp_path, "baccarat", rounds=2)
    key = tmp_path / "t1.key"
    generate_key_pair(key)
    HeadSigner(load_signing_key(key), runtime.table.journal, "t1").sign()
    path = runtime.table.journal.path
    runtime.table.close()
    return path, tmp_path / "t1.key.pub"


def test_a_round_bundle_carries_its_pictures_and_verify_checks_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import zipfile

    from controller.tools.cli import main

    path, pub = signed_pictured_journal(tmp_path)
    rows = [row for row in pictured_rows_of(path) if row["round_id"] == 2]
    bundle = tmp_path / "round-2.zip"
    export = ["journal", "export", str(path), "--round", "2", "--bundle", str(bundle)]
    assert main([*export, "--public-key", str(pub)]) == 0
    with zipfile.ZipFile(bundle) as opened:
        names = set(opened.namelist())
        manifest = json.loads(opened.read("manifest.json"))
    assert {f"pictures/{row['sha256']}.jpg" for row in rows} <= names
    assert [entry["row"] for entry in manifest["pictures"]] == [row["row"] for row in rows]
    assert manifest["rows"][1] == max(row["row"] for row in rows), "the round's end pictured"
    capsys.readouterr()
    assert main(["journal", "verify", "--bundle", str(bundle), "--public-key", str(pub)]) == 0
    # A picture changed in the bundle: named.
    changed = tmp_path / "changed.zip"
    victim = f"pictures/{rows[0]['sha256']}.jpg"
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(changed, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            target.writestr(name, data + b"x" if name == victim else data)
    capsys.readouterr()
    assert main(["journal", "verify", "--bundle", str(changed), "--public-key", str(pub)]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert f"the picture {victim} of row {rows[0]['row']} was tampered with" in line
    # A picture left out of the manifest: the chain still names it.
    shorter = tmp_path / "shorter.zip"
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(shorter, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name == "manifest.json":
                document = json.loads(data)
                document["pictures"] = document["pictures"][1:]
                data = json.dumps(document).encode()
            target.writestr(name, data)
    assert main(["journal", "verify", "--bundle", str(shorter), "--public-key", str(pub)]) == 1
    assert f"rows [{rows[0]['row']}]" in capsys.readouterr().err


def pictured_rows_of(path: Path) -> list[dict[str, Any]]:
    with Journal(path, read_only=True) as journal:
        return [dict(row.fields, row=row.seq) for row in picture_rows(journal)]


def test_a_live_picture_shows_the_slot_of_the_card_to_enter_to_supervisors_only(
    tmp_path: Path,
) -> None:
    from controller.service.mqtt_api import Request
    from controller.service.pictures import PictureReader
    from controller.table.effects import AskCamera
    from tests.support.api_schema import validate_message

    camera = SimulatedCamera(
        "baccarat", faces=plain_faces, seed=1, perturbations=Perturbations.none(),
        width=640, height=360,
    )  # fmt: skip
    taker = Photographer(camera, PictureStore(tmp_path / "p"), EvidenceConfig())

    def batch(*effects: Any) -> EffectBatch:
        return EffectBatch(effects, 9, "0" * 64, 1.0)

    dealt = {"round_id": 3, "position": "banker", "face_down": False}
    taker.after(batch(PublishEvent("card_dealt", dealt)))
    taker.after(batch(AskCamera("player", "misread", 2)))
    found = taker.live(3)
    assert found is not None and found[0] == "player.card2"
    assert found[1][:3] == b"\xff\xd8\xff" and taker.live(4) is None
    reader = PictureReader(tmp_path / "unused.journal", None, lambda _r: 65536, print)
    reader.photographer = taker
    for role, ok in (("supervisor", True), ("viewer", False), ("platform", False)):
        request = Request(role, role, "pictures", "t-1", {"round_id": 3, "view": "live"})
        answer = reader.answer(request, 65536)
        validate_message(f"livetable/t1/response/{role}", json.dumps(answer).encode())
        assert answer["ok"] is ok and ("data" in answer) is ok, answer
        if ok:
            (live,) = answer["data"]["pictures"]
            assert (live["view"], live["slot"], live["row"]) == ("live", "player.card2", 0)
    # The card taken, nothing waits at the camera: no live picture.
    taker.after(batch(PublishEvent("card_dealt", {**dealt, "position": "player"})))
    assert taker.live(3) is None


def test_the_live_slot_follows_the_table_from_its_misread_to_the_card_entered(
    tmp_path: Path,
) -> None:
    from controller.table.events import CameraRead, CardMisread, SupervisorCommanded
    from controller.table.state import Phase

    runtime, _ = pictured_table(config_for("baccarat", tmp_path))
    taker = runtime.follow.__self__  # type: ignore[union-attr]
    table = runtime.table

    def dealing(_effects: list[Any], _last: Any) -> bool:
        state = table.machine.state
        return state.phase is Phase.DEALING and state.round is not None and bool(
            state.round_log
        )

    play(runtime, dealing)
    round_id = table.machine.state.round_id
    at = table.journal.last_entry.event().at + 1  # type: ignore[union-attr]
    runtime.handle(CardMisread(None, at))
    assert table.machine.state.phase is Phase.READING
    slot = taker.asked[1]
    found = taker.live(round_id)
    assert found is not None and found[0] == slot
    # The camera could not read it: the supervisor must enter it, with the slot in view.
    runtime.handle(CameraRead(table.machine.state.reading, None, at + 1, None))
    assert table.machine.state.phase is Phase.PAUSED
    assert taker.live(round_id) is not None
    entered = SupervisorCommanded(
        "e1", "resume", "sam", "supervisor", at + 2, "", "enter_card", parse_card("9D")
    )
    runtime.handle(entered)
    assert table.machine.state.phase is not Phase.PAUSED
    assert taker.live(round_id) is None
    # The card entered is pictured like any other, right after its row.
    last = picture_rows(table.journal)[-1]
    assert last.fields["slot"] == slot and last.fields["card_row"] == last.seq - 1
