"""``livetable report --format html``: the report as one printable page with charts.

The page needs nothing but itself: the charts are drawn by Chart.js, whose script ships in
the package (``static/chart.umd.js``, the npm package chart.js, MIT; its first comment says
which version) and is written into the page, with the figures as JSON beside it. No
address is loaded, so the page opens the same from a USB stick on a machine offline, and
prints (each chart becomes an image at print time).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from controller.tools.report import Group, Record, groups, pause_reasons, table_rows

# A figure (right-aligned, as in the text report) rather than a word such as a reason.
_NUMBER: Final = re.compile(r"-|\d+(\.\d+)?")
CHART_JS: Final = Path(__file__).resolve().parent / "static" / "chart.umd.js"

_STYLE: Final = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #111; }
h1 { font-size: 1.4em; margin: 0 0 .2em; }
p.window { color: #444; margin: 0 0 1.5em; }
table { border-collapse: collapse; margin: 0 0 2em; }
th, td { border: 1px solid #bbb; padding: .2em .5em; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #eee; font-weight: 600; }
.chart { width: 100%; max-width: 60em; height: 18em; margin: 0 0 2em; break-inside: avoid; }
@media print { body { margin: 0; } .chart { max-width: 100%; } }
"""

# Draws the three charts from the figures in #report-data; Chart is Chart.js's global.
_SCRIPT: Final = """
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  Chart.defaults.animation = false;  // a printed page shows the finished chart
  function bars(id, title, chart) {
    new Chart(document.getElementById(id), {
      type: "bar",
      data: {labels: chart.labels, datasets: [{label: title, data: chart.values}]},
      options: {responsive: true, maintainAspectRatio: false,
                plugins: {title: {display: true, text: title}, legend: {display: false}}},
    });
  }
  bars("rounds-per-hour", "Rounds per hour, by " + data.by, data.rounds_per_hour);
  bars("pause-minutes-table", "Pause minutes, by table", data.pause_minutes_by_table);
  bars("pause-minutes-dealer", "Pause minutes, by dealer", data.pause_minutes_by_dealer);
  window.addEventListener("beforeprint", function () {
    for (const id in Chart.instances) Chart.instances[id].resize();
  });
})();
"""


def _chart(found: Sequence[Group], value: str) -> dict[str, list[object]]:
    labels = [item.name for item in found]
    if value == "rounds_per_hour":
        values = [round(item.rounds_per_hour or 0.0, 2) for item in found]
    else:
        values = [round(item.pause_minutes, 2) for item in found]
    return {"labels": labels, "values": values}


def _script_text(text: str) -> str:
    """``text`` safe inside a <script> element: nothing in it can close the element."""
    return text.replace("</", "<\\/")


def report_page(record: Record, found: Sequence[Group], by: str, window: str) -> str:
    """The whole page: title, the figures as tables, the three charts, Chart.js inline."""
    figures = {
        "by": by,
        "rounds_per_hour": _chart(found, "rounds_per_hour"),
        "pause_minutes_by_table": _chart(groups(record, "table"), "pause_minutes"),
        "pause_minutes_by_dealer": _chart(groups(record, "dealer"), "pause_minutes"),
    }
    header, rows = table_rows(found, by)
    reasons = pause_reasons(found)
    width = len(header) - 2 * len(reasons)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>livetable report by {html.escape(by)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>livetable report by {html.escape(by)}</h1>",
        f'<p class="window">{html.escape(window)}</p>',
        _html_table(header[:width], [row[:width] for row in rows]),
    ]
    if reasons:
        parts += [
            "<h2>Pauses by reason</h2>",
            _html_table(
                [by, "reason", "pauses", "minutes lost"],
                [
                    [
                        item.name,
                        reason,
                        str(item.pauses[reason]),
                        f"{item.pause_seconds[reason] / 60.0:.1f}",
                    ]
                    for item in found
                    for reason in reasons
                    if item.pauses[reason]
                ],
            ),
        ]
    for chart_id, label in (
        ("rounds-per-hour", f"Rounds per hour, by {by}"),
        ("pause-minutes-table", "Pause minutes, by table"),
        ("pause-minutes-dealer", "Pause minutes, by dealer"),
    ):
        parts.append(
            f'<div class="chart"><canvas id="{chart_id}" role="img" '
            f'aria-label="{html.escape(label)}"></canvas></div>'
        )
    parts += [
        '<script type="application/json" id="report-data">'
        f"{_script_text(json.dumps(figures, ensure_ascii=False))}</script>",
        f"<script>\n{_script_text(CHART_JS.read_text(encoding='utf-8'))}\n</script>",
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f'<th scope="col">{html.escape(cell)}</th>' for cell in header)
    body = "".join(
        "<tr>"
        + f'<th scope="row">{html.escape(row[0])}</th>'
        + "".join(
            f'<td class="n">{html.escape(cell)}</td>'
            if _NUMBER.fullmatch(cell)
            else f"<td>{html.escape(cell)}</td>"
            for cell in row[1:]
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
