"""The matrix writers of the formats table (`render/formats.py`): a compatibility matrix
(`solver.reasoning.pictures.Matrix`, computed there) as text, Markdown, CSV or an HTML page, each ✗
with its minimal reason (footnotes, a column, or a tooltip); its JSON document is the `Matrix`'s
own (`render/documents.py`).
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from solver.model import Pack, Scalar
from solver.values import show as _show

if TYPE_CHECKING:
    from solver.reasoning.conflicts import Item
    from solver.reasoning.pictures import Matrix

__all__ = ["csv_text", "html_page", "markdown", "render", "text"]

OK, NO, WARN = "✓", "✗", "⚠"


def _reason_text(pack: Pack, items: Sequence[Item]) -> str:
    parts = []
    for item in items:
        if item.kind == "pin":
            parts.append(f"{item.name}={_show(item.value)}" if item.value is not None else item.name)
        else:
            parts.append(f"{item.name} ({pack.rule(item.name).because.rstrip('.')})")
    return "; ".join(parts) or "the inputs exclude it"


def _grid(m: Matrix, mark: Callable[[Scalar, Scalar], str]) -> list[list[str]]:
    head = [f"{m.row_field} \\ {m.col_field}"] + [_show(c) for c in m.cols]
    return [head] + [[_show(r)] + [mark(r, c) for c in m.cols] for r in m.rows]


def _warning_text(pack: Pack, rules: Sequence[str]) -> str:
    return "; ".join(f"{rid} ({pack.rule(rid).because.rstrip('.')})" for rid in rules)


def _marker(m: Matrix) -> Callable[[Scalar, Scalar], str]:
    notes = m.footnotes()
    number = {reason: i for i, reason in enumerate(notes, 1)}
    warn_number = {rules: i for i, rules in enumerate(m.warnings(), len(notes) + 1)}

    def mark(row: Scalar, col: Scalar) -> str:
        if not m.ok(row, col):
            return f"{NO} [{number[m.shown_reason(row, col)]}]"
        rules = m.warned.get((row, col))
        return f"{WARN} [{warn_number[rules]}]" if rules else OK

    return mark


def _footnote_lines(m: Matrix, style: str) -> list[str]:
    texts = [_reason_text(m.pack, reason) for reason in m.footnotes()]
    texts += [f"{WARN} works, with a warning: {_warning_text(m.pack, rules)}" for rules in m.warnings()]
    return [f"{i}. {text}" if style == "markdown" else f"  [{i}] {text}" for i, text in enumerate(texts, 1)]


def csv_text(m: Matrix) -> str:
    """One row per pair: the two values, whether it resolves, and why not (or its warning)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([_cell(m.row_field), _cell(m.col_field), "resolves", "reason"])
    for row in m.rows:
        for col in m.cols:
            ok = m.ok(row, col)
            reason = "" if ok else _reason_text(m.pack, m.reasons[(row, col)])
            if ok and (row, col) in m.warned:
                reason = f"warning: {_warning_text(m.pack, m.warned[(row, col)])}"
            writer.writerow([_cell(_show(row)), _cell(_show(col)), "yes" if ok else "no", _cell(reason)])
    return out.getvalue()


def markdown(m: Matrix) -> str:
    """A Markdown table, each ✗ and ⚠ numbered with its footnote below."""
    grid = _grid(m, _marker(m))
    lines = ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in grid]
    lines.insert(1, "|" + "---|" * len(grid[0]))
    notes = _footnote_lines(m, "markdown")
    return "\n".join(lines + (["", *notes] if notes else [])) + "\n"


def text(m: Matrix) -> str:
    """Aligned columns, each ✗ and ⚠ numbered with its footnote below; on a terminal too narrow
    for every column, the table in blocks of columns that fit, each with the row names."""
    from solver.render.text import tty_width

    grid = _grid(m, _marker(m))
    widths = [max(len(row[i]) for row in grid) for i in range(len(grid[0]))]
    lines: list[str] = []
    for block in _column_blocks(widths, tty_width()):
        lines += [""] if lines else []
        lines += ["  ".join(row[i].ljust(widths[i]) for i in (0, *block)).rstrip() for row in grid]
    notes = _footnote_lines(m, "text")
    header = "why not, and warnings:" if m.warnings() else "why not:"
    return "\n".join(lines + (["", header, *notes] if notes else [])) + "\n"


def _column_blocks(widths: list[int], room: int | None) -> list[list[int]]:
    """The columns after the row names (1, 2, ...) in blocks that fit `room` columns beside them
    (None: one block, as piped output has it); a column wider than the room gets a block alone."""
    blocks: list[list[int]] = [[]]
    used = widths[0]
    for column in range(1, len(widths)):
        if room is not None and blocks[-1] and used + 2 + widths[column] > room:
            blocks.append([])
            used = widths[0]
        blocks[-1].append(column)
        used += 2 + widths[column]
    return blocks


def render(m: Matrix, fmt: str) -> str:
    """The matrix in any of its formats (`render/formats.py`, answer "matrix")."""
    from solver.render.formats import write

    return write("matrix", fmt, m)[0]


_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet will not run: one that starts like a formula (=, +, -, @, a tab
    or a carriage return) gets a leading apostrophe, unless it is a plain number (OWASP's advice
    on CSV injection)."""
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def html_page(m: Matrix) -> str:
    """A page with the table, each ✗ and ⚠ with its reason on hover."""
    esc = html.escape
    title = f"{m.pack.name} {m.pack.version}: {m.row_field} × {m.col_field}"
    lines = [
        "<!doctype html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        "<style>table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 8px;"
        "text-align:center}td.ok{background:#dfd}td.no{background:#fdd;cursor:help}"
        "td.warn{background:#ffd;cursor:help}</style>",
        "</head><body>",
        f"<table><caption>{esc(title)}</caption>",
        "<tr><th>"
        + esc(f"{m.row_field} \\ {m.col_field}")
        + "</th>"
        + "".join(f"<th>{esc(_show(c))}</th>" for c in m.cols)
        + "</tr>",
    ]
    for row in m.rows:
        cells = []
        for col in m.cols:
            if m.ok(row, col) and (row, col) in m.warned:
                why = esc(_warning_text(m.pack, m.warned[(row, col)]), quote=True)
                cells.append(f'<td class="warn" title="{why}">{WARN}</td>')
            elif m.ok(row, col):
                cells.append(f'<td class="ok">{OK}</td>')
            else:
                why = esc(_reason_text(m.pack, m.reasons[(row, col)]), quote=True)
                cells.append(f'<td class="no" title="{why}">{NO}</td>')
        lines.append(f"<tr><th>{esc(_show(row))}</th>{''.join(cells)}</tr>")
    lines += ["</table>", "</body></html>"]
    return "\n".join(lines) + "\n"
