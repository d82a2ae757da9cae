"""A game's PAR sheet as one printable HTML page (`livetable rtp --exact --par-sheet FILE`).

Self-contained: its style is inline, it loads nothing, and it prints one bet per block on
A4 or Letter. Every figure comes from :class:`~controller.games.par_sheets.GamePar`; this
module only lays it out.
"""

from __future__ import annotations

from fractions import Fraction
from html import escape
from typing import Final

from controller.games.par import BetPar, Number
from controller.games.par_sheets import CONVENTION, GamePar

_STYLE: Final = """
body { font-family: "DejaVu Sans", Arial, sans-serif; font-size: 10pt; margin: 1.5cm; }
h1 { font-size: 16pt; margin-bottom: 0.2em; }
h2 { font-size: 12pt; margin-top: 1.4em; }
table { border-collapse: collapse; margin: 0.4em 0 0.8em; }
th, td { border: 1px solid #888; padding: 0.15em 0.5em; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
section { break-inside: avoid; }
p.small { font-size: 8.5pt; color: #333; }
"""


def _percent(value: Number, places: int = 4) -> str:
    return f"{float(value) * 100:.{places}f} %"


def _fraction(value: Number) -> str:
    if isinstance(value, Fraction) and value.denominator != 1:
        return f"{value.numerator}/{value.denominator}"
    return ""


def _bet_html(par: BetPar) -> str:
    rows = "\n".join(
        "<tr>"
        f"<td>{escape(line.label)}</td>"
        f'<td class="n">{float(line.net):+g}</td>'
        f'<td class="n">{float(line.probability):.10f}</td>'
        f'<td class="n">{escape(_fraction(line.probability))}</td>'
        f'<td class="n">{float(line.contribution):+.10f}</td>'
        "</tr>"
        for line in par.lines
    )
    exact = _fraction(par.rtp)
    exact_note = f" ({escape(exact)})" if exact else ""
    return f"""<section>
<h2>{escape(par.bet)}</h2>
<table>
<thead><tr><th scope="col">pay line</th><th scope="col">net per unit</th>
<th scope="col">probability</th><th scope="col">exact</th>
<th scope="col">contribution</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
<table>
<tbody>
<tr><th scope="row">RTP</th><td class="n">{_percent(par.rtp)}{exact_note}</td></tr>
<tr><th scope="row">house edge</th><td class="n">{_percent(1 - par.rtp)}</td></tr>
<tr><th scope="row">hit frequency</th><td class="n">{_percent(par.hit_frequency)}</td></tr>
<tr><th scope="row">standard deviation per unit</th>
<td class="n">{par.standard_deviation:.4f}</td></tr>
</tbody>
</table>
<p class="small">How computed: {escape(par.method)}.</p>
</section>"""


def par_sheet_html(sheet: GamePar, version: str) -> str:
    """The whole page for ``sheet``; ``version`` names the software that computed it."""
    title = sheet.game + (f" ({sheet.variant})" if sheet.variant else "")
    rules = "\n".join(f"<li>{escape(rule)}</li>" for rule in sheet.rules)
    summary = "\n".join(
        f"<tr><td>{escape(bet)}</td><td class='n'>{_percent(par.rtp)}</td>"
        f"<td class='n'>{_percent(par.hit_frequency)}</td>"
        f"<td class='n'>{par.standard_deviation:.4f}</td></tr>"
        for bet, par in sheet.bets.items()
    )
    timings = ", ".join(f"{escape(name)} {value:.2f} s" for name, value in sheet.seconds.items())
    bets = "\n".join(_bet_html(par) for par in sheet.bets.values())
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>PAR sheet: {escape(title)}</title>
<style>{_STYLE}</style>
</head>
<body>
<main>
<h1>PAR sheet: {escape(title)}</h1>
<p>Convention: {escape(CONVENTION)}. Computed by livetable {escape(version)}.</p>
<h2>Rules in force</h2>
<ul>
{rules}
</ul>
<h2>Summary</h2>
<table>
<thead><tr><th scope="col">bet</th><th scope="col">RTP</th><th scope="col">hit frequency</th>
<th scope="col">standard deviation</th></tr></thead>
<tbody>
{summary}
</tbody>
</table>
{bets}
<p class="small">Computation time: {timings}.</p>
</main>
</body>
</html>
"""
