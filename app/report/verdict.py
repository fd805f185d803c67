"""The HTML report's "Verdict" section from :mod:`app.verdict`'s words, every text escaped."""

from __future__ import annotations

import html as html_text

from ..verdict import VERDICT_CAPTION, ModelVerdict, verdict_headline, verdict_lines


def verdict_html(verdicts: list[ModelVerdict]) -> str:
    """The report's "Verdict" section: one block per model, every text escaped."""
    if not verdicts:
        return ""
    parts = ["<h2>Verdict</h2>"]
    for item in verdicts:
        body = "".join(f"<li>{html_text.escape(line)}</li>" for line in verdict_lines(item))
        parts.append(
            f"<h3>{html_text.escape(item.model)}</h3>"
            f'<p class="verdict-headline">{html_text.escape(verdict_headline(item))}</p>'
            f'<ul class="verdict">{body}</ul>'
        )
    parts.append(f'<p class="caption">{html_text.escape(VERDICT_CAPTION)}</p>')
    return "".join(parts)
