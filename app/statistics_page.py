"""The page ``/statistics``: docs/statistics.md rendered as HTML, linked from every diagnostic.

docs/statistics.md is the one source: what each test and interval promises,
with the size, power and coverage tables of ``benchmarks/stats_sim.py``. The
wheel carries it as ``app/docs/statistics.md`` (``pyproject.toml`` maps the
top-level ``docs/`` folder, like ``assets/``); a source checkout reads the
top-level file. The markdown is rendered by :func:`markdown_html`, a small
converter for the subset that file uses (headings, paragraphs, bullet lists,
pipe tables, code spans, bold, links): no extra dependency.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path

#: Where the page is served (relative links from the Dash page reach it).
STATISTICS_PATH = "/statistics"
STATISTICS_FILE = "statistics.md"
_STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;"
    "color:#222}table{border-collapse:collapse;margin:1rem 0;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f3f3f3}"
    "td:first-child,th:first-child{text-align:left}code{background:#f3f3f3;padding:0 3px}"
    ".table-wrap{overflow-x:auto}"
)


def statistics_source() -> Path:
    """docs/statistics.md: installed beside the package, or at the top of a checkout."""
    package_dir = Path(__file__).resolve().parent
    installed = package_dir / "docs" / STATISTICS_FILE
    return installed if installed.is_file() else package_dir.parent / "docs" / STATISTICS_FILE


def _inline(text: str) -> str:
    """Escape, then code spans, bold and links (bold may enclose a code span)."""
    codes: list[str] = []

    def stash(match: re.Match) -> str:
        codes.append(f"<code>{html.escape(match.group(1))}</code>")
        return f"\x00{len(codes) - 1}\x00"

    out = html.escape(re.sub(r"`([^`]*)`", stash, text), quote=False)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    out = re.sub(
        r"\[([^\]]+)\]\(([^)\s]+)\)",
        lambda m: f'<a href="{html.escape(m.group(2))}">{m.group(1)}</a>',
        out,
    )
    return re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], out)


def _slug(title: str) -> str:
    """GitHub-style anchor of a heading: lower case, spaces to hyphens, punctuation dropped."""
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).strip().replace(" ", "-")


def _table(lines: list[str]) -> str:
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    body = [r for r in rows[1:] if not all(set(c) <= set("-: ") for c in r)]
    head = "".join(f"<th>{_inline(c)}</th>" for c in rows[0])
    cells = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>"
    return f'<div class="table-wrap">{table}</div>'


def markdown_html(text: str) -> str:
    """HTML of the markdown subset docs/statistics.md uses (every text escaped)."""
    blocks: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif m := re.match(r"(#{1,4})\s+(.*)", line):
            level, title = len(m.group(1)), m.group(2).strip()
            blocks.append(f'<h{level} id="{_slug(title)}">{_inline(title)}</h{level}>')
            i += 1
        elif line.lstrip().startswith("|"):
            start = i
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                i += 1
            blocks.append(_table(lines[start:i]))
        elif re.match(r"\s*[-*]\s+", line):
            items: list[str] = []
            while i < len(lines) and lines[i].strip():
                if re.match(r"\s*[-*]\s+", lines[i]):
                    items.append(re.sub(r"^\s*[-*]\s+", "", lines[i]))
                else:
                    items[-1] += " " + lines[i].strip()
                i += 1
            blocks.append("<ul>" + "".join(f"<li>{_inline(t)}</li>" for t in items) + "</ul>")
        else:
            start, i = i, i + 1  # a paragraph holds at least its first line
            while i < len(lines) and lines[i].strip() and lines[i].lstrip()[:1] not in "#|":
                i += 1
            blocks.append(f"<p>{_inline(' '.join(s.strip() for s in lines[start:i]))}</p>")
    return "\n".join(blocks)


@lru_cache(maxsize=1)
def statistics_page() -> str:
    """The whole HTML page (read and rendered once per process)."""
    source = statistics_source()
    text = source.read_text(encoding="utf-8")
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>Calibration dashboard: what the statistics promise</title>"
        f"<style>{_STYLE}</style></head><body>{markdown_html(text)}</body></html>"
    )


def statistics_link(section: str | None = None) -> str:
    """The page's link to :data:`STATISTICS_PATH` (at ``section``), relative to the page, so
    that it keeps a path prefix the page has (a notebook's token, :mod:`app.token_check`).

    >>> statistics_link("bootstrap-intervals"), statistics_link()
    ('statistics#bootstrap-intervals', 'statistics')
    """
    relative = STATISTICS_PATH.lstrip("/")
    return f"{relative}#{section}" if section else relative


def register_statistics_route(server) -> None:
    """Serve :func:`statistics_page` at :data:`STATISTICS_PATH` (a Flask GET route)."""

    @server.get(STATISTICS_PATH)
    def statistics():
        return statistics_page(), 200, {"Content-Type": "text/html; charset=utf-8"}
