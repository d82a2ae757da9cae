"""One text control language for the shoe simulator: stdin, a control socket, tests, scripts.

Each command is one line; each answer is one line starting with ``ok`` or ``error``::

    draw [COUNT] [TARGET [INDEX]]   take COUNT things out of the shoe (default 1)
    unplug [SECONDS]                pull the cable (back after SECONDS, or at ``replug``)
    replug                          plug it back in (a new tty behind the same link)
    key lock|unlock                 turn the physical lock key
    fault CODE                      the shoe reports error CODE (2 = overdraw)
    signal CODE                     a protocol's signal (Angel Eye: S start of
                                    communication, P stand by)
    result OUTCOME [PAIRS]          Angel Eye: the shoe's own result (player, banker, tie,
                                    force-quit; PAIRS: player-pair, banker-pair)
    stuck SECONDS                   jam: silence, then the next card
    garbage [COUNT]                 line noise
    new-shoe                        shuffle a fresh shoe
    status                          protocol, cable, cards left, last sequence number
    help
"""

from __future__ import annotations

import shlex

from controller.kernel.errors import TableError
from simulators.shoe.simulator import Emitted, ShoeSimulator

HELP = __doc__.split("::", 1)[1].strip("\n") if __doc__ else ""


def describe(emitted: Emitted) -> str:
    text = f"{emitted.sequence} {emitted.event}"
    if emitted.card:
        text += f" {emitted.card}"
    if emitted.foreign:
        text += " foreign"
    return text


def execute(simulator: ShoeSimulator, line: str) -> str:
    """Run one control line against ``simulator``; never raises for bad input."""
    try:
        words = shlex.split(line)
    except ValueError as error:
        return f"error {error}"
    if not words:
        return "ok"
    verb, arguments = words[0].lower(), words[1:]
    try:
        if verb == "draw":
            count = 1
            if arguments and arguments[0].isdigit():
                count = int(arguments.pop(0))
            target = arguments[0] if arguments else None
            index = int(arguments[1]) if len(arguments) > 1 else None
            drawn = [simulator.draw(target, index) for _ in range(count)]
            return "ok " + "; ".join(describe(emitted) for emitted in drawn)
        if verb == "unplug":
            simulator.unplug(float(arguments[0]) if arguments else None)
            return "ok unplugged"
        if verb == "replug":
            simulator.replug()
            return f"ok plugged {simulator.slave_path}"
        if verb == "key" and arguments and arguments[0] in ("lock", "unlock"):
            return "ok " + describe(simulator.turn_key(arguments[0] == "lock"))
        if verb == "fault" and arguments:
            return "ok " + describe(simulator.report_fault(int(arguments[0])))
        if verb == "signal" and arguments:
            emitted = simulator.signal(arguments[0].upper())
            return "ok " + (describe(emitted) if emitted else "signal (no number)")
        if verb == "result" and arguments:
            pairs = {word.lower() for word in arguments[1:]}
            unknown = pairs - {"player-pair", "banker-pair"}
            if unknown:
                return f"error unknown pair {sorted(unknown)[0]!r}"
            emitted = simulator.report_result(
                arguments[0].lower(), "player-pair" in pairs, "banker-pair" in pairs
            )
            return "ok " + describe(emitted)
        if verb == "stuck" and arguments:
            simulator.stuck(float(arguments[0]))
            return "ok stuck"
        if verb == "garbage":
            simulator.send_garbage(int(arguments[0]) if arguments else 16)
            return "ok garbage"
        if verb == "new-shoe":
            simulator.new_shoe()
            return f"ok shoe {simulator.shoe_number}"
        if verb == "status":
            last = simulator.truth[-1].sequence if simulator.truth else 0
            return (
                f"ok protocol={simulator.protocol} plugged={simulator.plugged} "
                f"tty={simulator.slave_path} cards_left={simulator.cards_left} "
                f"sequence={last} locked={simulator.locked} {simulator.speaker.status()}"
            ).rstrip()
        if verb == "help":
            return "ok " + " | ".join(line.strip() for line in HELP.splitlines())
    except (TableError, ValueError, IndexError) as error:  # ShoeProtocolError is a TableError
        return f"error {error}"
    return f"error unknown command {line.strip()!r} (try help)"
