"""How an Angel Eye shoe numbers its frames: the variant profile, and its auto-detection.

Two public readings of the protocol disagree on the SEQ byte (see ``docs/shoe-protocol.md``,
"The two readings"): livetable's reconstruction has the shoe count ``'1'``..``'9'``, ``'0'``,
``'1'``... (modulo 10) with every event taking a number; an independent public implementation
(keepcodings/AngelEye, C#) has its shoe count ``'1'``..``'9'`` and back to ``'1'`` (modulo 9,
never ``'0'``), a start signal ``S`` taking no number, and its decoder accepts any byte as SEQ.
Reading a modulo-9 shoe modulo 10 reports a lost card at every wrap: a pause every nine cards.

:class:`SequenceCounter` turns SEQ symbols into a running count under one variant, or, with
``auto``, finds the variant from the first frames where the evidence is unambiguous:

* a ``'0'`` is sent only by a modulo-10 shoe: ``mod10``;
* a SEQ that is no digit: ``any-seq`` (only repeats can be told, not gaps);
* ``'9'`` then ``'1'`` where the two frames are cards dealt one right after the other in a
  baccarat hand (Player 1 then Banker 1, Banker 1 then Player 2, ...): no card can be
  missing between them, so the shoe wrapped at 9: ``wrap9``. The same step between frames
  that do not prove it (a card lost there would look the same) is read modulo 10, which
  reports the ``'0'`` as lost: the table pauses, as it must on a real gap;
* a signal (``S``, ``P``) carrying the number of the frame before it, or a frame carrying
  the number of the signal before it: signals take no number, ``...-free-signals``.

Until one of these is seen the count follows ``mod10`` (livetable's reading). After a
decision, evidence against it (a ``'0'`` after ``wrap9`` was chosen) switches the profile and
is logged by the session as a contradiction. Pure code: no I/O, no clock, no logging.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from drivers.shoe.protocols.angel_eye.codec import EventFrame

VARIANT_NAMES: Final = (
    "auto",
    "mod10",
    "mod10-free-signals",
    "wrap9",
    "wrap9-free-signals",
    "any-seq",
)
BIT7_SETTINGS: Final = ("auto", "required", "ignored")
SIGNAL_CODES: Final = frozenset("SP")  # start of communication, stand by: no payload


@dataclass(frozen=True, slots=True)
class SeqRule:
    """One way of counting: the SEQ symbols used and where the count wraps."""

    name: str
    lowest: int | None
    """The first symbol of the cycle (0 or 1); None: any byte, no order."""
    modulus: int | None
    signals_numbered: bool

    @property
    def alphabet(self) -> str:
        """The decoder alphabet this rule needs (``digits`` or ``any``)."""
        return "any" if self.modulus is None else "digits"

    def contains(self, symbol: int) -> bool:
        if self.modulus is None or self.lowest is None:
            return True
        return self.lowest <= symbol < self.lowest + self.modulus

    def step(self, previous: int, symbol: int) -> int:
        """How many numbers from ``previous`` to ``symbol``: 0 a repeat, 1 the next..."""
        if self.modulus is None or self.lowest is None:
            return 0 if symbol == previous else 1
        return ((symbol - self.lowest) - (previous - self.lowest)) % self.modulus

    def first_number(self, symbol: int) -> int:
        """The running count given to the first frame seen (``'0'`` counts as 10)."""
        if self.modulus is None:
            return 1
        return symbol or self.modulus


RULES: Final[dict[str, SeqRule]] = {
    "mod10": SeqRule("mod10", 0, 10, True),
    "mod10-free-signals": SeqRule("mod10-free-signals", 0, 10, False),
    "wrap9": SeqRule("wrap9", 1, 9, True),
    "wrap9-free-signals": SeqRule("wrap9-free-signals", 1, 9, False),
    "any-seq": SeqRule("any-seq", None, None, False),
}

# Deal order inside a baccarat hand: the card that can only come right after another one.
_NEXT_IN_HAND: Final[dict[tuple[str, int], frozenset[tuple[str, int]]]] = {
    ("player", 1): frozenset({("banker", 1)}),
    ("banker", 1): frozenset({("player", 2)}),
    ("player", 2): frozenset({("banker", 2)}),
    ("banker", 2): frozenset({("player", 3), ("banker", 3)}),
    ("player", 3): frozenset({("banker", 3)}),
}


def hand_position(frame: EventFrame) -> tuple[str, int] | None:
    """``("player", 2)`` for an in-game Player/Banker card frame, else None."""
    if frame.code != "D":
        return None
    payload = frame.card_payload
    name = payload.target_name
    if name not in ("player", "banker"):
        return None
    return name, payload.index


def dealt_back_to_back(before: EventFrame, after: EventFrame) -> bool:
    """Whether ``after`` is the card dealt right after ``before`` in the same hand."""
    first, second = hand_position(before), hand_position(after)
    return first is not None and second is not None and second in _NEXT_IN_HAND.get(first, ())


@dataclass(frozen=True, slots=True)
class Counted:
    """What one frame's SEQ means."""

    sequence: int | None
    """The running count; None for a repeat or a signal that takes no number."""
    lost: tuple[int, ...] = ()
    duplicate: bool = False
    decision: str | None = None
    """Set when this frame decided (or changed) the profile: why, in words."""
    contradiction: bool = False
    """This frame's SEQ is impossible under a profile that had been fixed or decided."""


@dataclass(slots=True)
class Detection:
    """What the counter has learnt about the shoe (for the commissioning report)."""

    wrap: str | None = None
    """``mod10``, ``wrap9`` or ``any-seq`` once known."""
    wrap_reason: str | None = None
    signals_numbered: bool | None = None
    signals_reason: str | None = None
    decided_at_frame: int | None = None
    ambiguous_wraps: int = 0
    """``'9'`` to ``'1'`` steps read modulo 10 (reported lost) because nothing proved them."""
    contradictions: int = 0


class SequenceCounter:
    """SEQ symbols in, running sequence numbers, duplicates and gaps out."""

    def __init__(self, variant: str = "auto") -> None:
        if variant not in VARIANT_NAMES:
            raise ValueError(f"unknown Angel Eye variant {variant!r}")
        self.configured = variant
        self.detection = Detection()
        self.frames = 0
        self.last_sequence: int | None = None
        self._last_symbol: int | None = None
        self._last_frame: EventFrame | None = None
        if variant != "auto":
            rule = RULES[variant]
            self.detection.wrap = {"mod10": "mod10", "wrap9": "wrap9"}.get(
                rule.name.removesuffix("-free-signals"), "any-seq"
            )
            self.detection.signals_numbered = rule.signals_numbered

    @property
    def last_symbol(self) -> int | None:
        """The SEQ symbol of the last numbered frame."""
        return self._last_symbol

    @property
    def auto(self) -> bool:
        return self.configured == "auto"

    @property
    def rule(self) -> SeqRule:
        """The rule counting now (under ``auto``, ``mod10`` until something else is proven)."""
        wrap = self.detection.wrap or "mod10"
        if wrap == "any-seq":
            return RULES["any-seq"]
        free = self.detection.signals_numbered is False
        return RULES[f"{wrap}-free-signals" if free else wrap]

    @property
    def variant(self) -> str:
        """The profile in effect, as a ``[shoe] variant`` value; ``auto`` while undecided."""
        if self.auto and self.detection.wrap is None:
            return "auto"
        return self.rule.name

    @property
    def decided(self) -> bool:
        return not self.auto or self.detection.wrap is not None

    def _decide_wrap(self, wrap: str, reason: str) -> str:
        detection = self.detection
        if detection.wrap is not None:
            detection.contradictions += 1
        detection.wrap, detection.wrap_reason = wrap, reason
        detection.decided_at_frame = self.frames
        return reason

    def resume(self, last_sequence: int) -> None:
        """Number on from ``last_sequence``, the last number an earlier run gave (a table's
        journal): the next frame's SEQ is read against the symbol that number has under the
        rule in effect, so frames sent while nobody read the line show as a gap.

        Under ``auto`` the profile is not known yet and the rule in effect is ``mod10``: the
        count an undecided (or ``mod10``) run kept agrees with it. After a run that had
        decided ``wrap9`` it does not, and the first step may be misread; a fixed variant
        has no such risk. Under ``any-seq`` there is no symbol to compare: the next frame is
        the next number.
        """
        rule = self.rule
        self.last_sequence = last_sequence
        self._last_frame = None
        if rule.modulus is None or rule.lowest is None:
            self._last_symbol = None
        else:
            self._last_symbol = rule.lowest + (last_sequence - rule.lowest) % rule.modulus

    def count(self, frame: EventFrame) -> Counted:
        self.frames += 1
        symbol = frame.sequence
        signal = frame.code in SIGNAL_CODES
        decision: str | None = None
        contradiction = False
        detection = self.detection
        previous_symbol, previous_frame = self._last_symbol, self._last_frame

        if self.auto:
            if symbol > 9 and detection.wrap != "any-seq":
                contradiction = detection.wrap is not None
                decision = self._decide_wrap(
                    "any-seq", f"the shoe sent SEQ {frame.seq_text!r}, which is no digit"
                )
            elif symbol == 0 and detection.wrap not in ("mod10", "any-seq"):
                contradiction = detection.wrap is not None
                decision = self._decide_wrap("mod10", "the shoe sent SEQ '0'")
            elif (
                detection.wrap is None
                and previous_symbol == 9
                and symbol == 1
                and previous_frame is not None
            ):
                if dealt_back_to_back(previous_frame, frame):
                    decision = self._decide_wrap(
                        "wrap9",
                        "SEQ '9' then '1' on two cards dealt back to back: no card between",
                    )
                else:
                    detection.ambiguous_wraps += 1
            if (
                signal
                and detection.signals_numbered is None
                and previous_symbol is not None
                and symbol == previous_symbol
                and previous_frame is not None
                and previous_frame.code not in SIGNAL_CODES
            ):
                detection.signals_numbered = False
                detection.signals_reason = (
                    f"signal {frame.code!r} carried the number of the {previous_frame.code!r} "
                    "frame before it"
                )
                detection.decided_at_frame = detection.decided_at_frame or self.frames
                decision = decision or detection.signals_reason
        rule = self.rule
        if not rule.contains(symbol):
            contradiction = True
            detection.contradictions += 1

        if signal and not rule.signals_numbered:
            return Counted(None, decision=decision, contradiction=contradiction)
        if self.last_sequence is None:
            sequence = rule.first_number(symbol) if rule.modulus else 1
            lost: tuple[int, ...] = ()
        elif previous_symbol is None:
            # Resumed with no symbol to compare (any byte as SEQ): the next number.
            sequence, lost = self.last_sequence + 1, ()
        else:
            step = rule.step(previous_symbol, symbol)
            if (
                step == 0
                and self.auto
                and previous_frame is not None
                and previous_frame.code in SIGNAL_CODES
                and not signal
                and detection.signals_numbered is not True
            ):
                # A frame on the number of the signal before it: that signal took no number
                # (a shoe that starts with S on '1' and deals its first card on '1').
                detection.signals_numbered = False
                detection.signals_reason = (
                    f"a {frame.code!r} frame came on the number of the signal "
                    f"{previous_frame.code!r} before it"
                )
                detection.decided_at_frame = detection.decided_at_frame or self.frames
                self._last_frame = frame
                return Counted(self.last_sequence, decision=detection.signals_reason)
            if step == 0:
                return Counted(None, duplicate=True, decision=decision, contradiction=contradiction)
            sequence = self.last_sequence + step
            lost = tuple(range(self.last_sequence + 1, sequence))
        self._last_symbol, self._last_frame = symbol, frame
        self.last_sequence = sequence
        return Counted(sequence, lost, decision=decision, contradiction=contradiction)
