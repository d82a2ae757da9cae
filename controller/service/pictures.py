"""A picture of every card: taken as the table takes the card, stored beside the journal by
its SHA-256, its digest journaled in a row of its own right after the card's.

With a camera, the table's thread (:class:`TableRuntime`, after it carried out a batch)
hands each batch to :class:`Photographer`: for every ``card_dealt`` it cuts the card's slot
from the newest frame the camera holds (no wait for a new one: a card never waits for the
camera), and when a round is settled or voided it keeps the whole frame. Each picture is a
JPEG file in the :class:`PictureStore` (``<journal>.pictures/<sha256>.jpg``) and a
``CardPictured`` row, journaled at once, so the next row of the journal after a card's is its
picture's and the chain covers every digest. Burn cards are never pictured (the table
publishes no ``card_dealt`` for them). A camera without a frame (offline) gives no picture,
and says so in the log; a picture that cannot be written never stops the table.

Retention (``[evidence]``) prunes the oldest pictures beyond ``keep_days`` or ``keep_bytes``
and records each pruned digest in ``pruned.jsonl`` of the store: :func:`check_pictures`
(``livetable journal verify``) then reports a pruned picture as pruned, and a picture whose
bytes no longer hash to its row's digest, or that vanished unrecorded, as tampered or missing.

The ``pictures`` request (:class:`PictureReader`, on a thread of its own) answers a round's
pictures in pages under the broker's packet limit. A face-down card's picture is served only
once its round is settled (the round's ``settled`` picture row exists): before that, any
role reads only that it exists (``status: "secret"``), neither its bytes nor its digest.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controller.kernel.errors import ConfigurationError, TableError
from controller.service.audit import AuditReader
from controller.service.config import EvidenceConfig
from controller.service.journal import Journal, JournalEntry
from controller.service.wire import encode, response_message
from controller.table.effects import AskCamera, EffectBatch, PublishEvent
from controller.table.events import CardPictured

logger = logging.getLogger(__name__)

PICTURE_KIND: Final = "CardPictured"
MEDIA_TYPE: Final = "image/jpeg"
SUFFIX: Final = ".jpg"
# JPEG quality of the pictures: a card's index stays legible in a slot's crop at 85, at
# about a third of the bytes of 95 (measured by `livetable bench pictures`).
JPEG_QUALITY: Final = 85
PRUNED_LOG: Final = "pruned.jsonl"
# The views a picture row may have: a card's slot, or the whole table as the round ended.
VIEWS: Final = ("card", "settled", "voided")
_ROUND_ENDS: Final = {"round_settled": "settled", "round_voided": "voided"}
_ROUND_STARTS: Final = frozenset({"round_opened", "betting_closed"})
SHA256_HEX: Final = 64


def pictures_dir(journal_path: Path, config: EvidenceConfig | None = None) -> Path:
    """Where a journal's pictures are: ``[evidence] directory``, else beside the journal."""
    if config is not None and config.directory is not None:
        return config.directory
    path = Path(journal_path)
    return path.with_name(path.name + ".pictures")


def _is_digest(text: object) -> bool:
    return (
        isinstance(text, str)
        and len(text) == SHA256_HEX
        and all(char in "0123456789abcdef" for char in text)
    )


class PictureStore:
    """Pictures by content: ``<sha256>.jpg`` in one folder, and ``pruned.jsonl``, the digests
    retention removed. Written by the table's thread, read by any."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        # (mtime, digest, size) oldest first, built once, then kept as pictures come and go.
        self._index: deque[tuple[float, str, int]] | None = None
        self._bytes = 0

    def path(self, digest: str) -> Path:
        if not _is_digest(digest):
            raise ValueError(f"not a SHA-256 digest: {digest[:70]!r}")
        return self.folder / f"{digest}{SUFFIX}"

    def put(self, data: bytes, at: float | None = None) -> str:
        """Store ``data`` under its digest (once: the same bytes again are the same file);
        OSError when it cannot be written."""
        digest = hashlib.sha256(data).hexdigest()
        path = self.path(digest)
        if path.exists():
            # The same bytes again (an unchanged slot): the file is as young as its newest
            # row, so retention does not take it before that row's time comes.
            if at is not None:
                os.utime(path, (at, at))
            if self._index is not None:
                for entry in self._index:
                    if entry[1] == digest:
                        self._index.remove(entry)
                        self._index.append((path.stat().st_mtime, digest, entry[2]))
                        break
        else:
            self.folder.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{path.name}.{os.getpid()}.part")
            with open(partial, "wb") as file:
                file.write(data)
            os.replace(partial, path)
            if at is not None:
                os.utime(path, (at, at))
            if self._index is not None:
                self._index.append((path.stat().st_mtime, digest, len(data)))
                self._bytes += len(data)
        return digest

    def read(self, digest: str) -> bytes | None:
        try:
            return self.path(digest).read_bytes()
        except (FileNotFoundError, ValueError):
            return None

    def pruned(self) -> dict[str, dict[str, Any]]:
        """The digests retention removed, with when and why (a damaged line is skipped)."""
        found: dict[str, dict[str, Any]] = {}
        try:
            lines = (self.folder / PRUNED_LOG).read_text().splitlines()
        except FileNotFoundError:
            return found
        for line in lines:
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict) and _is_digest(record.get("sha256")):
                    found[record["sha256"]] = record
        return found

    def _load_index(self) -> deque[tuple[float, str, int]]:
        if self._index is None:
            entries = []
            if self.folder.is_dir():
                for path in self.folder.glob(f"*{SUFFIX}"):
                    digest = path.name[: -len(SUFFIX)]
                    if _is_digest(digest):
                        with contextlib.suppress(FileNotFoundError):
                            stat = path.stat()
                            entries.append((stat.st_mtime, digest, stat.st_size))
            entries.sort()
            self._index = deque(entries)
            self._bytes = sum(size for _at, _digest, size in entries)
        return self._index

    @property
    def bytes_kept(self) -> int:
        self._load_index()
        return self._bytes

    def prune(self, now: float, keep_days: float, keep_bytes: int) -> list[str]:
        """Remove the pictures older than ``keep_days``, then the oldest until at most
        ``keep_bytes`` are kept; each one's digest goes to ``pruned.jsonl`` first, so that a
        verify reads it as pruned, never as missing. Returns the digests removed."""
        index = self._load_index()
        oldest = now - keep_days * 86_400
        removed: list[str] = []
        records: list[str] = []
        while index and (index[0][0] < oldest or self._bytes > keep_bytes):
            mtime, digest, size = index.popleft()
            self._bytes -= size
            why = "age" if mtime < oldest else "bytes"
            records.append(
                json.dumps({"sha256": digest, "size": size, "at": now, "why": why}) + "\n"
            )
            removed.append(digest)
        if not removed:
            return removed
        with open(self.folder / PRUNED_LOG, "a") as log:
            log.writelines(records)
            log.flush()
            os.fsync(log.fileno())
        for digest in removed:
            with contextlib.suppress(FileNotFoundError):
                self.path(digest).unlink()
        return removed

    def check(self, digest: str, pruned: dict[str, Any]) -> str:
        """``kept`` (its bytes hash to ``digest``), ``pruned`` (retention removed it),
        ``tampered`` (its bytes changed) or ``missing`` (gone, and not by retention)."""
        data = self.read(digest)
        if data is None:
            return "pruned" if digest in pruned else "missing"
        return "kept" if hashlib.sha256(data).hexdigest() == digest else "tampered"


def encode_jpeg(image: Any, quality: int = JPEG_QUALITY) -> bytes:
    """A BGR image as JPEG bytes (OpenCV, imported only here: a table with a camera)."""
    import cv2

    ok, data = cv2.imencode(SUFFIX, image, [int(cv2.IMWRITE_JPEG_QUALITY), quality])
    if not ok:
        raise ValueError("OpenCV could not encode the picture")
    return bytes(data)


class Photographer:
    """The table thread's picture taker: :meth:`after` takes a carried-out batch and returns
    the ``CardPictured`` rows to journal right after it (see the module's docstring).

    ``source`` is the camera's :class:`~drivers.camera.frames.FrameSource`; ``cards_held``
    says how many cards a hand of the live round holds now (the rules know, after a split),
    None when no round is live (then this counts the round's cards itself)."""

    def __init__(
        self,
        source: Any,
        store: PictureStore,
        config: EvidenceConfig,
        clock: Callable[[], float] = time.time,
        cards_held: Callable[[str], int | None] | None = None,
    ) -> None:
        self.source = source
        self.store = store
        self.config = config
        self.clock = clock
        self.cards_held = cards_held
        self._round: int | None = None
        self._counts: dict[str, int] = {}
        self.asked: tuple[int | None, str] | None = None
        """The round and the slot of the card the table last asked the camera about and
        has not taken yet (a misread): the slot :meth:`live` shows while the supervisor
        enters that card. One tuple, replaced whole: read from any thread."""
        self.taken = 0
        self.missed = 0

    def after(self, batch: EffectBatch) -> list[CardPictured]:
        row = batch.journal_seq
        if row is None:
            return []
        pictures: list[CardPictured] = []
        # One frame for the whole row: its cards and the table as the round ended are seen
        # at one moment (the dealer may clear the felt while a picture is being made).
        frame: list[Any] = []
        for effect in batch.effects:
            if isinstance(effect, AskCamera):
                self._asked(effect)
            if not isinstance(effect, PublishEvent):
                continue
            if effect.name in _ROUND_STARTS:
                # The round's number, for a camera question before its first card.
                self._new_round(effect.payload.get("round_id"))
            if effect.name not in _ROUND_ENDS and effect.name != "card_dealt":
                continue
            asked = self.asked
            if effect.name in _ROUND_ENDS or (
                asked is not None and asked[1].startswith(f"{effect.payload.get('position')}.")
            ):
                self.asked = None
            if not frame:
                try:
                    frame.append(self.source.latest())
                except TableError as error:
                    frame.append(None)
                    logger.warning("no frame from the camera: %s", error)
            if effect.name == "card_dealt":
                picture = self._card(row, effect.payload, frame[0])
            else:
                picture = self._table(row, effect.payload, _ROUND_ENDS[effect.name], frame[0])
            if picture is not None:
                pictures.append(picture)
        if any(picture.view != "card" for picture in pictures):
            self.prune()
        return pictures

    def _asked(self, effect: AskCamera) -> None:
        from drivers.camera import card_slot

        try:
            self.asked = (self._round, card_slot(effect.position, effect.card_number))
        except ConfigurationError:
            self.asked = None

    def live(self, round_id: int) -> tuple[str, bytes, float] | None:
        """The slot of the card to be entered in round ``round_id`` (see :attr:`asked`) cut
        from the newest frame, as JPEG: (slot, bytes, when); None when no card of that
        round waits for the camera's slot, or the camera has no frame. Not journaled: a
        picture for the supervisor's eyes, from the reader's thread."""
        asked = self.asked
        if asked is None or asked[0] != round_id:
            return None
        try:
            frame = self.source.latest()
            if frame is None:
                return None
            return asked[1], encode_jpeg(self.source.region(asked[1], frame).image), self.clock()
        except (TableError, ValueError) as error:
            logger.warning("no live picture of %s: %s", asked[1], error)
            return None

    def prune(self) -> None:
        try:
            removed = self.store.prune(self.clock(), self.config.keep_days, self.config.keep_bytes)
        except OSError as error:
            logger.warning("could not prune the pictures in %s: %s", self.store.folder, error)
            return
        if removed:
            logger.info("pruned %d picture(s) from %s", len(removed), self.store.folder)

    def _new_round(self, round_id: object) -> None:
        if round_id != self._round:
            self._round, self._counts = round_id if isinstance(round_id, int) else None, {}

    def _slot(self, round_id: object, position: str) -> tuple[str | None, int]:
        self._new_round(round_id)
        self._counts[position] = self._counts.get(position, 0) + 1
        held = self.cards_held(position) if self.cards_held is not None else None
        number = held if held else self._counts[position]
        from drivers.camera import card_slot

        try:
            return card_slot(position, number), number
        except ConfigurationError:
            return None, number

    def _card(self, row: int, payload: dict[str, Any], frame: Any) -> CardPictured | None:
        position = str(payload.get("position"))
        round_id = payload.get("round_id")
        slot, _number = self._slot(round_id, position)
        face_down = bool(payload.get("face_down"))
        if slot is None:
            return self._missed(f"no card slot for {position}")
        if frame is None:
            return self._missed(f"no frame from the camera for {slot}")
        try:
            image = self.source.region(slot, frame).image
        except TableError as error:
            return self._missed(f"{slot}: {error}")
        return self._keep(image, round_id, row, "card", position, slot, face_down)

    def _table(
        self, row: int, payload: dict[str, Any], view: str, frame: Any
    ) -> CardPictured | None:
        self._counts = {}
        if frame is None:
            return self._missed(f"no frame from the camera as the round {view}")
        return self._keep(frame.image, payload.get("round_id"), row, view, None, None, False)

    def _keep(
        self,
        image: Any,
        round_id: object,
        row: int,
        view: str,
        position: str | None,
        slot: str | None,
        face_down: bool,
    ) -> CardPictured | None:
        at = self.clock()
        try:
            data = encode_jpeg(image)
            digest = self.store.put(data, at)
        except (OSError, ValueError) as error:
            return self._missed(f"the picture could not be stored: {error}")
        self.taken += 1
        return CardPictured(
            round_id if isinstance(round_id, int) else None,
            row,
            view,
            position,
            slot,
            face_down,
            digest,
            len(data),
            MEDIA_TYPE,
            at,
        )

    def _missed(self, why: str) -> None:
        self.missed += 1
        logger.warning("no picture: %s", why)
        return None


# -- reading them back -------------------------------------------------------------------


def picture_rows(journal: Journal, round_id: int | None = None) -> list[JournalEntry]:
    """The journal's ``CardPictured`` rows (of round ``round_id`` only, when given)."""
    if round_id is not None:
        return journal.entries_with(PICTURE_KIND, "round_id", round_id)
    return journal.entries_of((PICTURE_KIND,), 0, journal.last_seq, journal.last_seq or 1)


@dataclass(frozen=True, slots=True)
class PictureCheck:
    """What :func:`check_pictures` found: counts by status, and each problem in words."""

    kept: int
    pruned: int
    problems: tuple[str, ...]

    @property
    def total(self) -> int:
        return self.kept + self.pruned + len(self.problems)

    def line(self) -> str:
        return f"{self.total} picture(s): {self.kept} kept, {self.pruned} pruned by retention"


def check_pictures(journal: Journal, folder: Path) -> PictureCheck:
    """Every picture the journal names against the store in ``folder``: a pruned one is
    reported as pruned; a changed one (tampered) or one gone unrecorded (missing) is a
    problem naming its row and file."""
    store = PictureStore(folder)
    pruned = store.pruned()
    kept = pruned_count = 0
    problems: list[str] = []
    for row in picture_rows(journal):
        digest = str(row.fields.get("sha256"))
        status = store.check(digest, pruned) if _is_digest(digest) else "malformed"
        if status == "kept":
            kept += 1
        elif status == "pruned":
            pruned_count += 1
        elif status == "tampered":
            problems.append(
                f"row {row.seq}: the picture {store.path(digest)} was tampered with: its bytes "
                f"no longer hash to {digest}"
            )
        else:
            problems.append(
                f"row {row.seq}: the picture {digest[:70]} is missing from {folder} (not pruned)"
            )
    return PictureCheck(kept, pruned_count, tuple(problems))


class PictureReader(AuditReader[Any]):
    """Answers ``pictures`` requests on a thread of its own (the journal read-only, the files
    from the store), in pages: each answer carries the round's pictures from ``row`` (byte
    ``offset`` of that row's picture) on, as many bytes as fit under the packet limit, and
    ``next`` says where the following page starts (None: the last page)."""

    command = "pictures"

    def __init__(
        self,
        journal_path: Path,
        store: PictureStore | None,
        room: Callable[[Any], int],
        respond: Callable[[Any, dict[str, Any]], None],
    ) -> None:
        super().__init__(journal_path, None, "", room, respond)  # type: ignore[arg-type]
        self.store = store
        self.photographer: Photographer | None = None
        """The table's picture taker, for ``live`` pictures (set once the table is built)."""

    def answer(self, request: Any, room: int) -> dict[str, Any]:
        round_id = int(request.args["round_id"])
        start_row = int(request.args.get("row", 0))
        offset = int(request.args.get("offset", 0))
        if request.args.get("view") == "live":
            return self.live_answer(request, round_id)
        if self.store is None:
            return response_message(
                request.transaction,
                "pictures",
                True,
                "this table has no camera: it keeps no pictures",
                data={"round_id": round_id, "camera": False, "pictures": [], "next": None},
            )
        with Journal(self.journal_path, read_only=True, immutable=False) as journal:
            rows = picture_rows(journal, round_id)
        return pictures_answer(
            request.transaction, round_id, rows, self.store, start_row, offset, room
        )


    def live_answer(self, request: Any, round_id: int) -> dict[str, Any]:
        """A supervisor's look at the slot of the card to be entered, now (not journaled)."""
        if request.role != "supervisor":
            return response_message(
                request.transaction,
                "pictures",
                False,
                f"the {request.role} role may not look at the table live: supervisors only",
                code="forbidden",
            )
        taker = self.photographer
        found = None if taker is None else taker.live(round_id)
        pictures: list[dict[str, Any]] = []
        if found is not None:
            slot, data, at = found
            pictures.append(
                {
                    "row": 0,
                    "card_row": 0,
                    "view": "live",
                    "position": slot.rsplit(".card", 1)[0],
                    "slot": slot,
                    "face_down": False,
                    "at": at,
                    "status": "kept",
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                    "media_type": MEDIA_TYPE,
                    "offset": 0,
                    "data": base64.b64encode(data).decode("ascii"),
                }
            )
        message = (
            f"the slot {pictures[0]['slot']} now"
            if pictures
            else f"no card of round {round_id} waits at a camera slot now"
        )
        data = {"round_id": round_id, "camera": taker is not None, "pictures": pictures}
        return response_message(
            request.transaction, "pictures", True, message, data={**data, "next": None}
        )


def picture_entry(
    row: JournalEntry, settled: bool, store: PictureStore, pruned: dict[str, Any]
) -> tuple[dict[str, Any], bytes | None]:
    """One picture as the API shows it, and its bytes when they may be served."""
    fields = row.fields
    entry: dict[str, Any] = {
        "row": row.seq,
        "card_row": fields.get("card_row"),
        "view": fields.get("view"),
        "position": fields.get("position"),
        "slot": fields.get("slot"),
        "face_down": bool(fields.get("face_down")),
        "at": fields.get("at"),
    }
    if entry["face_down"] and not settled:
        # Neither its bytes nor its digest before the round's settlement reveals the card.
        entry["status"] = "secret"
        return entry, None
    digest = str(fields.get("sha256"))
    entry.update(sha256=digest, size=fields.get("size"), media_type=fields.get("media_type"))
    data = store.read(digest) if _is_digest(digest) else None
    if data is not None and hashlib.sha256(data).hexdigest() != digest:
        entry["status"] = "tampered"
        return entry, None
    if data is None:
        entry["status"] = "pruned" if digest in pruned else "missing"
        return entry, None
    entry["status"] = "kept"
    return entry, data


def pictures_answer(
    transaction: str,
    round_id: int,
    rows: list[JournalEntry],
    store: PictureStore,
    start_row: int,
    offset: int,
    room: int,
) -> dict[str, Any]:
    """The page of round ``round_id``'s pictures from row ``start_row`` (byte ``offset`` of
    its picture) that fits in ``room`` bytes of JSON."""
    settled = any(row.fields.get("view") == "settled" for row in rows)
    pruned = store.pruned()
    pictures: list[dict[str, Any]] = []
    next_page: dict[str, int] | None = None

    def reply() -> dict[str, Any]:
        return response_message(
            transaction,
            "pictures",
            True,
            f"{len(pictures)} picture(s) of round {round_id}",
            data={"round_id": round_id, "camera": True, "pictures": pictures, "next": next_page},
        )

    # Room for the page's closing fields once it is full (``next`` with two numbers).
    reserve = 64
    for row in rows:
        if row.seq < start_row:
            continue
        entry, data = picture_entry(row, settled, store, pruned)
        begin = offset if row.seq == start_row else 0
        entry["offset"] = begin
        used = len(encode(reply())) + len(encode(entry)) + 16 + reserve
        if data is None:
            if used > room:
                next_page = {"row": row.seq, "offset": 0}
                break
            pictures.append(entry)
            continue
        # Base64 takes 4 bytes for every 3: as many whole groups as the room leaves.
        fits = max(0, (room - used) // 4 * 3)
        if fits == 0:
            next_page = {"row": row.seq, "offset": begin}
            break
        chunk = data[begin : begin + fits]
        entry["data"] = base64.b64encode(chunk).decode("ascii")
        pictures.append(entry)
        if begin + len(chunk) < len(data):
            next_page = {"row": row.seq, "offset": begin + len(chunk)}
            break
    answer = reply()
    if not pictures and next_page is not None:
        return response_message(
            transaction,
            "pictures",
            False,
            f"the picture of row {next_page['row']} cannot be sent in an answer under the "
            "broker's packet limit",
            code="too_large",
        )
    return answer


def photographer(
    config: Any, table: Any, source: Any, clock: Callable[[], float] = time.time
) -> Photographer:
    """The :class:`Photographer` of an assembled table (``config``: its
    :class:`~controller.service.config.LivetableConfig`; ``table``: its journaled table,
    whose live round says how many cards each hand holds)."""

    def cards_held(position: str) -> int | None:
        live = table.machine.state.round
        try:
            return None if live is None else int(live.cards_held(position))
        except Exception:  # a hand the rules do not know (yet): count it here
            return None

    store = PictureStore(pictures_dir(config.table.journal_path, config.evidence))
    return Photographer(source, store, config.evidence, clock, cards_held)


def picture_store(config: Any, camera: bool = False) -> PictureStore | None:
    """The store a table's ``pictures`` answers read (``config``: its
    :class:`~controller.service.config.LivetableConfig`): with a camera (``[camera]`` or
    ``camera``, one handed in), or pictures left from one; None: a table without a camera."""
    folder = pictures_dir(config.table.journal_path, config.evidence)
    has_camera = camera or config.camera is not None
    return PictureStore(folder) if has_camera or folder.is_dir() else None


def round_pictured(batch: EffectBatch) -> bool:
    """Whether ``batch`` is the row of a round's last picture (the whole table as it was
    settled or voided): the daemon signs the head there too."""
    row = batch.journal_row
    if row is None or row[0] != PICTURE_KIND:
        return False
    try:
        return json.loads(row[1]).get("view") in _ROUND_ENDS.values()
    except ValueError:
        return False
