"""The page's verdict cards (Dash components) from :mod:`app.verdict`'s words."""

from __future__ import annotations

from dash import html

from ..verdict import VERDICT_CAPTION, ModelVerdict, verdict_headline, verdict_lines


def verdict_children(verdicts: list[ModelVerdict], title: str = "Verdict") -> list:
    """The page's verdict: a heading, one card per model and the caption (no raw HTML).

    Each card is ``div.verdict-card.verdict-<state>`` with ``data-model`` set
    to the model's name (states: :attr:`ModelVerdict.state`). ``title``: the
    heading (a dataset's says it is the sample's).
    """
    if not verdicts:
        return []
    cards = [
        html.Div(
            [
                html.Div(
                    [
                        html.H3(item.model, className="verdict-model"),
                        html.Span(verdict_headline(item), className="verdict-badge"),
                    ],
                    className="verdict-head",
                ),
                html.Ul([html.Li(line) for line in verdict_lines(item)], className="verdict-lines"),
            ],
            className=f"verdict-card verdict-{item.state}",
            **{"data-model": item.model},
        )
        for item in verdicts
    ]
    return [
        html.H2(title, className="section-title"),
        html.Div(cards, className="verdict-cards"),
        html.P(VERDICT_CAPTION, className="caption"),
    ]
