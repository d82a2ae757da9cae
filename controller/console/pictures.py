"""A round's pictures for the page: read from the table with the account's own ``pictures``
requests (so the table decides what each role sees: a face-down card's picture comes only
once its round settled), joined page by page, checked against their digests, and kept a
little while for the ``<img>`` that asks for each one (the page's policy takes images from
the console only, never inline)."""

from __future__ import annotations

import base64
import binascii
import collections
import hashlib
import threading
from typing import Any, Final

from controller.console.common import REQUEST_TIMEOUT_S

# Pages one round's pictures may take (a round's pictures are a few hundred KiB: at 64 KiB
# a page, far below this); more is a table answering in circles.
MAX_PAGES: Final = 200
# Pictures kept for the page's images, the oldest let go first (a round's are a dozen).
CACHE_PICTURES: Final = 256


def round_pictures(client: Any, table: str, round_id: int) -> dict[str, Any]:
    """Every page of round ``round_id``'s ``pictures`` answers from ``table``, the pictures
    joined: ``{"camera", "pictures": [entry + "bytes"]}``. RuntimeError when the table
    refuses; each kept picture's bytes are checked against its digest (``tampered`` else)."""
    start: dict[str, int] | None = {"row": 0, "offset": 0}
    entries: dict[int, dict[str, Any]] = {}
    chunks: dict[int, list[bytes]] = collections.defaultdict(list)
    camera = True
    for _page in range(MAX_PAGES):
        if start is None:
            break
        answer = client.request(
            table, "pictures", timeout=REQUEST_TIMEOUT_S, round_id=round_id, **start
        )
        if not answer.get("ok"):
            raise RuntimeError(answer.get("message") or "the table refused the pictures")
        data = answer.get("data") or {}
        camera = bool(data.get("camera"))
        for entry in data.get("pictures") or []:
            row = int(entry["row"])
            if "data" in entry:
                try:
                    chunks[row].append(base64.b64decode(entry.pop("data"), validate=True))
                except (binascii.Error, ValueError):
                    entry["status"] = "tampered"
            entry.pop("offset", None)
            entries.setdefault(row, entry)
        start = data.get("next")
    else:
        raise RuntimeError(f"table {table} gave more than {MAX_PAGES} pages of pictures")
    pictures = []
    for row, entry in entries.items():
        picture = dict(entry)
        if picture.get("status") == "kept":
            whole = b"".join(chunks.get(row, []))
            if hashlib.sha256(whole).hexdigest() != picture.get("sha256"):
                picture["status"] = "tampered"
            else:
                picture["bytes"] = whole
        pictures.append(picture)
    return {"camera": camera, "pictures": pictures}


class PictureCache:
    """The pictures the page's images ask for, by account, table and row; safe from any
    thread. Only what the account's own requests returned is ever in it."""

    def __init__(self, size: int = CACHE_PICTURES) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._kept: collections.OrderedDict[tuple[str, str, int, int], bytes] = (
            collections.OrderedDict()
        )

    def keep(self, account: str, table: str, round_id: int, row: int, data: bytes) -> None:
        with self._lock:
            key = (account, table, round_id, row)
            self._kept[key] = data
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)

    def get(self, account: str, table: str, round_id: int, row: int) -> bytes | None:
        with self._lock:
            return self._kept.get((account, table, round_id, row))


def page_view(
    table: str, round_id: int, found: dict[str, Any], account: str, cache: PictureCache
) -> dict[str, Any]:
    """What the page reads: each picture without its bytes, with the address of its image
    (kept pictures, whose bytes go to ``cache``)."""
    shown = []
    for picture in found["pictures"]:
        entry = {key: value for key, value in picture.items() if key != "bytes"}
        if "bytes" in picture:
            cache.keep(account, table, round_id, int(picture["row"]), picture["bytes"])
            entry["url"] = (
                f"/api/tables/{table}/rounds/{round_id}/pictures/{int(picture['row'])}.jpg"
            )
        shown.append(entry)
    return {"table": table, "round_id": round_id, "camera": found["camera"], "pictures": shown}


def live_picture(client: Any, table: str, round_id: int) -> bytes | None:
    """The slot of round ``round_id``'s card to be entered, as the table's camera sees it now
    (a supervisor's ``pictures`` request with ``view`` ``live``); None when no card waits
    at a camera slot. RuntimeError when the table refuses (another role: ``forbidden``)."""
    answer = client.request(
        table, "pictures", timeout=REQUEST_TIMEOUT_S, round_id=round_id, view="live"
    )
    if not answer.get("ok"):
        raise RuntimeError(answer.get("message") or "the table refused the live picture")
    for entry in (answer.get("data") or {}).get("pictures") or []:
        try:
            data = base64.b64decode(entry.get("data", ""), validate=True)
        except (binascii.Error, ValueError):
            return None
        return data if hashlib.sha256(data).hexdigest() == entry.get("sha256") else None
    return None
