"""The page's JSON API under ``/api`` (not an API for other programs: use the MQTT API):
the session, the tiles, a supervisor's actions, a round's history, the audit and its
CSV, the faces still possible."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import re
import time
import urllib.parse
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from aiohttp import web

from controller.client.api_client import BrokerRefused
from controller.console.common import (
    AUDIT_MAX_ENTRIES,
    AUDIT_PAGE,
    REQUEST_TIMEOUT_S,
    error,
    read_body,
)
from controller.console.fleet import (
    STATUS_ORDER,
    possible_faces,
    round_events,
)
from controller.console.pictures import PictureCache, live_picture, page_view, round_pictures
from controller.console.sessions import (
    Session,
)
from controller.kernel.api_commands import COMMANDS
from controller.kernel.cli_support import defuse_formula
from controller.kernel.presentation import PRESENTATIONS


class AccountFeed(Protocol):
    """What the API's routes use of an account's feed (``server.AccountFeed``), said here so
    that this part of the server does not import the whole of it back."""

    client: Any

    @property
    def link(self) -> dict[str, Any]: ...

    def tiles(self) -> list[dict[str, Any]]: ...

logger = logging.getLogger(__name__)

# The commands the console's pages offer (a supervisor's buttons and the pause queue's
# resolutions; the dealer's screen's sign-in and out). Each takes the fields the API's list
# gives it (the table checks their values; a field not listed there never reaches it); the
# pages read them from GET /api/commands.
OFFERED: Final = (
    "open_round",
    "pause",
    "resume",
    "enter_card",
    "cancel",
    "end_shoe",
    "new_shoe",
    "dealer_sign_in",
    "dealer_sign_out",
)
ACTIONS: Final[dict[str, frozenset[str]]] = {name: COMMANDS[name].field_names for name in OFFERED}
COMMANDS_SHOWN: Final = {name: COMMANDS[name].as_json() for name in OFFERED}
# The only actions of a dealer station's screen (a supervisor may send them too).
DEALER_ACTIONS: Final = frozenset({"dealer_sign_in", "dealer_sign_out"})
# Every game's presentation, as the page reads it (GET /api/games): game id -> how it is shown.
GAMES_SHOWN: Final = {game: shown.as_json() for game, shown in PRESENTATIONS.items()}
AUDIT_COLUMNS: Final = (
    "journal_seq",
    "at",
    "time_utc",
    "account",
    "role",
    "command",
    "transaction",
    "args",
    "ok",
    "code",
    "message",
)


def spreadsheet_safe(value: Any) -> str:
    """A CSV cell that a spreadsheet shows as text, never runs: ``'`` before a formula."""
    text = "" if value is None else value if isinstance(value, str) else json.dumps(value)
    return defuse_formula(text)


def audit_csv(entries: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(AUDIT_COLUMNS)
    for entry in entries:
        at = entry.get("at")
        when = (
            datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
            if isinstance(at, int | float)
            else ""
        )
        row = {**entry, "time_utc": when}
        writer.writerow([spreadsheet_safe(row.get(column)) for column in AUDIT_COLUMNS])
    return out.getvalue()


def attachment_header(filename: str) -> str:
    """``Content-Disposition`` of a download named ``filename`` (which holds a table id:
    any MQTT topic level, quotes and line breaks included): a plain ASCII name, and the
    exact one percent-encoded (RFC 6266), so nothing in it ends the quoted name or the
    header."""
    plain = re.sub(r"[^A-Za-z0-9._-]", "_", filename)
    exact = urllib.parse.quote(filename, safe="")
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{exact}"


class ApiRoutes:
    """The API's routes, part of :class:`~controller.console.server.Console`."""

    def _api_session(self, request: web.Request) -> tuple[Session, AccountFeed] | web.Response:
        session = self.session_of(request)
        feed = None if session is None else self.feed_of(session)
        if session is None or feed is None:
            return error(401, "unauthorized", "sign in first")
        return session, feed

    async def api_session(self, request: web.Request) -> web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        session, feed = found
        return web.json_response(
            {
                "account": session.account,
                "role": session.role,
                "csrf": session.csrf,
                # The person's session ended (idle): this page watches, read-only.
                "wall": session.wall,
                "idle_timeout_s": self.config.idle_timeout_s,
                # A one-key action waits this long on the page, to be undone, before it
                # is sent.
                "undo_s": self.config.undo_s,
                # A pause's age on the wall: amber, then red ([console]).
                "pause_amber_s": self.config.pause_amber_s,
                "pause_red_s": self.config.pause_red_s,
                # The pages' language for every browser, or null: the browser's own.
                "language": self.config.language,
                "link": feed.link,
            }
        )

    async def api_tables(self, request: web.Request) -> web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        _session, feed = found
        tiles = await self.blocking(feed.tiles)
        return web.json_response(
            {
                "tables": tiles,
                "link": feed.link,
                "now": time.time(),
                # The wall's order of statuses: the page sorts its tiles by it (one list).
                "order": list(STATUS_ORDER),
            }
        )

    async def api_request(self, request: web.Request) -> web.Response:
        session, refusal = self._checked_post(request)
        if refusal is not None:
            return refusal
        assert session is not None
        feed = self.feed_of(session)
        if feed is None or feed.client is None:
            return error(401, "unauthorized", "sign in first")
        if session.wall:
            return error(403, "signed_out", "the session ended: sign in again to act")
        if session.role not in ("supervisor", "dealer"):
            return error(403, "forbidden", "viewers have no actions")
        table = request.match_info["table"]
        try:
            body = await read_body(request.json())
        except (ValueError, UnicodeDecodeError):
            return error(400, "malformed", "the request's body is not JSON")
        if not isinstance(body, dict):
            return error(400, "malformed", 'the body must be {"command": ..., "args": {...}}')
        command = body.get("command")
        args = body.get("args") or {}
        if command not in ACTIONS:
            return error(400, "malformed", f"no such action: {str(command)[:40]!r}")
        if session.role == "dealer" and command not in DEALER_ACTIONS:
            return error(403, "forbidden", "a dealer's screen only signs a dealer in and out")
        if not isinstance(args, dict) or set(args) - ACTIONS[command]:
            fields = ", ".join(sorted(ACTIONS[command])) or "none"
            return error(400, "malformed", f"{command} takes the fields: {fields}")
        table_feed = feed.client.feed(table)
        if table_feed is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        if table_feed.availability != "online":
            # Sent now, it would wait at the broker and be executed whenever the table
            # comes back, against whatever state it is in then.
            return web.json_response(
                {
                    "ok": False,
                    "code": "offline",
                    "message": f"table {table} is offline: nothing sent",
                }
            )
        logger.info("%s: %s on table %s", session.account, command, table)
        try:
            answer = await self.blocking(
                lambda: feed.client.request(table, command, timeout=REQUEST_TIMEOUT_S, **args)
            )
        except BrokerRefused as refused:
            return web.json_response(
                {"ok": False, "code": "broker_refused", "message": f"the broker refused: {refused}"}
            )
        except TimeoutError:
            return web.json_response(
                {
                    "ok": False,
                    "code": "timeout",
                    "message": f"table {table} did not answer within {REQUEST_TIMEOUT_S:g} s",
                }
            )
        return web.json_response(_answer(answer))

    async def _round(
        self, session: Session, table: str, round_id: int
    ) -> list[dict[str, Any]] | web.Response:
        feed = self.feed_of(session)
        if feed is None or feed.client is None:
            return error(401, "unauthorized", "sign in first")
        table_feed = feed.client.feed(table)
        if table_feed is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        events = round_events(table_feed.events, round_id)
        if not events and _older_than_feed(table_feed, round_id):
            # Older than the feed keeps: the table's own record, read from its start up to
            # that round only (a round that never was costs the table nothing).
            client = feed.client
            try:
                events = await self.blocking(
                    lambda: _round_from_table(client, table, round_id, table_feed)
                )
            except TimeoutError:
                return error(504, "timeout", f"table {table} did not answer")
            except (RuntimeError, BrokerRefused) as failure:
                return error(502, "refused", str(failure))
        if not events:
            return error(404, "unknown_round", f"no round {round_id} in table {table}'s events")
        return events

    async def api_round(self, request: web.Request) -> web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        session, feed = found
        table = request.match_info["table"]
        round_text = request.match_info["round_id"]
        if not round_text.isdigit():
            return error(400, "malformed", "a round id is a whole number")
        events = await self._round(session, table, int(round_text))
        if isinstance(events, web.Response):
            return events
        # The table's game (a journal's is fixed): the page shows the result as it says.
        table_feed = feed.client.feed(table)
        game = ((table_feed.state if table_feed else None) or {}).get("game")
        return web.json_response(
            {"table": table, "round_id": int(round_text), "game": game, "events": events}
        )

    def _picture_cache(self) -> PictureCache:
        cache = getattr(self, "_pictures", None)
        if cache is None:
            cache = self._pictures = PictureCache()
        return cache

    async def _round_pictures(
        self, request: web.Request
    ) -> tuple[Session, str, int, dict[str, Any]] | web.Response:
        """Round ``round_id``'s pictures, as the account's own ``pictures`` requests read
        them (controller/console/pictures.py); their bytes kept for the page's images."""
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        session, feed = found
        table = request.match_info["table"]
        round_text = request.match_info["round_id"]
        if not round_text.isdigit() or int(round_text) < 1:
            return error(400, "malformed", "a round id is a whole number")
        if feed.client.feed(table) is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        client, round_id = feed.client, int(round_text)
        try:
            pictures = await self.blocking(lambda: round_pictures(client, table, round_id))
        except TimeoutError:
            return error(504, "timeout", f"table {table} did not answer")
        except (RuntimeError, BrokerRefused) as failure:
            return error(502, "refused", str(failure))
        return session, table, round_id, page_view(
            table, round_id, pictures, session.account, self._picture_cache()
        )

    async def api_pictures(self, request: web.Request) -> web.Response:
        found = await self._round_pictures(request)
        return found if isinstance(found, web.Response) else web.json_response(found[3])

    async def api_picture(self, request: web.Request) -> web.Response:
        """One picture's bytes, for the page's ``<img>`` (read again from the table when the
        page's list of them is older than what the console keeps)."""
        row_text = request.match_info["row"]
        if not row_text.isdigit():
            return error(400, "malformed", "a picture's row is a whole number")
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        session = found[0]
        table, round_text = request.match_info["table"], request.match_info["round_id"]
        key = (session.account, table, int(round_text) if round_text.isdigit() else 0)
        data = self._picture_cache().get(*key, int(row_text))
        if data is None:
            again = await self._round_pictures(request)
            if isinstance(again, web.Response):
                return again
            data = self._picture_cache().get(*key, int(row_text))
        if data is None:
            return error(404, "unknown_picture", f"no picture at row {row_text} to show")
        return web.Response(
            body=data, content_type="image/jpeg", headers={"Cache-Control": "private, max-age=3600"}
        )

    async def api_live_picture(self, request: web.Request) -> web.Response:
        """Whether the camera shows the slot of the card to be entered now (the card
        picker's picture; the table answers supervisors only), and its image's address:
        the bytes wait in the console for the page's ``<img>`` (row 0 of the round)."""
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        session, feed = found
        table, round_text = request.match_info["table"], request.match_info["round_id"]
        if not round_text.isdigit() or int(round_text) < 1:
            return error(400, "malformed", "a round id is a whole number")
        if feed.client.feed(table) is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        client, round_id = feed.client, int(round_text)
        try:
            data = await self.blocking(lambda: live_picture(client, table, round_id))
        except TimeoutError:
            return error(504, "timeout", f"table {table} did not answer")
        except (RuntimeError, BrokerRefused) as failure:
            return error(502, "refused", str(failure))
        if data is None:
            return web.json_response({"picture": False, "url": None})
        self._picture_cache().keep(session.account, table, round_id, 0, data)
        digest = hashlib.sha256(data).hexdigest()[:16]
        url = f"/api/tables/{table}/rounds/{round_id}/pictures/0.jpg?v={digest}"
        return web.json_response({"picture": True, "url": url})

    async def api_games(self, request: web.Request) -> web.Response:
        """How each game is shown (``controller/kernel/presentation.py``): the page reads
        its hands and words from here, never guessing a game from its data."""
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        return web.json_response(GAMES_SHOWN)

    async def api_commands(self, request: web.Request) -> web.Response:
        """The commands the page offers, as the API's one list declares them
        (``controller/kernel/api_commands.py``): their fields, roles and help."""
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        return web.json_response(COMMANDS_SHOWN)

    async def _audit(self, request: web.Request) -> dict[str, Any] | web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        # Viewers read it too (the table lets them: it hides every card entered by hand).
        _session, feed = found
        table = request.match_info["table"]
        if feed.client.feed(table) is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        since_text = request.query.get("since", "0")
        if not since_text.isdigit():
            return error(400, "malformed", "since is a whole number")

        def pages() -> dict[str, Any]:
            since, entries, epoch, cut = int(since_text), [], None, False
            while True:
                answer = feed.client.request(
                    table, "audit", timeout=REQUEST_TIMEOUT_S, since=since, limit=AUDIT_PAGE
                )
                if not answer.get("ok"):
                    raise RuntimeError(answer.get("message") or "the table refused the audit")
                data = answer.get("data") or {}
                epoch = data.get("epoch", epoch)
                entries.extend(data.get("entries") or [])
                last = data.get("last")
                if not data.get("more") or not data.get("entries") or last is None:
                    break
                if len(entries) >= AUDIT_MAX_ENTRIES:
                    cut = True
                    break
                since = int(last)
            return {"table": table, "epoch": epoch, "entries": entries, "cut": cut}

        try:
            return await self.blocking(pages)
        except TimeoutError:
            return error(504, "timeout", f"table {table} did not answer")
        except (RuntimeError, BrokerRefused) as failure:
            return error(502, "refused", str(failure))

    async def api_audit(self, request: web.Request) -> web.Response:
        audit = await self._audit(request)
        return audit if isinstance(audit, web.Response) else web.json_response(audit)

    async def api_audit_csv(self, request: web.Request) -> web.Response:
        audit = await self._audit(request)
        if isinstance(audit, web.Response):
            return audit
        return web.Response(
            text=audit_csv(audit["entries"]),
            content_type="text/csv",
            headers={"Content-Disposition": attachment_header(f"{audit['table']}-audit.csv")},
        )

    async def api_faces(self, request: web.Request) -> web.Response:
        found = self._api_session(request)
        if isinstance(found, web.Response):
            return found
        _session, feed = found
        table = request.match_info["table"]
        table_feed = feed.client.feed(table)
        if table_feed is None:
            return error(404, "unknown_table", f"no table {table[:40]!r}")
        return web.json_response(
            possible_faces(table_feed.events, table_feed.complete_since, table_feed.state)
        )


def _older_than_feed(feed: Any, round_id: int) -> bool:
    """Whether round ``round_id``, not found in ``feed``, may be in the table's journal
    before the feed's events: not if the feed holds the journal from its start, nor if no
    round that high was ever opened (round ids count up)."""
    if feed.ready and feed.complete_since == 0:
        return False
    known = [
        event["data"]["round_id"]
        for event in feed.events
        if isinstance((event.get("data") or {}).get("round_id"), int)
    ]
    current = ((feed.state or {}).get("round") or {}).get("id")
    if isinstance(current, int):
        known.append(current)
    return not known or round_id <= max(known)


def _round_from_table(client: Any, table: str, round_id: int, feed: Any) -> list[dict[str, Any]]:
    """Round ``round_id``'s events from the table's ``events`` answers, paged from the
    journal's start and stopped at the round's end, at a later round's opening, or where the
    feed's own events begin (which did not hold its opening; a feed still catching up
    holds nothing yet)."""
    since, span = 0, list[dict[str, Any]]()
    while True:
        answer = client.request(
            table, "events", timeout=REQUEST_TIMEOUT_S, since=since, limit=AUDIT_PAGE
        )
        if not answer.get("ok"):
            raise RuntimeError(answer.get("message") or "the table refused the events")
        data = answer.get("data") or {}
        if feed.epoch is not None and data.get("epoch") != feed.epoch:
            raise RuntimeError(f"table {table}'s journal was replaced: reload the page")
        batch = data.get("events") or []
        for event in batch:
            details = event.get("data") or {}
            opened = event["type"] == "round_opened"
            if opened and details.get("round_id") == round_id:
                span = [event]
            elif span:
                span.append(event)
                ended = event["type"] in ("round_settled", "round_voided")
                if (ended and details.get("round_id") == round_id) or len(span) > (
                    AUDIT_MAX_ENTRIES
                ):
                    return span
            elif (
                opened
                and isinstance(details.get("round_id"), int)
                and details["round_id"] > round_id
            ):
                return []  # round ids count up: that round was never opened
            if not span and feed.ready and int(event["seq"]) > feed.complete_since:
                return []  # from here on the feed has every event, and not that round
        if not data.get("more") or not batch:
            return span
        since = int(batch[-1]["seq"])


def _answer(response: dict[str, Any]) -> dict[str, Any]:
    """The page's view of a table's response: ``ok``, ``code``, ``message``, ``data``."""
    failure = response.get("error") or {}
    return {
        "ok": bool(response.get("ok")),
        "code": failure.get("code", "") if not response.get("ok") else "",
        "message": response.get("message", ""),
        "data": response.get("data"),
        "command": response.get("command"),
        "transaction": response.get("transaction"),
    }
