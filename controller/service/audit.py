"""The ``audit`` request: every supervisor command the table journaled, with its outcome.

A supervisor command (``pause``, ``resume``, ``enter_card``, ``cancel``, ``end_shoe``,
``new_shoe``) is a ``SupervisorCommanded`` row of the journal, with the account and the role
the broker vouched for; ``open_round`` is a ``RoundRequested`` row, with the account but no
role (the journal does not keep it, and the platform opens rounds too: its are listed as
well). Each was answered once, and that answer is kept in the outbox under the command's key
(:func:`controller.service.publishing.command_key`): the audit is those rows, in journal order, each
with the answer its account got (``ok``; a refusal's ``code`` and ``message``).

Requests refused before the journal (``malformed``, ``forbidden``, ``rate_limited``, a
``cancel`` naming another round, ...) left no row and are not in it.

The rows are read by an :class:`AuditReader`, on a thread of its own, through a read-only
connection to the journal: SQLite finds the command rows among the card rows (a journal of a
long life holds hundreds of thousands), which must hold up neither the table's thread (the
cards) nor the MQTT client's (the events on their way out), and a reader of a WAL journal
never waits for the table's writes nor makes them wait. It lists only the rows whose effects
the outbox has recorded (:attr:`~controller.service.outbox.Outbox.last_journal_seq`), so every entry
carries the answer: a command the table is taking at that moment comes in the next page.

An entered card is never shown (``"card": "hidden"``): viewers read the audit, and a card
entered by hand may be the dealer's hole card before its reveal. The table's answers never
name a card (see :mod:`controller.service.wire`).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

from controller.kernel.errors import JournalError
from controller.kernel.vocabulary import answer_code
from controller.service.journal import Journal
from controller.service.mqtt_api import AUDIT_PAGE_DEFAULT, Request
from controller.service.outbox import Outbox
from controller.service.wire import encode, response_message

logger = logging.getLogger(__name__)

# The journal's kinds of rows that are commands a person (or the platform) gave.
AUDITED_KINDS: Final = (
    "RoundRequested",
    "SupervisorCommanded",
    "DealerSignedIn",
    "DealerSignedOut",
)
# What an entered card reads as in the audit.
HIDDEN: Final = "hidden"
# Audit requests waiting for the reader beyond this are answered "unavailable" at once.
MAX_QUEUED_AUDITS: Final = 32
# How long a stop waits for the read in progress.
STOP_WAIT_S: Final = 2.0

Route = TypeVar("Route")


def audit_entry(
    journal_seq: int, kind: str, fields: Mapping[str, Any], answer: bytes | None
) -> dict[str, Any]:
    """One entry of an ``audit`` answer: journal row ``journal_seq`` (a command, of one of
    :data:`AUDITED_KINDS`, with its journaled ``fields``) and the answer stored for it.

    ``args`` are the request's fields as the journal keeps them, defaults left out: a
    ``cancel``'s ``round_id`` was checked before the row was written and is not kept. A
    ``resume`` with a card is listed as ``enter_card``, which is the same command."""
    account = str(fields.get("by", ""))
    command_id = str(fields.get("command_id", ""))
    own = f"{account}/"
    transaction = command_id[len(own) :] if command_id.startswith(own) else command_id
    args: dict[str, Any] = {}
    if kind == "RoundRequested":
        command, role = "open_round", None
        if fields.get("boxes"):
            args["boxes"] = fields["boxes"]
    elif kind == "DealerSignedIn":
        command, role = "dealer_sign_in", fields.get("role")
        args["staff_id"] = fields.get("staff_id")
    elif kind == "DealerSignedOut":
        command, role = "dealer_sign_out", fields.get("role")
    else:
        command, role = str(fields.get("command", "")), fields.get("role")
        resolution = str(fields.get("resolution") or "")
        entered = fields.get("card") is not None
        if command == "resume" and resolution == "enter_card" and entered:
            command, resolution = "enter_card", ""
        if fields.get("reason"):
            args["reason"] = fields["reason"]
        if resolution:
            args["resolution"] = resolution
        if entered:
            args["card"] = HIDDEN
    ok: bool | None = None
    code: str | None = None
    message: str | None = None
    if answer is not None:
        answered = json.loads(answer)
        ok = bool(answered.get("ok"))
        message = str(answered.get("message", ""))
        if not ok:
            code = str((answered.get("error") or {}).get("code") or "refused")
    # The answer's code beside its words, for a page in another language (read back from
    # the words: an answer stored by an older livetable has them too).
    coded = answer_code(message) if message is not None else None
    return {
        "journal_seq": journal_seq,
        "at": fields.get("at"),
        "account": account,
        "role": role,
        "command": command,
        "transaction": transaction,
        "args": args,
        "ok": ok,
        "code": code,
        "message": message,
        "message_code": None if coded is None else coded[0],
        "message_values": {} if coded is None else coded[1],
    }


def audit_answer(
    transaction: str,
    since: int,
    entries: list[dict[str, Any]],
    more_after: bool,
    epoch: str,
    room: int,
) -> dict[str, Any]:
    """The ``audit`` answer with as many of ``entries`` (in order) as fit in ``room`` bytes
    of JSON; ``more_after``: commands after the last of ``entries`` exist. The first entry
    alone too large for an answer is the ``too_large`` error, naming its row."""

    def answer(count: int) -> dict[str, Any]:
        taken = entries[:count]
        return response_message(
            transaction,
            "audit",
            True,
            f"{count} command(s) after journal row {since}",
            data={
                "epoch": epoch,
                "entries": taken,
                "last": taken[-1]["journal_seq"] if taken else since,
                "more": count < len(entries) or more_after,
            },
        )

    # Each entry adds its bytes (and a comma, but the first) to the empty answer; the
    # message's count, ``last`` and ``more`` may take a few bytes more, which the check
    # below takes back.
    size = len(encode(answer(0)))
    count = 0
    for entry in entries:
        length = len(encode(entry)) + (1 if count else 0)
        if size + length > room:
            break
        size += length
        count += 1
    reply = answer(count)
    while count > 0 and len(encode(reply)) > room:
        count -= 1
        reply = answer(count)
    if count == 0 and entries:
        seq = entries[0]["journal_seq"]
        return response_message(
            transaction,
            "audit",
            False,
            f"the command of journal row {seq} alone ({len(encode(entries[0]))} bytes) is more "
            "than an answer can carry under the broker's packet limit; the commands after it "
            f"are answered from since={seq}",
            code="too_large",
        )
    return reply


class AuditReader(Generic[Route]):
    """Answers ``audit`` requests on a thread of its own, from the journal (read-only) and
    the outbox's stored answers. ``room(route)`` is how many bytes of JSON an answer may
    have on ``route``; ``respond(route, answer)`` publishes it (and never raises).
    A reader of another request overrides :attr:`command` and :meth:`answer`."""

    command = "audit"

    def __init__(
        self,
        journal_path: Path,
        outbox: Outbox,
        epoch: str,
        room: Callable[[Route], int],
        respond: Callable[[Route, dict[str, Any]], None],
    ) -> None:
        self.journal_path = Path(journal_path)
        self.outbox = outbox
        self.epoch = epoch
        self._room = room
        self._respond = respond
        self._queue: queue.Queue[tuple[Request, Route]] = queue.Queue(MAX_QUEUED_AUDITS)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"{self.command}-reader", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Finish the read in progress (its journal connection closed) and stop; requests
        still waiting get no answer (as any request to a table that stops)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_S)
            self._thread = None

    def submit(self, request: Request, route: Route) -> bool:
        """Queue an ``audit`` request; False if too many wait already (answer it
        ``unavailable``)."""
        try:
            self._queue.put_nowait((request, route))
        except queue.Full:
            return False
        return True

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                request, route = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                reply = self.answer(request, self._room(route))
            except JournalError as error:
                reply = response_message(
                    request.transaction,
                    self.command,
                    False,
                    f"the journal cannot be read now: {error}",
                    code="unavailable",
                )
            except Exception:  # a bug must not stop the reader: the next request is answered
                logger.exception("an %s request could not be answered", self.command)
                reply = response_message(
                    request.transaction,
                    self.command,
                    False,
                    f"the {self.command} could not be read (the table logged why)",
                    code="unavailable",
                )
            self._respond(route, reply)

    def answer(self, request: Request, room: int) -> dict[str, Any]:
        """The answer to one ``audit`` request (JournalError if the journal cannot be read)."""
        since = int(request.args.get("since", 0))
        limit = int(request.args.get("limit", AUDIT_PAGE_DEFAULT))
        # Only rows whose answers the outbox holds (read first: it only grows).
        recorded = self.outbox.last_journal_seq
        # immutable=False: the table writes the journal meanwhile (a reader that assumed
        # the file unchanging would miss its new rows).
        with Journal(self.journal_path, read_only=True, immutable=False) as journal:
            rows = journal.entries_of(AUDITED_KINDS, since, recorded, limit + 1)
        entries = []
        for row in rows[:limit]:
            fields = row.fields
            answer = self.outbox.answer(str(fields.get("command_id", "")))
            entries.append(audit_entry(row.seq, row.kind, fields, answer))
        return audit_answer(
            request.transaction, since, entries, len(rows) > limit, self.epoch, room
        )
