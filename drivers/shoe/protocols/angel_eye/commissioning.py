"""What ``livetable shoe monitor`` says at the end of an Angel Eye run, in plain words.

The commissioning report: the variant it saw (SEQ alphabet and wrap, numbered signals or
not, data bit 7), which events appeared, counts of frames, checksum failures and gaps, and the
``[shoe.angel-eye]`` lines that fix the profile. Pure: it reads a session's counters and
returns text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from drivers.shoe.codec import DecoderStats
from drivers.shoe.protocols.angel_eye.codec import AngelEyeDecoder
from drivers.shoe.protocols.angel_eye.variants import SequenceCounter
from drivers.shoe.sessions import SessionStats

_CODE_NAMES = {
    "S": "start signal",
    "P": "stand-by signal",
    "C": "cut card",
    "D": "card in a game",
    "d": "card outside a game",
    "R": "retransmitted card",
    "G": "shoe's result",
    "E": "error",
    "e": "error cleared",
    "L": "lock key",
    "M": "preset changed",
}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


@dataclass(slots=True)
class AngelEyeObservations:
    """What one run saw of an Angel Eye shoe: the commissioning report is made from it."""

    codes: Counter[str] = field(default_factory=Counter)
    seq_symbols: set[str] = field(default_factory=set)
    wraps: Counter[str] = field(default_factory=Counter)
    """SEQ steps across the top of the count, e.g. ``"9→0"``, ``"9→1"``."""
    bit7_set: int = 0
    bit7_clear: int = 0
    impossible: Counter[str] = field(default_factory=Counter)
    """Card frames with a field no shoe can send, by reason."""
    new_shoes_confirmed: int = 0
    results: int = 0
    gaps: int = 0


class ReportedSession(Protocol):
    """What the report reads of an Angel Eye session (the session module imports this
    one, never the reverse)."""

    observed: AngelEyeObservations
    counter: SequenceCounter
    decoder: AngelEyeDecoder
    session_stats: SessionStats

    @property
    def decoder_stats(self) -> DecoderStats: ...


def angel_eye_report(session: ReportedSession) -> str:
    """The commissioning report of an Angel Eye run."""
    observed, counter = session.observed, session.counter
    detection = counter.detection
    lines = ["Commissioning report (Angel Eye)"]
    digits = sorted(s for s in observed.seq_symbols if len(s) == 1 and s.isdigit())
    others = sorted(s for s in observed.seq_symbols if s not in digits)
    seen = ", ".join(f"'{s}'" for s in digits + others) or "none"
    lines.append(f"  SEQ characters seen: {seen}.")
    if observed.wraps:
        wraps = ", ".join(f"{step} ({count}x)" for step, count in sorted(observed.wraps.items()))
        lines.append(f"  Wraps of the count seen: {wraps}.")
    if counter.auto:
        if detection.wrap is None:
            lines.append(
                "  Numbering: NOT DECIDED yet (read modulo 10 meanwhile). Draw at least 20 "
                "cards in normal play and run the monitor again."
            )
        else:
            lines.append(
                f"  Numbering: {_wrap_words(detection.wrap)}; decided at frame "
                f"{detection.decided_at_frame} because {detection.wrap_reason}."
            )
    else:
        lines.append(f"  Numbering: fixed by the configuration: {counter.variant}.")
    if detection.ambiguous_wraps:
        lines.append(
            f"  {_plural(detection.ambiguous_wraps, 'step')} from '9' to '1' could not be proven "
            "gap-free before the profile was decided and were reported as lost cards."
        )
    if detection.contradictions:
        lines.append(
            f"  WARNING: {_plural(detection.contradictions, 'frame')} contradicted the profile "
            "(see the log): check the shoe and the [shoe.angel-eye] variant."
        )
    signals = observed.codes["S"] + observed.codes["P"]
    if signals == 0:
        lines.append("  Signals (S, P): none seen, so whether they take a number is unknown.")
    elif detection.signals_numbered is False:
        lines.append(
            f"  Signals (S, P): {signals} seen; they take no number ({detection.signals_reason})."
        )
    else:
        lines.append(f"  Signals (S, P): {signals} seen; read as taking a number each.")
    data_frames = observed.bit7_set + observed.bit7_clear
    if data_frames == 0:
        lines.append("  Data bit 7: no frame with data seen.")
    elif observed.bit7_clear:
        lines.append(
            f"  Data bit 7: clear in {observed.bit7_clear} of {data_frames} frames with data "
            "(the fields are read masked)."
        )
    else:
        lines.append(f"  Data bit 7: set in all {data_frames} frames with data.")
    if session.decoder.bit7_rejected:
        lines.append(
            f"  {_plural(session.decoder.bit7_rejected, 'intact frame')} dropped because data "
            'bit 7 was clear (data_bit7 = "required").'
        )
    events = ", ".join(
        f"{_CODE_NAMES.get(code, code)} ({code}) {count}"
        for code, count in sorted(observed.codes.items(), key=lambda item: -item[1])
    )
    lines.append(f"  Events seen: {events or 'none'}.")
    decoder, stats = session.decoder_stats, session.session_stats
    lines.append(
        f"  Frames: {decoder.frames}; checksum failures: {decoder.bad_checksum}; gaps: "
        f"{observed.gaps} ({_plural(stats.sequences_lost, 'number')} lost); duplicates "
        f"dropped: {stats.duplicates_dropped}."
    )
    if observed.impossible:
        reasons = "; ".join(f"{reason} ({count}x)" for reason, count in observed.impossible.items())
        lines.append(f"  Impossible cards (reported as misreads): {reasons}.")
    if observed.new_shoes_confirmed:
        lines.append(
            "  New shoes confirmed by the shoe (S after the cut card): "
            f"{observed.new_shoes_confirmed}."
        )
    if observed.results:
        lines.append(f"  Hand results reported by the shoe (G): {observed.results}.")
    lines.append("  To fix this profile, put in [shoe.angel-eye]:")
    variant = counter.variant
    if variant == "auto":
        lines.append('    variant = "auto"          # not decided yet: run the monitor longer')
    elif detection.signals_numbered is None and signals == 0 and variant in ("mod10", "wrap9"):
        # Either numbering exists with signals that take no number: no signal, no telling.
        lines.append(f'    variant = "{variant}"      # no signal seen: check S/P numbering once')
    else:
        lines.append(f'    variant = "{variant}"')
    if data_frames == 0:
        lines.append('    data_bit7 = "auto"       # no data frame seen yet')
    else:
        bit7 = "ignored" if observed.bit7_clear else "required"
        lines.append(f'    data_bit7 = "{bit7}"')
    return "\n".join(lines)


def _wrap_words(wrap: str) -> str:
    return {
        "mod10": "'0'-'9', counting modulo 10",
        "wrap9": "'1'-'9', back to '1' after '9' (modulo 9)",
        "any-seq": "any byte as SEQ: repeats are dropped, gaps cannot be seen",
    }.get(wrap, wrap)
