"""The server's pure parts: the audit's CSV (no cell a spreadsheet would run) and the origin
check."""

from __future__ import annotations

import csv
import io

from aiohttp.test_utils import make_mocked_request

from controller.console.server import audit_csv, origin_ok, spreadsheet_safe


def test_a_cell_that_starts_like_a_formula_is_text() -> None:
    for dangerous in ("=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"):
        assert spreadsheet_safe(dangerous) == "'" + dangerous
    assert spreadsheet_safe("pause") == "pause"
    assert spreadsheet_safe(None) == ""
    assert spreadsheet_safe(True) == "true" and spreadsheet_safe(-1) == "'-1"
    assert spreadsheet_safe({"reason": "=x"}) == '{"reason": "=x"}'


def test_the_audit_csv_has_a_header_and_one_row_per_entry() -> None:
    entries = [
        {
            "journal_seq": 7,
            "at": 1767225700.25,
            "account": "alice",
            "role": "supervisor",
            "command": "pause",
            "transaction": "=cmd|' /C calc'!A0",
            "args": {"reason": "spill"},
            "ok": False,
            "code": "refused",
            "message": "-the table is already paused",
        }
    ]
    rows = list(csv.reader(io.StringIO(audit_csv(entries))))
    assert rows[0][:4] == ["journal_seq", "at", "time_utc", "account"]
    assert rows[1] == [
        "7",
        "1767225700.25",
        "2026-01-01T00:01:40.250+00:00",
        "alice",
        "supervisor",
        "pause",
        "'=cmd|' /C calc'!A0",
        '{"reason": "spill"}',
        "false",
        "refused",
        "'-the table is already paused",
    ]


def test_the_origin_is_the_consoles_own_or_absent() -> None:
    def request(origin: str | None, host: str = "console.studio:8080") -> bool:
        headers = {"Host": host, **({"Origin": origin} if origin is not None else {})}
        return origin_ok(make_mocked_request("POST", "/api/tables/t1/request", headers=headers))

    assert request(None)
    assert request("http://console.studio:8080")
    assert request("https://console.studio:8080"), "behind a TLS proxy"
    assert request("https://console.studio", host="console.studio")
    assert not request("http://evil.example")
    assert not request("http://console.studio:8081")
    assert not request("null")
    assert not request("http://console.studio:8080.evil.example")
