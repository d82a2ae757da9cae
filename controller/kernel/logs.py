"""Logging for the daemon: one line per record on stderr, journald-aware, secrets redacted.

Under systemd, stderr is a stream to journald and the service manager says so in
``$JOURNAL_STREAM`` (``<device>:<inode>`` of that stream, systemd.exec(5)). Then each line
starts with its syslog priority, ``<3>`` (error) to ``<7>`` (debug), which journald turns
into the entry's PRIORITY (``SyslogLevelPrefix=``, on by default), and carries no timestamp:
journald stamps every entry itself. ``journalctl -p warning -u livetable@t1`` then shows
only warnings and worse. Anywhere else (a terminal, a file, a container's log driver) a line
reads ``time level logger: message``.

Every record is one line: a traceback or a multi-line message has its line breaks (and other
control characters) escaped as ``\\n``, ``\\r``, ``\\x1b``, so one entry is one record and a
crafted message cannot forge a second entry.

Secrets never reach the log: :func:`redact` replaces the values of keys such as ``password``,
``mqtt_password``, ``secret``, ``token``, ``api_key`` in a mapping (nested ones included), and
the handler's :class:`RedactingFilter` does the same to every formatted line, tracebacks
included (``password=...``, ``'password': '...'``, ``"token": "..."`` and the password in
``scheme://user:password@host`` URLs).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, Final, TextIO

JOURNAL_STREAM_ENV: Final = "JOURNAL_STREAM"
REDACTED: Final = "***"

# Below DEBUG, as the shoe driver's raw-byte level (drivers/shoe/driver.py RAW).
RAW_LEVEL: Final = 5
_LEVELS: Final = (logging.WARNING, logging.INFO, logging.DEBUG, RAW_LEVEL)
# The daemon's start and ready lines (INFO): shown at every verbosity, so that a healthy
# `livetable run` without -v says what it runs and when it is ready, and nothing else.
LIFECYCLE_LOGGER: Final = "livetable.run"
# The console's line saying where it serves (INFO), shown at every verbosity likewise.
CONSOLE_LIFECYCLE_LOGGER: Final = "livetable.console"
_LIFECYCLE_LOGGERS: Final = (LIFECYCLE_LOGGER, CONSOLE_LIFECYCLE_LOGGER)
# The daemon's own lines, its broker link's and its requests' included: one name, which
# operators' log filters and alerts match, whichever module of `livetable run` says them.
DAEMON_LOGGER: Final = "controller.service.daemon"

# The last word of a key that holds a secret. "password_file" or "key_file" name a file and
# are not secret; "mqtt_password" and "api_key" are.
SENSITIVE_WORDS: Final = frozenset(
    {"password", "passwd", "passphrase", "secret", "token", "key", "credentials"}
)
_WORD_SPLIT: Final = re.compile(r"[^a-z0-9]+")

_SENSITIVE_ALTERNATION: Final = "|".join(sorted(SENSITIVE_WORDS, key=len, reverse=True))
_ASSIGNMENT: Final = re.compile(
    rf"""(?ix)
    (?P<name>\b(?:[\w-]*[_-])?(?:{_SENSITIVE_ALTERNATION}))   # ends in a sensitive word
    (?P<sep>['"]?\s*[:=]\s*)                                 # = or : (a dict or JSON key)
    (?P<value>'[^']*'|"[^"]*"|[^\s,;&)}}\]'"]+)
    """
)
_URL_PASSWORD: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/@\s]*):[^@/\s]*@")

# Every C0 control character but tab, and DEL: escaped so one record stays one line.
_ESCAPES: Final = {
    code: ("\\n" if code == 10 else "\\r" if code == 13 else f"\\x{code:02x}")
    for code in (*range(0, 9), *range(10, 32), 127)
}

# logging level -> syslog priority (sd-daemon(3)): CRITICAL is crit, ERROR err,
# WARNING warning, INFO info, DEBUG and below debug. Python has no "notice" (5).
_SYSLOG_PRIORITIES: Final = (
    (logging.CRITICAL, 2),
    (logging.ERROR, 3),
    (logging.WARNING, 4),
    (logging.INFO, 6),
)
_DEBUG_PRIORITY: Final = 7


def is_sensitive_key(key: object) -> bool:
    """Whether a key names a secret: its last word is password, secret, token, key, ..."""
    if not isinstance(key, str):
        return False
    words = [word for word in _WORD_SPLIT.split(key.lower()) if word]
    return bool(words) and words[-1] in SENSITIVE_WORDS


def redact(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``mapping`` fit for a log: secret values replaced by ``***``, nested mappings
    and lists redacted the same way. The original is not changed."""
    return {
        key: REDACTED if is_sensitive_key(key) else _redact_value(value)
        for key, value in mapping.items()
    }


def _redact_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return redact(value)
    if isinstance(value, list | tuple):
        return type(value)(_redact_value(item) for item in value)
    if isinstance(value, str):
        return redact_text(value)
    return value


def redact_text(text: str) -> str:
    """``text`` with secrets in ``key=value`` / ``"key": "value"`` form and URL passwords
    replaced by ``***``."""
    text = _ASSIGNMENT.sub(_replace_assignment, text)
    return _URL_PASSWORD.sub(rf"\1:{REDACTED}@", text)


def _replace_assignment(match: re.Match[str]) -> str:
    value = match.group("value")
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match.group('name')}{match.group('sep')}{quote}{REDACTED}{quote}"


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped."""
    return text.translate(_ESCAPES)


def syslog_priority(levelno: int) -> int:
    for threshold, priority in _SYSLOG_PRIORITIES:
        if levelno >= threshold:
            return priority
    return _DEBUG_PRIORITY


class RedactingFilter(logging.Filter):
    """Redacts a record before any handler formats it: mapping arguments through
    :func:`redact`, then the merged message through :func:`redact_text`."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, Mapping):
            record.args = redact(args)
        elif isinstance(args, tuple):
            record.args = tuple(_redact_value(arg) for arg in args)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            # A malformed %-format: leave it for logging's own error report.
            return True
        record.msg = redact_text(message)
        record.args = None
        return True


class OneLineFormatter(logging.Formatter):
    """One line per record: the message, then its traceback, control characters escaped,
    secrets redacted. With ``journald`` the line starts with ``<priority>`` and has no time;
    otherwise it starts with the time and level name."""

    def __init__(self, journald: bool) -> None:
        if journald:
            super().__init__("%(name)s: %(message)s")
        else:
            super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.journald = journald

    def format(self, record: logging.LogRecord) -> str:
        line = one_line(redact_text(super().format(record)))
        if self.journald:
            return f"<{syslog_priority(record.levelno)}>{line}"
        return line


def stream_is_journal(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``stream`` is the journald stream systemd connected (sd_journal_stream_fd(3)):
    ``$JOURNAL_STREAM`` holds the device and inode of that stream, and ``stream`` is still it
    (not redirected by a shell wrapper or a test)."""
    environ = os.environ if environ is None else environ
    value = environ.get(JOURNAL_STREAM_ENV, "")
    device, _, inode = value.partition(":")
    try:
        expected = (int(device), int(inode))
        status = os.fstat(stream.fileno())
    except (ValueError, OSError, AttributeError):
        return False
    return (status.st_dev, status.st_ino) == expected


_HANDLER_MARK: Final = "_livetable_handler"


def configure_logging(
    verbosity: int,
    journald: bool | None = None,
    *,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> logging.Handler:
    """Log to ``stream`` (stderr) one line per record, at WARNING (``verbosity`` 0), INFO
    (1), DEBUG (2) or raw shoe bytes (3 and more); the lines of :data:`LIFECYCLE_LOGGER` and
    :data:`CONSOLE_LIFECYCLE_LOGGER` at INFO whatever the verbosity.

    ``journald``: None detects it from ``$JOURNAL_STREAM``; True or False forces it. Calling
    this again replaces the handler it installed before. Returns the handler."""
    stream = sys.stderr if stream is None else stream
    if journald is None:
        journald = stream_is_journal(stream, environ)
    logging.addLevelName(RAW_LEVEL, "RAW")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(OneLineFormatter(journald))
    handler.addFilter(RedactingFilter())
    setattr(handler, _HANDLER_MARK, True)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, _HANDLER_MARK, False):
            root.removeHandler(old)
            old.close()
    root.addHandler(handler)
    level = _LEVELS[min(max(verbosity, 0), len(_LEVELS) - 1)]
    root.setLevel(level)
    for name in _LIFECYCLE_LOGGERS:
        logging.getLogger(name).setLevel(min(level, logging.INFO))
    return handler
