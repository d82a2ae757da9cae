"""One command line: every sub-command's help follows the conventions of
``controller.kernel.cli_support``, and bad invocations fail with one line and the right status."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from controller.games.registry import GAME_IDS
from controller.kernel.cli_support import JSON_HELP, VERBOSE_AFTER_DEST, sub_commands
from controller.tools.cli import build_parser, main, version
from drivers.shoe.registry import PROTOCOL_NAMES

COMMANDS = [path for path, _ in sub_commands(build_parser())]

# Commands whose modules other people are rewriting now; each is to follow the same
# conventions (the helpers are in controller.kernel.cli_support) and then leave this list.
PENDING: dict[tuple[str, ...], str] = {}

# Source markup and paths inside the source tree mean nothing to someone at a terminal.
SOURCE_MARKUP = re.compile(
    r"``|:(?:class|func|mod|meth|data|attr):|\b(?:controller|drivers|simulators|vision|tests)/"
    r"|\b\w+\.py\b"
)
# An option that takes a time: its name ends in -s (seconds).
TIME_WORDS = re.compile(r"second|timeout|delay|interval|idle|wait")


def _params() -> list[object]:
    return [
        pytest.param(
            path,
            id=" ".join(path) or "livetable",
            marks=[pytest.mark.xfail(reason=PENDING[path], strict=False)]
            if path in PENDING
            else [],
        )
        for path in COMMANDS
    ]


def _parser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    return dict(sub_commands(build_parser()))[path]


@pytest.mark.parametrize("path", _params())
def test_every_command_has_help_with_an_example(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*path, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: livetable {' '.join(path)}".rstrip())
    parser = _parser(path)
    assert parser.epilog and parser.epilog.startswith(("example:", "examples:")), path
    assert re.search(r"^  livetable ", text, re.MULTILINE), "the example is a whole command"
    assert SOURCE_MARKUP.search(text) is None, SOURCE_MARKUP.search(text)


@pytest.mark.parametrize("path", _params())
def test_every_command_follows_the_option_conventions(path: tuple[str, ...]) -> None:
    parser = _parser(path)
    options = {option: action for action in parser._actions for option in action.option_strings}
    if path:
        assert options["-v"].dest == VERBOSE_AFTER_DEST  # -v after the sub-command too
    for option, action in options.items():
        if option == "--json":
            assert action.help == JSON_HELP, "--json means one JSON object per line"
        # Counts, seeds, rates and times go through the shared types, which refuse
        # negative and nonsensical values.
        assert action.type not in (int, float), f"{option}: use a type from cli_support"
        takes_a_value = action.nargs != 0  # a flag such as --wait is not a time
        if takes_a_value and (
            TIME_WORDS.search(option) or (action.help and "seconds" in action.help)
        ):
            assert option.endswith("-s"), f"{option}: a time option's name ends in -s"
        if option == "--game" and action.choices is not None:
            assert set(action.choices) <= set(GAME_IDS)
        if option == "--protocol" and action.choices is not None:
            assert set(action.choices) <= {*PROTOCOL_NAMES, "all"}


REPOSITORY = Path(__file__).resolve().parents[2]
# Semantic Versioning 2.0.0's grammar, without build metadata.
SEMVER = r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?"


def test_version_names_the_build_and_the_revisions_that_bind_data(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An engineer tells which build a table runs and whether its journal replays under
    another build: the version, then the journal encoding, machine revision and API."""
    from controller.service.wire import API_VERSION
    from controller.table.events import EVENT_ENCODING
    from controller.table.machine import MACHINE_REVISION

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == (
        f"livetable {version()}\n"
        f"journal encoding {EVENT_ENCODING}, machine revision {MACHINE_REVISION}, "
        f"MQTT API {API_VERSION}\n"
    )
    assert re.fullmatch(SEMVER, version())


def test_version_is_the_one_in_pyproject_and_the_changelog() -> None:
    import tomllib

    declared = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]["version"]
    assert version() == declared, "reinstall: the installed metadata is older than pyproject"
    changelog = (REPOSITORY / "CHANGELOG.md").read_text()
    releases = re.findall(rf"^## \[({SEMVER})\] - (\d{{4}}-\d{{2}}-\d{{2}})$", changelog, re.M)
    assert releases, "CHANGELOG.md has no release entry '## [X.Y.Z] - YYYY-MM-DD'"
    assert releases[0][0] == declared, "the changelog's top release is not pyproject's version"
    # Keep a Changelog: every release says what changed and what a studio must do to upgrade.
    for entry in re.split(r"^## ", changelog, flags=re.M)[1:]:
        if entry.startswith("[Unreleased]"):
            continue
        assert re.search(r"^### (Added|Changed|Fixed|Removed|Security)$", entry, re.M), entry[:40]
        assert re.search(r"^### Upgrading$", entry, re.M), f"{entry[:20]}: no Upgrading section"


def test_verbose_is_counted_before_and_after_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    args = parser.parse_args(["-v", "journal", "verify", "-v", str(tmp_path / "j")])
    assert (args.verbose, getattr(args, VERBOSE_AFTER_DEST)) == (1, 1)
    args = parser.parse_args(["rules", "replay", "-vv"])
    assert getattr(args, VERBOSE_AFTER_DEST) == 2


@pytest.fixture
def not_a_journal(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("not a journal\n")
    return path


# (argv, the start of the one-line cause); {tmp} is a temporary directory.
USAGE_ERRORS = [
    (["rtp", "--game", "poker", "--exact"], "argument --game: invalid choice: 'poker'"),
    (["rtp", "--game", "baccarat", "--rounds", "-5"], "argument --rounds: -5 is not a positive"),
    (["rtp", "--game", "baccarat", "--rounds", "many"], "argument --rounds: 'many' is not a"),
    (["journal", "export", "{tmp}/j", "--round", "0"], "argument --round: 0 is not a positive"),
    (["journal", "verify", "{tmp}/j", "--expect-head", "7"], "argument --expect-head: '7' is"),
    (["journal", "export", "{tmp}/j"], "the following arguments are required: --round"),
    (["bench", "table", "--events", "0"], "argument --events: 0 is not a positive"),
    (["bench", "rules", "--seed", "-1"], "argument --seed: -1 is negative"),
    (["bench", "latency", "--idle-s", "nan"], "argument --idle-s: 'nan' is not a number"),
    (["vision", "eval", "{tmp}", "--limit", "-1"], "argument --limit: -1 is not a positive"),
    (["vision", "classify", "--threshold", "1.5", "x.png"], "argument --threshold: 1.5 is not"),
    (["vision", "synth", "kde-standard", "{tmp}", "--count", "0"], "argument --count: 0 is not"),
    (["sim", "camera", "--fps", "0"], "argument --fps: 0 is not a positive number"),
    (["sim", "camera", "--game", "poker"], "argument --game: invalid choice: 'poker'"),
    (
        ["camera", "enrol", "--config", "c.toml", "--slot", "s", "-o", "d", "--timeout-s", "-1"],
        "argument --timeout-s: -1 is not a positive number of seconds",
    ),
    (["journal", "verify"], "the following arguments are required: JOURNAL"),
    (["shoe", "monitor", "--port", "p", "--protocol", "morse"], "argument --protocol: invalid"),
    (["shoe", "monitor", "--port", "p", "--protocol", "native", "--count", "0"], "argument --c"),
    (["shoe", "monitor", "--port", "p", "--protocol", "native", "--stopbits", "3"], "argument"),
    (
        ["shoe", "monitor", "--port", "p", "--protocol", "native", "--duration-s", "-2"],
        "argument --duration-s: -2 is not a positive number of seconds",
    ),
    (["sim", "shoe", "--protocol", "native", "--link", "l", "--drop-rate", "2"], "argument --d"),
    (["sim", "shoe", "--protocol", "native", "--link", "l", "--pull-s", "-1"], "argument --pu"),
    (["demo", "--protocol", "morse"], "argument --protocol: invalid choice: 'morse'"),
    (["run"], "the following arguments are required: --config"),
    (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
]


@pytest.mark.parametrize(("argv", "cause"), USAGE_ERRORS, ids=lambda value: str(value)[:60])
def test_a_bad_command_line_is_a_usage_error_in_one_line(
    argv: list[str], cause: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([arg.replace("{tmp}", str(tmp_path)) for arg in argv])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    last = captured.err.splitlines()[-1]
    assert re.match(r"livetable( [\w-]+)*: error: ", last), last
    assert last.split(": error: ", 1)[1].startswith(cause), last


FAILURES = [
    (["journal", "verify", "{tmp}/missing.journal"], "no journal at {tmp}/missing.journal"),
    (["journal", "rounds", "{notes}"], "cannot open the journal {notes}: file is not a database"),
    (["journal", "export", "{notes}", "--round", "1"], "cannot open the journal {notes}"),
    (["camera", "calibrate", "--config", "{tmp}/no.toml"], "config file {tmp}/no.toml does not"),
    (["vision", "classify", "{tmp}/none.png"], "no such image file: {tmp}/none.png"),
    (["shoe", "monitor", "--port", "{tmp}/none", "--protocol", "native"], "cannot open shoe port"),
    (["run", "--config", "{tmp}/no.toml"], "config file {tmp}/no.toml does not"),
]


@pytest.mark.parametrize(("argv", "cause"), FAILURES, ids=lambda value: str(value)[:60])
def test_a_failing_command_says_why_in_one_line(
    argv: list[str],
    cause: str,
    tmp_path: Path,
    not_a_journal: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def fill(text: str) -> str:
        return text.replace("{tmp}", str(tmp_path)).replace("{notes}", str(not_a_journal))

    assert main([fill(arg) for arg in argv]) == 1
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith(f"livetable: error: {fill(cause)}"), line


def test_a_bug_is_one_line_too_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.service import journal

    def broken(_self: object) -> int:
        raise ZeroDivisionError("boom")

    path = tmp_path / "t.journal"
    journal.Journal(path).close()
    monkeypatch.setattr(journal.Journal, "verify", broken)
    assert main(["journal", "verify", str(path)]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line == "livetable: error: internal error: ZeroDivisionError: boom (-vv for details)"
