"""Daemon logging: one line per record, syslog priorities for journald, secrets redacted."""

from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.kernel import logs


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


def _configure(verbosity: int, journald: bool) -> io.StringIO:
    stream = io.StringIO()
    logs.configure_logging(verbosity, journald, stream=stream)
    return stream


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


@pytest.mark.usefixtures("restore_root_logger")
def test_journald_lines_carry_the_syslog_priority_and_no_time() -> None:
    stream = _configure(2, journald=True)
    log = logging.getLogger("livetable.test")
    log.critical("the journal is corrupt")
    log.error("shoe offline")
    log.warning("camera slow")
    log.info("round %d settled", 12)
    log.debug("timer set")
    log.log(logs.RAW_LEVEL, "not shown at -vv")
    assert _lines(stream) == [
        "<2>livetable.test: the journal is corrupt",
        "<3>livetable.test: shoe offline",
        "<4>livetable.test: camera slow",
        "<6>livetable.test: round 12 settled",
        "<7>livetable.test: timer set",
    ]


@pytest.mark.usefixtures("restore_root_logger")
def test_terminal_lines_start_with_time_and_level() -> None:
    stream = _configure(1, journald=False)
    logging.getLogger("livetable.test").info("table t1 up")
    logging.getLogger("livetable.test").debug("hidden at -v")
    (line,) = _lines(stream)
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO livetable\.test: table t1 up", line
    ), line


@pytest.mark.usefixtures("restore_root_logger")
@pytest.mark.parametrize(
    ("verbosity", "level"),
    [(0, logging.WARNING), (1, logging.INFO), (2, logging.DEBUG), (3, 5), (9, 5), (-1, 30)],
)
def test_verbosity_sets_the_root_level(verbosity: int, level: int) -> None:
    _configure(verbosity, journald=False)
    assert logging.getLogger().level == level


@pytest.mark.usefixtures("restore_root_logger")
def test_configuring_again_replaces_the_handler() -> None:
    first = _configure(1, journald=False)
    second = _configure(1, journald=True)
    logging.getLogger("livetable.test").warning("once")
    assert first.getvalue() == ""
    assert _lines(second) == ["<4>livetable.test: once"]


@pytest.mark.usefixtures("restore_root_logger")
def test_a_traceback_is_one_line_and_cannot_forge_an_entry() -> None:
    stream = _configure(1, journald=True)
    log = logging.getLogger("livetable.test")
    try:
        raise ValueError("bad frame")
    except ValueError:
        log.exception("decoder failed")
    log.warning("player said\n<3>livetable: forged\r\x1b[2J")
    first, second = _lines(stream)
    assert first.startswith("<3>livetable.test: decoder failed\\nTraceback (most recent call")
    assert "\\n" in first and first.endswith("ValueError: bad frame")
    assert second == "<4>livetable.test: player said\\n<3>livetable: forged\\r\\x1b[2J"


def test_redact_replaces_secret_values_at_any_depth() -> None:
    config = {
        "mqtt": {
            "host": "broker",
            "username": "livetable-t1",
            "password": "hunter2",
            "password_file": "/etc/livetable/t1.mqtt-password",
            "tls": {"key_file": "/etc/livetable/t1.key", "key": "PEM..."},
        },
        "api_token": "abc",
        "Secret": "s",
        "camera": {"source": "rtsp://studio:rtsp-pass@10.0.0.7/t1"},
        "servers": [{"token": "t"}],
    }
    redacted = logs.redact(config)
    assert redacted == {
        "mqtt": {
            "host": "broker",
            "username": "livetable-t1",
            "password": "***",
            "password_file": "/etc/livetable/t1.mqtt-password",
            "tls": {"key_file": "/etc/livetable/t1.key", "key": "***"},
        },
        "api_token": "***",
        "Secret": "***",
        "camera": {"source": "rtsp://studio:***@10.0.0.7/t1"},
        "servers": [{"token": "***"}],
    }
    assert config["mqtt"]["password"] == "hunter2"  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2 user=bob", "password=*** user=bob"),
        ("mqtt_password: hunter2, port: 1883", "mqtt_password: ***, port: 1883"),
        ("{'password': 'hunter 2', 'port': 1883}", "{'password': '***', 'port': 1883}"),
        ('{"token": "a b c", "secret":"x"}', '{"token": "***", "secret":"***"}'),
        ("Api-Key=0123&x=1", "Api-Key=***&x=1"),
        ("password_file=/etc/p key_file=/etc/k", "password_file=/etc/p key_file=/etc/k"),
        ("mqtts://livetable-t1:hunter2@broker:8883", "mqtts://livetable-t1:***@broker:8883"),
        ("no secrets here: key points", "no secrets here: key points"),
    ],
)
def test_redact_text(text: str, expected: str) -> None:
    assert logs.redact_text(text) == expected


@pytest.mark.usefixtures("restore_root_logger")
def test_no_secret_reaches_the_log() -> None:
    stream = _configure(1, journald=False)
    log = logging.getLogger("livetable.test")
    log.info("config: %s", {"mqtt": {"password": "hunter2", "host": "broker"}})
    log.info("connecting %(user)s with %(password)s", {"user": "t1", "password": "hunter2"})
    log.info("camera at %s", "rtsp://studio:hunter2@10.0.0.7/t1")
    log.info("token=hunter2")
    try:
        raise ConnectionError("refused: password=hunter2")
    except ConnectionError:
        log.exception("broker")
    text = stream.getvalue()
    assert "hunter2" not in text
    assert len(_lines(stream)) == 5
    assert "'host': 'broker'" in text and "connecting t1 with ***" in text


def test_journald_is_detected_from_the_stream_identity(tmp_path: Path) -> None:
    with open(tmp_path / "stream", "w") as stream, open(tmp_path / "other", "w") as other:
        status = os.fstat(stream.fileno())
        environ = {"JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino}"}
        assert logs.stream_is_journal(stream, environ)
        # stderr redirected elsewhere by a wrapper: no longer the journal.
        assert not logs.stream_is_journal(other, environ)
        assert not logs.stream_is_journal(stream, {})
        assert not logs.stream_is_journal(stream, {"JOURNAL_STREAM": "garbage"})
    assert not logs.stream_is_journal(io.StringIO(), environ)


@pytest.mark.usefixtures("restore_root_logger")
def test_configure_logging_detects_the_journal(tmp_path: Path) -> None:
    with open(tmp_path / "stream", "w") as stream:
        status = os.fstat(stream.fileno())
        environ = {"JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino}"}
        logs.configure_logging(1, stream=stream, environ=environ)
        logging.getLogger("livetable.test").info("detected")
        logs.configure_logging(1, stream=stream, environ={})
        logging.getLogger("livetable.test").info("not detected")
    first, second = (tmp_path / "stream").read_text().splitlines()
    assert first == "<6>livetable.test: detected"
    assert second.endswith(" INFO livetable.test: not detected")
