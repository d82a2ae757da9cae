"""``livetable journal verify / rounds / export / keygen``: a table's journal as evidence.

``verify`` checks the hash chain of a table's journal row by row, says where it breaks, and
prints the head (the last row's number and hash); ``--expect-head`` compares it with a head
stored earlier (the daemon publishes it in its state as ``journal: {seq, hash}``), which
is how a truncated or replaced journal shows. ``rounds`` lists the rounds. ``export``
replays the journal through the table's state machine (under the settings the journal
recorded) and prints one round's history: every event with who caused it and the effects it
had, as text, CSV or JSON lines. It includes what the public never saw (the hole card before
its reveal), because it is for supervisors and regulators.

A table with a signing key signs its head (:mod:`controller.service.signing`): ``keygen`` makes
the key pair, ``verify --public-key`` checks every signature against the chain and says up
to where the journal is signed, ``export --bundle`` writes a round's evidence bundle
(:mod:`controller.service.evidence`) that ``verify --bundle`` checks with nothing else.

Every command opens the journal strictly read-only (see
:func:`controller.service.journal_files.read_only_uri`): nothing is written beside the evidence,
and a journal on read-only media reads as well as one on the table PC; every command reads
the segments archived beside it (``<journal>.segments/``) before it. ``archive`` alone
writes: it moves old rows into a new segment (:mod:`controller.service.segments`), and
refuses while a table runs on the journal.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.kernel.cli_support import (
    JSON_HELP,
    default_to_help,
    examples,
    positive_int,
    print_json,
)
from controller.kernel.errors import JournalError
from controller.tools.event_text import (
    describe_input,
    describe_published,
    time_text,
    who,
)

if TYPE_CHECKING:
    from controller.service.journal import Journal
    from controller.service.pictures import PictureCheck
    from controller.service.signing import SignatureReport

EXAMPLE_JOURNAL = "/var/lib/livetable/t1.journal"
_HASH = re.compile(r"[0-9a-fA-F]{64}")


def journal_head(text: str) -> tuple[int, str]:
    """``SEQ:HASH``, or the state's ``{"seq": ..., "hash": ...}`` as JSON: a journal head."""
    seq_text, _, digest = text.strip().partition(":")
    if text.lstrip().startswith("{"):
        try:
            head = json.loads(text)
            seq_text, digest = str(head["seq"]), str(head["hash"])
        except (ValueError, KeyError, TypeError):
            raise argparse.ArgumentTypeError(
                f'{text!r} is not a journal head: give SEQ:HASH or {{"seq": ..., "hash": ...}}'
            ) from None
    if not seq_text.isdigit() or int(seq_text) < 1 or not _HASH.fullmatch(digest):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a journal head: give SEQ:HASH, a row number and its 64 hex digits"
        )
    return int(seq_text), digest.lower()


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "journal",
        help="verify a table's journal, list its rounds, export a round's history",
        description="Verify a table's journal, list its rounds, or export one round's history "
        "from it, reading the segments archived beside it first. These only read: nothing is "
        "written beside the journal, and it may lie on read-only media. archive moves old "
        "rows into a segment (the table stopped).",
        epilog=examples(
            f"livetable journal verify {EXAMPLE_JOURNAL}",
            f"livetable journal rounds {EXAMPLE_JOURNAL}",
            f"livetable journal export {EXAMPLE_JOURNAL} --round 12",
        ),
    )
    commands = parser.add_subparsers(dest="journal_command", metavar="WHAT")

    verify = commands.add_parser(
        "verify",
        help="check the journal's hash chain and signatures and print its head",
        description="Check every row of the journal against the hash chain, say where it "
        "breaks, and print the head: the last row's number and hash, which the table "
        "publishes in its state as journal: {seq, hash}. A chain alone cannot show that its "
        "last rows were cut off: give a head stored earlier with --expect-head, and verify "
        "fails unless the journal still reaches that row with that hash. Nor can it show who "
        "wrote it: with --public-key, every head the table signed is checked against the "
        "chain, and verify says up to which row the journal is signed. --bundle checks a "
        "round's evidence bundle (journal export --bundle) instead of a journal.",
        epilog=examples(
            f"livetable journal verify {EXAMPLE_JOURNAL}",
            f"livetable journal verify {EXAMPLE_JOURNAL} --public-key t1.key.pub",
            f"livetable journal verify {EXAMPLE_JOURNAL} --expect-head 4711:"
            "e7f6c011776e8db7cd330b54174fd76f7d0216b612387a5ffcfb81e6f0919683",
            "livetable journal verify --bundle round-12.zip --public-key t1.key.pub",
        ),
    )
    _journal_argument(verify, optional=True)
    _public_key_argument(verify)
    verify.add_argument(
        "--bundle",
        type=Path,
        metavar="FILE.zip",
        help="check a round's evidence bundle instead of a journal (with --public-key, its "
        "key must be one given; without, the key in the bundle is used)",
    )
    verify.add_argument(
        "--expect-head",
        type=journal_head,
        metavar="SEQ:HASH",
        help="a head stored earlier (SEQ:HASH, or the state's journal object as JSON): fail "
        "unless the journal reaches row SEQ and its hash is HASH",
    )
    verify.add_argument(
        "--pictures",
        type=Path,
        metavar="DIR",
        help="where the camera's pictures of the cards are (default: JOURNAL.pictures beside "
        "it, or [evidence] directory): each one is checked against its row's SHA-256",
    )
    verify.add_argument("--json", action="store_true", help=JSON_HELP)
    verify.set_defaults(func=run_verify, usage_error=verify.error)

    rounds = commands.add_parser(
        "rounds",
        help="list the rounds in the journal",
        description="List every round in the journal: its id, shoe, game, when it opened, "
        "whether it was settled or cancelled (and when), and the pauses during it.",
        epilog=examples(
            f"livetable journal rounds {EXAMPLE_JOURNAL}",
            f"livetable journal rounds {EXAMPLE_JOURNAL} --format csv > rounds.csv",
        ),
    )
    _journal_argument(rounds)
    _format_options(rounds)
    rounds.set_defaults(func=run_rounds)

    export = commands.add_parser(
        "export",
        help="print one round's history: each event, who caused it, its effects",
        description="Replay the journal and print one round's history, from the request "
        "that opened it to its result or cancellation: for each event the time (UTC), the "
        "journal row, the event, who caused it (shoe, camera, timer, platform, controller or "
        "the supervisor's account) and the effects it had (what was published, what the "
        "dealer was told). It shows the dealer's hole card and burn cards, which the public "
        "never saw. --json gives each row with its hash, the event's fields and the effects "
        "as the table produced them.",
        epilog=examples(
            f"livetable journal export {EXAMPLE_JOURNAL} --round 12",
            f"livetable journal export {EXAMPLE_JOURNAL} --round 12 --json",
            f"livetable journal export {EXAMPLE_JOURNAL} --round 12 --format csv > round-12.csv",
        ),
    )
    _journal_argument(export)
    export.add_argument(
        "--round",
        dest="round_id",
        type=positive_int,
        required=True,
        metavar="ID",
        help="the round's id (as journal rounds lists it)",
    )
    _format_options(export)
    export.add_argument(
        "--bundle",
        type=Path,
        metavar="FILE.zip",
        help="write the round's evidence bundle instead (its events, its pictures, the chain "
        "to the next signed head, the signature and the public key; needs --public-key)",
    )
    export.add_argument(
        "--pictures",
        type=Path,
        metavar="DIR",
        help="where the camera's pictures are, for --bundle (default: JOURNAL.pictures)",
    )
    _public_key_argument(export)
    export.set_defaults(func=run_export, usage_error=export.error)

    archive = commands.add_parser(
        "archive",
        help="move old rows into a segment beside the journal (the table stopped)",
        description="Move the journal's rows before its last checkpoint (with --before-days, "
        "only those older than N days) into a new segment file in JOURNAL.segments/, rows "
        "and hashes unchanged, then delete them from the journal in one transaction. The "
        "segment is written, flushed to the disk and verified first. Each segment verifies "
        "on its own, and journal verify JOURNAL checks the chain across all of them; journal "
        "rounds, journal export and livetable report read them before the journal. Refused "
        "while a table runs on the journal: stop it first. Segments are evidence: back "
        "them up.",
        epilog=examples(
            f"livetable journal archive {EXAMPLE_JOURNAL}",
            f"livetable journal archive {EXAMPLE_JOURNAL} --before-days 90",
        ),
    )
    archive.add_argument("journal", type=Path, metavar="JOURNAL", help="the journal file")
    archive.add_argument(
        "--before-days",
        type=positive_int,
        metavar="N",
        help="archive only rows older than N days (default: every row before the last checkpoint)",
    )
    archive.set_defaults(func=run_archive)

    keygen = commands.add_parser(
        "keygen",
        help="make a table's signing key pair (Ed25519)",
        description="Write a new Ed25519 key pair: PATH, the private key (PEM PKCS8, mode "
        "0600), which the table's [table] signing_key names, and PATH.pub, the public key "
        "(PEM), which auditors verify with. Never overwrites a file. Prints the key's "
        "fingerprint (SHA256: and the base64 of the SHA-256 of the raw public key), the "
        "name every signature gives its key by.",
        epilog=examples("livetable journal keygen /etc/livetable/t1.key"),
    )
    keygen.add_argument("path", type=Path, metavar="PATH", help="the private key's file")
    keygen.set_defaults(func=run_keygen)
    default_to_help(parser)


def _public_key_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--public-key",
        dest="public_keys",
        type=Path,
        action="append",
        default=[],
        metavar="PATH.pub",
        help="a public key the table signs with (PEM; journal keygen's PATH.pub); again for "
        "each key of the journal's life (a key rotated: each signature names its key)",
    )


def _journal_argument(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    parser.add_argument(
        "journal",
        type=Path,
        metavar="JOURNAL",
        nargs="?" if optional else None,
        help="the journal file",
    )
    parser.add_argument(
        "--immutable",
        action="store_true",
        help="the journal cannot change (a copy on read-only media): read it without any "
        "locking; refused when rows wait in its write-ahead log",
    )


def _format_options(parser: argparse.ArgumentParser) -> None:
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--format",
        choices=("text", "csv", "json"),
        default="text",
        help="text for people (default), csv for a spreadsheet, json as --json",
    )
    output.add_argument("--json", dest="format", action="store_const", const="json", help=JSON_HELP)


def _open(args: argparse.Namespace) -> Journal:
    # Imported here so that building the CLI's parser stays light.
    from controller.service.journal import Journal

    return Journal(args.journal, read_only=True, immutable=True if args.immutable else None)


# -- verify ---------------------------------------------------------------------------------


def run_verify(args: argparse.Namespace) -> int:
    from controller.service.journal import check_head
    from controller.service.signing import check_journal, keys_by_fingerprint

    if args.bundle is not None:
        return _verify_bundle(args)
    if args.journal is None:
        # As argparse says it of a required argument (a usage error, exit 2).
        args.usage_error("the following arguments are required: JOURNAL (or --bundle FILE.zip)")
    keys = keys_by_fingerprint(args.public_keys)
    with _open(args) as journal:
        if journal.segment_of is not None:
            return _verify_segment(args, journal)
        rows = journal.verify()
        checkpoints = _check_checkpoints(journal)
        seq, digest = journal.head
        if args.expect_head is not None:
            check_head(journal, *args.expect_head)
        signed = check_journal(journal, keys) if keys else None
        heads = journal.signed_heads()
        unsigned_settlements = _settled_after(journal, signed)
        pictures = _check_pictures(journal, args)
        archived, archived_in = journal.archived_through, len(journal.segments())
        archived_in = f"{archived_in} segment(s)"
    if signed is not None and signed.last is None:
        raise JournalError(
            f"{args.journal} holds no signed head: rows 1..{rows} are unsigned (a table "
            "signs only with [table] signing_key)"
        )
    if args.json:
        document: dict[str, Any] = {
            "file": str(args.journal),
            "rows": rows,
            "chain": "intact",
            "journal": {"seq": seq, "hash": digest},
            "checkpoints": checkpoints,
            "archived_through": archived,
        }
        if args.expect_head is not None:
            expected_seq, expected_hash = args.expect_head
            document["expected_head"] = {"seq": expected_seq, "hash": expected_hash}
        if signed is not None:
            document["signed"] = {**signed.to_dict(), "settled_unsigned": unsigned_settlements}
        if pictures is not None:
            document["pictures"] = {"kept": pictures.kept, "pruned": pictures.pruned}
        print_json(document)
        return 0
    print(f"{args.journal}: {rows} rows, hash chain intact")
    if archived:
        print(f"rows 1..{archived} in {archived_in}, each segment verified and linked")
    if checkpoints:
        print(f"{checkpoints} checkpoint(s), each the state the rows before it give")
    print(f"head: row {seq}, hash {digest}")
    if pictures is not None:
        print(pictures.line())
    if args.expect_head is not None:
        expected_seq = args.expect_head[0]
        after = f"; {seq - expected_seq} row(s) after it" if seq > expected_seq else ""
        print(f"expected head: row {expected_seq} is there with that hash{after}")
    if signed is not None:
        print(signed.line())
        if unsigned_settlements:
            print(
                f"warning: {len(unsigned_settlements)} round(s) settled after the last signed "
                f"head (rows {', '.join(map(str, unsigned_settlements))}), and the table signs "
                "every settlement at once: signatures were removed, or the table stopped "
                "between the two; compare with a head stored from its state (--expect-head)"
            )
    elif heads:
        by = ", ".join(sorted({head[3] for head in heads}))
        print(f"{len(heads)} signed head(s) by key {by}, not checked: give --public-key")
    return 0


def _verify_segment(args: argparse.Namespace, journal: Journal) -> int:
    """A segment alone: its chain from its first row's ``prev_hash`` (which only the
    segment before it, or the journal, vouches for)."""
    if args.public_keys or args.expect_head is not None or args.pictures is not None:
        args.usage_error(
            "--public-key, --expect-head and --pictures check a journal: give the live "
            "journal, which reads its segments"
        )
    rows = journal.verify()
    first = journal.first_row()
    assert first is not None  # a segment that verified holds rows
    seq, digest = journal.head
    if args.json:
        print_json(
            {
                "file": str(args.journal),
                "segment_of": journal.segment_of,
                "rows": rows,
                "chain": "intact",
                "first": {"seq": first[0], "prev_hash": first[1]},
                "journal": {"seq": seq, "hash": digest},
            }
        )
        return 0
    print(
        f"{args.journal}: segment of journal epoch {journal.segment_of}, rows {first[0]}..{seq}, "
        "hash chain intact"
    )
    print(f"chained from prev_hash {first[1]}")
    print(f"head: row {seq}, hash {digest}")
    return 0


def run_archive(args: argparse.Namespace) -> int:
    from controller.service.segments import archive

    print(archive(args.journal, args.before_days).line())
    return 0


def _check_checkpoints(journal: Journal) -> int:
    """How many checkpoints the journal holds, each checked against the state that a
    replay of the rows before it gives (a start begins at the last one, trusting it);
    JournalError naming the first that does not hold it."""
    from controller.service.journal import CHECKPOINT_KIND
    from controller.service.journaled_table import config_of, replay

    count = sum(1 for _ in journal.newest_first({CHECKPOINT_KIND}))
    if count:
        config = config_of(journal)
        replay(journal, config, config.operational())
    return count


def _check_pictures(journal: Journal, args: argparse.Namespace) -> PictureCheck | None:
    """The pictures the journal names, checked against their files; JournalError naming the
    first tampered or missing one. None when the journal names no picture."""
    from controller.service.pictures import check_pictures, picture_rows, pictures_dir

    if not picture_rows(journal):
        return None
    folder = args.pictures or pictures_dir(args.journal)
    check = check_pictures(journal, folder)
    if check.problems:
        more = f" (and {len(check.problems) - 1} more)" if len(check.problems) > 1 else ""
        raise JournalError(f"{args.journal}: {check.problems[0]}{more}")
    return check


def _settled_after(journal: Journal, signed: SignatureReport | None) -> list[int]:
    """The settlement rows after the last signed head (none when nothing was checked)."""
    if signed is None or signed.last is None or signed.rows <= signed.last.seq:
        return []
    from controller.service.journaled_table import config_of, round_summaries

    after = signed.last.seq
    return [
        summary.last_row
        for summary in round_summaries(journal, config_of(journal))
        if summary.outcome == "settled" and summary.last_row > after
    ]


def _verify_bundle(args: argparse.Namespace) -> int:
    from controller.service.evidence import verify_bundle
    from controller.service.signing import keys_by_fingerprint

    if args.journal is not None:
        args.usage_error("give a JOURNAL or --bundle FILE.zip, not both")
    if args.expect_head is not None:
        args.usage_error("--expect-head is a journal's: a bundle's head is the one it signs")
    report = verify_bundle(args.bundle, keys_by_fingerprint(args.public_keys))
    if args.json:
        print_json(
            {
                "file": str(args.bundle),
                "round": report.round_id,
                "table": report.table,
                "rows": list(report.rows),
                "signed": report.head.published(),
                "key_given": report.key_given,
            }
        )
        return 0
    print(f"{args.bundle}: {report.line()}")
    return 0


# -- keygen ---------------------------------------------------------------------------------


def run_keygen(args: argparse.Namespace) -> int:
    from controller.service.signing import generate_key_pair, public_key_path

    key = generate_key_pair(args.path)
    print(f"private key {args.path} (mode 0600), public key {public_key_path(args.path)}")
    print(f"fingerprint {key}")
    return 0


# -- rounds ---------------------------------------------------------------------------------


def run_rounds(args: argparse.Namespace) -> int:
    from controller.service.journaled_table import config_of, round_summaries

    with _open(args) as journal:
        summaries = [summary.to_dict() for summary in round_summaries(journal, config_of(journal))]
    if args.format == "json":
        for summary in summaries:
            print_json(summary)
        return 0
    header = ("round", "shoe", "game", "opened", "outcome", "at", "by", "pauses", "rows")
    rows = [
        tuple(
            map(
                printable,
                (
                    str(summary["round_id"]),
                    _text(summary["shoe_id"]),
                    summary["game"],
                    time_text(summary["opened_at"]),
                    summary["outcome"],
                    time_text(summary["settled_at"] or summary["cancelled_at"]),
                    _text(summary["cancelled_by"]),
                    ", ".join(summary["pauses"]) or "-",
                    "{}-{}".format(*summary["rows"]),
                ),
            )
        )
        for summary in summaries
    ]
    if args.format == "csv":
        _write_csv(header, rows)
    elif not rows:
        print(f"{args.journal}: no rounds")
    else:
        _write_columns(header, rows)
    return 0


# -- export ---------------------------------------------------------------------------------


def run_export(args: argparse.Namespace) -> int:
    from controller.service.journaled_table import config_of, export_round

    if args.bundle is not None:
        return _export_bundle(args)
    with _open(args) as journal:
        config = config_of(journal)
        lines = export_round(journal, config, args.round_id)
    if not lines:
        raise JournalError(f"round {args.round_id} is not in {args.journal}")
    if args.format == "json":
        for line in lines:
            print_json({**line, "who": who(line["kind"], line["event"])})
        return 0
    header = ("time (UTC)", "row", "event", "who", "effect")
    rows = [
        (
            time_text(line["event"].get("at")),
            str(line["seq"]),
            printable(describe_input(line["kind"], line["event"])),
            printable(who(line["kind"], line["event"])),
            # One effect a line: the line breaks are the output's, any other is escaped.
            "\n".join(map(printable, filter(None, map(describe_effect, line["effects"]))))
            or "no effect",
        )
        for line in lines
    ]
    if args.format == "csv":
        _write_csv(header, rows)
        return 0
    print(
        printable(
            f"round {args.round_id} ({config.game}, table {config.table_id}), from {args.journal}"
        )
    )
    _write_columns(header, rows)
    return 0


def _export_bundle(args: argparse.Namespace) -> int:
    from controller.service.evidence import write_bundle
    from controller.service.signing import check_journal, fingerprint, load_public_key

    if not args.public_keys:
        args.usage_error("--bundle needs the table's --public-key PATH.pub (the bundle carries it)")
    keys = {fingerprint(key): key for key in map(load_public_key, args.public_keys)}
    pems = {fingerprint(load_public_key(path)): path.read_bytes() for path in args.public_keys}
    with _open(args) as journal:
        # Only what verifies goes out: the chain, then every signature with the keys given.
        journal.verify()
        check_journal(journal, keys)
        report = write_bundle(journal, args.round_id, args.bundle, pems, args.pictures)
    print(f"{args.bundle}: {report.line()}")
    return 0


def describe_effect(effect: Mapping[str, Any]) -> str:
    """One effect in a few words; empty for the republished state (every row has one)."""
    name = effect.get("effect")
    if name == "PublishState":
        return ""
    if name == "PublishEvent":
        return describe_published(str(effect.get("name")), effect.get("payload") or {})
    if name == "TellDealer":
        return f"dealer told: {effect.get('message')}"
    if name == "StartTimer":
        seconds = effect.get("duration_s")
        return f"timer #{effect.get('timer_id')} {effect.get('purpose')} {seconds:g} s"
    if name == "LockShoe":
        return "shoe locked"
    if name == "UnlockShoe":
        return "shoe unlocked"
    if name == "AskCamera":
        return (
            f"camera asked for {effect.get('position')} card {effect.get('card_number')} "
            f"({effect.get('reason')})"
        )
    if name == "CommandAnswered":
        outcome = "done" if effect.get("ok") else "refused"
        return f"answered {effect.get('by')}: {outcome}: {effect.get('message')}"
    if name == "EventRejected":
        return f"rejected: {effect.get('reason')}"
    return json.dumps(effect, sort_keys=True)


# -- output ---------------------------------------------------------------------------------

# Characters a terminal (or a spreadsheet) may act on instead of showing: C0 and C1
# controls (ESC starts the sequences that clear a screen or set a title), formats such as
# the bidi overrides that reorder what follows, line and paragraph separators, surrogates.
_UNSAFE_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def printable(text: str) -> str:
    """``text`` with every character a terminal could act on written as an escape
    (``\\x1b``, ``\\u202e``, ``\\n``), and ``\\`` as ``\\\\`` so an escape is never
    ambiguous: the reasons, accounts and device messages in a journal came from outside,
    and an auditor must see them, not have the terminal obey them."""
    if text.isprintable() and "\\" not in text:
        return text  # the usual case, at C speed
    return "".join(_escape(char) for char in text)


def _escape(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    if unicodedata.category(char) not in _UNSAFE_CATEGORIES:
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _text(value: object) -> str:
    return "-" if value is None else str(value)


def _write_csv(header: Iterable[str], rows: Iterable[Iterable[str]]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)


def _write_columns(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """Columns padded to their widest cell; the last column's extra lines go below it."""
    widths = [
        max(len(header[i]), *(len(row[i].split("\n")[0]) for row in rows)) if rows else len(h)
        for i, h in enumerate(header)
    ]
    indent = sum(width + 2 for width in widths[:-1])

    def line(cells: Iterable[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    print(line(header).rstrip())
    for row in rows:
        first, *more = row[-1].split("\n")
        print(line((*row[:-1], first)).rstrip())
        for extra in more:
            print(" " * indent + extra)
