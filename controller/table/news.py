"""The news that deals no card: the devices' status, the cut card, a timer nobody awaits.

The ``on_*`` functions are handlers that :data:`~controller.table.transitions.TRANSITIONS`
names (in every phase but the cut card's): functions of the
:class:`~controller.table.state.Context`, the state and the event, returning effects. The
news that pauses the table (the shoe offline, a fault, lost cards) is in ``pausing.py``.
"""

from __future__ import annotations

from controller.games.shoe import final_round_number
from controller.table.effects import (
    Effect,
    EventRejected,
    LockShoe,
    PublishEvent,
    UnlockShoe,
)
from controller.table.events import (
    CameraOffline,
    CameraOnline,
    CardPictured,
    CutCardDrawn,
    ShoeFaultCleared,
    ShoeLockChanged,
    ShoeOnline,
    TimerExpired,
)
from controller.table.state import (
    BURN_PHASES,
    ROUND_PHASES,
    Context,
    Phase,
    TableState,
    phase_at_stake,
)
from controller.table.views import published

P = Phase


def on_shoe_online(ctx: Context, state: TableState, event: ShoeOnline) -> list[Effect]:
    state.shoe_online = True
    # The shoe may have come back with its gate in any state: say again what we want.
    lock: Effect = LockShoe() if state.shoe_locked else UnlockShoe()
    return [lock, PublishEvent("shoe_online", {"port": event.port}), published(ctx, state)]


def on_shoe_lock(ctx: Context, state: TableState, event: ShoeLockChanged) -> list[Effect]:
    state.shoe_reports_locked = bool(event.locked)
    if state.shoe_reports_locked == state.shoe_locked:
        return []
    # The gate is not where the table wants it (a confirmation of an older command, or
    # the shoe changed it by itself): ask again. Its next confirmation settles it.
    return [LockShoe() if state.shoe_locked else UnlockShoe()]


def on_stale_timer(ctx: Context, state: TableState, event: TimerExpired) -> list[Effect]:
    return []  # the dealer or the platform was quicker than the timer


def on_shoe_fault_cleared(ctx: Context, state: TableState, event: ShoeFaultCleared) -> list[Effect]:
    return [PublishEvent("shoe_fault_cleared", {"code": event.code})]


def on_picture(ctx: Context, state: TableState, event: CardPictured) -> list[Effect]:
    # A picture's record is evidence, not input: nothing to publish, nothing changes (the
    # console reads the pictures with the ``pictures`` request).
    return []


def on_camera_status(
    ctx: Context, state: TableState, event: CameraOnline | CameraOffline
) -> list[Effect]:
    # News for the supervisors: a question the camera cannot answer now still runs into
    # its own timer, and a pause it causes is resolved as any other.
    online = isinstance(event, CameraOnline)
    if state.camera_online == online:
        return []
    state.camera_online = online
    if isinstance(event, CameraOnline):
        notice = PublishEvent("camera_online", {"source": event.source})
    else:
        details = {"source": event.source, "reason": event.reason}
        notice = PublishEvent("camera_offline", details)
    return [notice, published(ctx, state)]


def on_cut_card(ctx: Context, state: TableState, event: CutCardDrawn) -> list[Effect]:
    if state.final_round is not None:
        return [EventRejected("CutCardDrawn", "the cut card is already out")]
    phase = phase_at_stake(state)
    if phase in BURN_PHASES or phase is P.AWAITING_SHUFFLE:
        return [EventRejected("CutCardDrawn", "the cut card came out before any round")]
    # The round in progress (a round in betting is "in progress": its cards are next) is
    # the last; between rounds, the next one is.
    cut_round = state.round_number if phase in ROUND_PHASES else state.round_number + 1
    state.final_round = final_round_number(cut_round, state.settings.rounds_after_cut_card)
    return [
        PublishEvent(
            "cut_card_drawn", {"shoe_id": state.shoe_id, "final_round": state.final_round}
        ),
        published(ctx, state),
    ]
