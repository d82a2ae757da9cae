"""What the table says, as numbered API messages: from the machine's effects to the outbox.

:class:`Publications` turns the effects of each journaled event into the MQTT API's messages
(:mod:`controller.service.wire`) and writes them to the
:class:`~controller.service.outbox.Outbox` in one commit per journal row. The same object,
by the same :meth:`Publications.record` of one :class:`~controller.table.effects.EffectBatch`
per event, does it live (the daemon's effect handler) and at start, over the journal's
replay (a batch made from each row: :func:`replayed_batch`), for the rows the outbox has not
seen yet: the numbering is a function of the journal alone.

It also remembers what the request handlers need: the latest state message, the decision
the table awaits (by the ``seq`` of its ``decision_requested`` event), and the answers to
requests already taken (by key), so that a repeated request is answered again and never
executed twice.

**Commitments to face-down cards.** A face-down ``card_dealt`` (the dealer's hole card) and a
``hole_card_read`` that does not show its card carry ``commitment``: the hash of the journal
row that holds the card, which the state published with it carries as its journal head too.
The row's body holds a salt (:data:`controller.table.events.SALTED_KINDS`), so the hash
gives nothing away. When the round settles, its ``round_settled`` carries ``reveals``: each
such row whole (seq, kind, body with the card and its salt, prev_hash, hash), so that anyone
can check that the card the result shows is the one committed to when it was dealt.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from controller.service.journal import JournalEntry
from controller.service.outbox import Outbox
from controller.service.wire import (
    encode,
    event_message,
    journal_object,
    response_message,
    state_message,
)
from controller.table.effects import (
    CheckpointTaken,
    CommandAnswered,
    Effect,
    EffectBatch,
    EventRejected,
    PublishEvent,
    PublishState,
)

logger = logging.getLogger(__name__)


def command_key(account: str, transaction: str) -> str:
    """The journaled ``command_id`` of a request: unique per account and transaction (an
    account is one MQTT topic level, so it holds no ``/``)."""
    return f"{account}/{transaction}"


def decision_key(request_seq: int) -> str:
    return f"decision/{request_seq}"


def split_command_key(key: str) -> tuple[str, str]:
    account, _, transaction = key.partition("/")
    return account, transaction


def replayed_batch(entry: JournalEntry, effects: list[Effect]) -> EffectBatch:
    """The batch of a replayed journal row: its effects, its seq and hash, its time."""
    return EffectBatch(
        tuple(effects),
        entry.seq,
        entry.hash,
        entry.fields.get("at"),
        (entry.kind, entry.body, entry.prev_hash),
    )


class ChangeSignal(threading.Condition):
    """A condition that remembers a notification no one was waiting for.

    The publisher waits on :attr:`Publications.changed` between rounds of sending; a change
    notified while it was busy sending (a new event recorded then, an acknowledgement) would
    otherwise be lost, and what it announced would wait for the publisher's next timeout.
    Here :meth:`wait` returns at once when a notification came since the last ``wait``
    returned. Meant for one waiter (the publisher), which then looks at everything anew.
    """

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self._signalled = False

    def notify(self, n: int = 1) -> None:  # notify_all() calls it too
        self._signalled = True
        super().notify(n)

    def wait(self, timeout: float | None = None) -> bool:
        if not self._signalled:
            super().wait(timeout)
        signalled, self._signalled = self._signalled, False
        return signalled


class Publications:
    """Effects in, numbered messages out (to the outbox), plus what requests need to know."""

    def __init__(self, table_id: str, outbox: Outbox, epoch: str) -> None:
        self.table_id = table_id
        self.outbox = outbox
        self.epoch = epoch
        """The journal's epoch, in every state message (the series' id)."""
        self._lock = threading.Lock()
        self.changed = ChangeSignal(self._lock)
        self.state: dict[str, Any] | None = None
        self.state_version = 0
        # Counted from the journal's first row by the replay; live, the outbox's last.
        self.seq = 0
        # The decision the table awaits: the seq of its decision_requested and its payload.
        self.awaited: tuple[int, dict[str, Any]] | None = None
        self._journal_head: tuple[int, str] = (0, "")
        # The latest signed head (journal.signed), once the daemon signs one.
        self._signed: dict[str, Any] | None = None
        self._writing = True
        self._sender: Callable[[], bool] | None = None
        # The rows holding the face-down cards of the round in play, revealed at its
        # settlement: (round_id, position, the row as published).
        self._committed: list[tuple[Any, Any, dict[str, Any]]] = []

    def send_with(self, sender: Callable[[], bool]) -> None:
        """Call ``sender()`` on the recording thread right after each :meth:`record`: the
        daemon's link sends a row's messages there and then, so that a card's state does
        not wait for the publisher thread to wake. :attr:`changed` is notified unless
        ``sender`` returns True (all sent). ``sender`` must not raise."""
        self._sender = sender

    def replaying(self, entry_seq: int) -> None:
        """Before the effects of journal row ``entry_seq`` are recorded during replay: rows
        the outbox already has are counted, not written again."""
        self._writing = entry_seq > self.outbox.last_journal_seq

    def live(self) -> None:
        self._writing = True

    def set_signed(self, signed: dict[str, Any], republish: bool = True) -> None:
        """The latest signed head, published as the state's ``journal.signed``. Set just
        before the :meth:`record` of the row it signs, ``republish=False``: that row's state
        carries it. Else the state is said again now, with it."""
        with self._lock:
            self._signed = signed
            if not republish or self.state is None:
                return
            self.state = {**self.state, "journal": journal_object(self._journal_head, signed)}
            self.state_version += 1
        if self._sender is None or not self._sender():
            with self._lock:
                self.changed.notify_all()

    def record(self, batch: EffectBatch) -> list[tuple[dict[str, Any], CommandAnswered]]:
        """Number and store the messages of one event's effects; return the commands'
        answers (with their response messages) for the caller to route. Effects that are
        not published (the devices', the timers', the dealer's line) are not looked at."""
        answers: list[tuple[dict[str, Any], CommandAnswered]] = []
        journal_seq, at = batch.journal_seq, batch.at
        if journal_seq is not None:
            # Every journaled row passes here, replayed or live: the head is always the
            # journal's (an event refused before the journal leaves it where it was).
            self._journal_head = (journal_seq, batch.journal_hash or "")
        journal_head = self._journal_head
        state: dict[str, Any] | None = None
        for effect in batch.effects:
            if isinstance(effect, PublishEvent | EventRejected):
                if journal_seq is None:
                    # Refused before the journal (not a well-formed event): not part of the
                    # numbered record, which replay must rebuild exactly.
                    logger.warning("not journaled, not published: %s", effect)
                    continue
                self._event(self._with_commitments(effect, batch), journal_seq, at)
            elif isinstance(effect, PublishState):
                state = effect.state
            elif isinstance(effect, CheckpointTaken):
                # A start that began at this checkpoint did not count the messages before
                # it: the numbering goes on from the count it holds.
                if self._writing:
                    self.outbox.carry_on_from(effect.published)
                else:
                    self.seq = max(self.seq, effect.published)
            elif isinstance(effect, CommandAnswered):
                _account, transaction = split_command_key(effect.command_id)
                response = response_message(transaction, effect.command, effect.ok, effect.message)
                if journal_seq is not None and self._writing:
                    self.outbox.add_answer(effect.command_id, journal_seq, encode(response))
                answers.append((response, effect))
        if journal_seq is not None and self._writing:
            self.outbox.commit(journal_seq)
        with self._lock:
            self.seq = self.outbox.last_seq if self._writing else self.seq
            if state is not None:
                self.state = state_message(
                    self.seq, state, at, journal_head, epoch=self.epoch, signed=self._signed
                )
                self.state_version += 1
            elif self.state is not None and journal_seq is not None:
                # Nothing public changed but the journal grew: the state carries its head.
                self.state = {
                    **self.state,
                    "journal": journal_object(journal_head, self._signed),
                    "seq": self.seq,
                }
                self.state_version += 1
        if self._sender is None or not self._sender():
            with self._lock:
                self.changed.notify_all()
        return answers

    def _with_commitments(
        self, effect: PublishEvent | EventRejected, batch: EffectBatch
    ) -> PublishEvent | EventRejected:
        """The effect as published: a face-down card with the commitment of the row that
        holds it (remembered for the settlement), a settlement with the rows it reveals."""
        if not isinstance(effect, PublishEvent):
            return effect
        payload = effect.payload
        if effect.name in ("card_dealt", "hole_card_read") and "card" not in payload:
            if effect.name == "card_dealt" and not payload.get("face_down"):
                return effect
            row = _card_row(batch)
            if row is None:
                # No card in this row: a stand-in for an unread hole card (read later, in a
                # row of its own), or a card held earlier and accepted now.
                return effect
            self._committed.append((payload.get("round_id"), payload.get("position"), row))
            return PublishEvent(effect.name, {**payload, "commitment": row["hash"]})
        if effect.name == "round_voided":
            self._committed = []  # never revealed: the round ended without its result
        elif effect.name == "round_settled":
            reveals = self._reveals(payload)
            if reveals:
                return PublishEvent(effect.name, {**payload, "reveals": reveals})
        return effect

    def _reveals(self, settlement: dict[str, Any]) -> list[dict[str, Any]]:
        """The rows of the settled round's face-down cards whose card its result shows."""
        committed, self._committed = self._committed, []
        result = settlement.get("result")
        reveals = []
        for round_id, position, row in committed:
            if round_id != settlement.get("round_id") or not isinstance(result, dict):
                continue
            hand = result.get(position)
            card = json.loads(row["body"]).get("card")
            if isinstance(hand, dict) and card in (hand.get("cards") or ()):
                reveals.append({"position": position, "card": card, "journal": row})
        return reveals

    def _event(
        self, effect: PublishEvent | EventRejected, journal_seq: int, at: float | None
    ) -> None:
        if self._writing:
            seq = self.outbox.next_seq()
            message = event_message(seq, self.table_id, at, effect)
            self.outbox.add(seq, journal_seq, encode(message))
        else:
            self.seq += 1
            seq = self.seq
            message = event_message(seq, self.table_id, at, effect)
        if isinstance(effect, PublishEvent):
            if effect.name == "decision_requested":
                self.awaited = (seq, dict(effect.payload))
            elif effect.name in ("decision_taken", "round_settled", "round_voided", "table_paused"):
                taken = effect.name == "decision_taken" and not effect.payload.get("auto")
                if taken and self.awaited is not None and self._writing:
                    answer = response_message(
                        None, "decide", True, "decision taken", data=dict(effect.payload)
                    )
                    self.outbox.add_answer(
                        decision_key(self.awaited[0]), journal_seq, encode(answer)
                    )
                self.awaited = None

    def state_snapshot(self) -> tuple[int, dict[str, Any] | None]:
        with self._lock:
            return self.state_version, self.state


def _card_row(batch: EffectBatch) -> dict[str, Any] | None:
    """The batch's journal row as a commitment, when the row holds a card."""
    if batch.journal_row is None or batch.journal_seq is None or batch.journal_hash is None:
        return None
    kind, body, prev_hash = batch.journal_row
    try:
        card = json.loads(body).get("card")
    except (ValueError, AttributeError):
        return None
    if not isinstance(card, str):
        return None
    # The batch's seq, hash and row come from one journal entry: the hash is the row's.
    return {
        "seq": batch.journal_seq,
        "kind": kind,
        "body": body,
        "prev_hash": prev_hash,
        "hash": batch.journal_hash,
    }

