"""The HTML report's "Calibration by group" and "Calibration over time" sections (issue 19).

Given group columns, each model gets the per-group table with bootstrap
intervals, its worst group and gap, the homogeneity test's p-value and the
groups' reliability diagrams as small multiples; given a window, the
per-window ECE (the view's notion), accuracy and mean confidence with
intervals against the reference period, windows above the reference's upper
bound highlighted, and the time chart as a static figure. Every number comes
from :mod:`calibration_core.slices` (the same calls as ``evaluate
--group-by/--window``); a problem of one model (an unknown column, values
that are not times, too many groups) becomes a message in its section, and
the report is always written.

The page's report gets the "Calibration by group" of its "Per group" section
instead (:func:`page_group_section`): the numbers the page shows, with the
intervals and the global vs per-group maps its background jobs stored, point
estimates alone when they have not finished.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from calibration_core import CalibrationInputError, Predictions
from calibration_core.binning import Binning
from calibration_core.slices import MIN_GROUP_ROWS

from ..diagnostics.target import notion_spec
from ..figures.groups import MAX_DIAGRAMS, drift_figure, slice_diagrams
from ..groups.columns import GroupView, group_table, maps_line, maps_table, summary
from ..groups.tables import drift_table, slice_table
from ..settings import ViewSettings
from ..store.records import ModelInfo
from .diagnostics import figure_html, table_html


@dataclass(frozen=True)
class SliceSettings:
    """What the slice sections are computed with (``report --group-by ... --window ...``).

    Attributes
    ----------
    group_by : tuple of str
        Group columns (empty: no "by group" section).
    min_group_rows : int
        Groups with fewer rows are shown, not judged.
    time_column : str or None
        The time column (None: ``timestamp``, ``time`` or ``date`` when present).
    window : str or None
        ``1d``, ``1w``, ``1m`` or ``5000rows`` (None: no "over time" section).
    reference : str
        The reference period (:func:`calibration_core.slices.parse_reference`:
        ``"K"``, the first K windows; ``"A:B"``; ``"START:END"`` in dates).
    n_resamples, level, seed
        The bootstrap of the intervals.
    """

    group_by: tuple[str, ...] = ()
    min_group_rows: int = MIN_GROUP_ROWS
    time_column: str | None = None
    window: str | None = None
    reference: str = "1"
    n_resamples: int = 200
    level: float = 0.95
    seed: int = 0

    @property
    def active(self) -> bool:
        """Whether the report has a slice section at all."""
        return bool(self.group_by) or bool(self.window)


def _note(text: str) -> str:
    return f'<p class="diag-empty">{html.escape(text)}</p>'


def _heading(title: str, name: str) -> str:
    return f'<h2 class="diag-model">{html.escape(title)} · {html.escape(name)}</h2>'


def _notion(info: ModelInfo, view: ViewSettings) -> tuple[str, int | None, str]:
    """``(notion, class index, label)`` of the view for one model; per class only, not all."""
    spec = notion_spec(info, view)
    if spec.kind == "classwise":
        raise CalibrationInputError(
            "slices use one score per row: pick the confidence, binary or one-class notion "
            "(not every class at once)."
        )
    return spec.kind, spec.class_index, spec.label


def group_section(pred: Predictions, info: ModelInfo, view: ViewSettings, s: SliceSettings) -> str:
    """ "Calibration by group" of one model (an HTML fragment)."""
    from calibration_core.slices import group_index, slice_report

    notion, k, label = _notion(info, view)
    groups = group_index(pred, s.group_by, min_rows=s.min_group_rows)
    report = slice_report(
        pred, groups, binning=Binning(view.scheme, view.n_bins), notion=notion, class_index=k,
        n_resamples=s.n_resamples, level=s.level, seed=s.seed,
    )  # fmt: skip
    panels = [(name, report.statistics[g]) for g, name in enumerate(groups.labels)]
    parts = [
        _note(
            f"Groups of {', '.join(groups.columns)} · ECE and MCE of the {label} notion · "
            f"{view.describe_binning()} · uncalibrated predictions"
        ),
        table_html(slice_table(report, s.n_resamples)),
    ]
    if groups.n_groups > MAX_DIAGRAMS:
        parts.append(_note(f"Diagrams of the first {MAX_DIAGRAMS} of {groups.n_groups} groups."))
    fig = slice_diagrams(
        info, panels, view,
        title=f"{info.name}: reliability per group", subtitle=f"{view.describe_binning()}, "
        f"{view.describe_band()} band; shared axes",
    )  # fmt: skip
    parts.append(figure_html(fig, static=True))
    return "".join(parts)


def time_section(pred: Predictions, info: ModelInfo, view: ViewSettings, s: SliceSettings) -> str:
    """ "Calibration over time" of one model (an HTML fragment)."""
    from calibration_core.slices import drift_report, time_windows

    notion, k, label = _notion(info, view)
    column, windows = time_windows(pred, s.window, s.time_column)
    report = drift_report(
        pred, windows, reference=s.reference, binning=Binning(view.scheme, view.n_bins),
        notion=notion, class_index=k, n_resamples=max(s.n_resamples, 1), level=s.level,
        seed=s.seed,
    )  # fmt: skip
    source = f"time column {column!r}" if column else "row order"
    what = f"Windows of {s.window} ({source}) · ECE of the {label} notion · " + (
        f"{view.describe_binning()} · reference: {report.period.describe()}"
    )
    doc = report.to_dict()
    fig = drift_figure(doc, title=f"{info.name}: calibration over time", subtitle=what)
    table = table_html(drift_table(doc, max(s.n_resamples, 1)))
    return _note(what) + figure_html(fig, static=True) + table


def slices_html(
    models: list[tuple[Predictions, ModelInfo]], view: ViewSettings, settings: SliceSettings
) -> tuple[str, list[str]]:
    """Both sections for every model, and the problems met (also written in the sections).

    Parameters
    ----------
    models : list of (Predictions, ModelInfo)
        The uncalibrated predictions with their other columns (``Predictions.extra``).
    view : ViewSettings
        Notion and binning.
    settings : SliceSettings

    Returns
    -------
    (str, list of str)
        Trusted HTML (every text escaped here), and one warning per problem.
    """
    parts, warnings = [], []
    sections = []
    if settings.group_by:
        sections.append(("Calibration by group", group_section))
    if settings.window:
        sections.append(("Calibration over time", time_section))
    for title, section in sections:
        for pred, info in models:
            parts.append(_heading(title, info.name))
            try:
                parts.append(section(pred, info, view, settings))
            except CalibrationInputError as exc:
                parts.append(_note(str(exc)))
                warnings.append(f"{title.lower()} of {info.name}: {exc}")
    return (
        '<div class="diagnostics slices">' + "".join(parts) + "</div>" if parts else ""
    ), warnings


def page_group_section(
    gv: GroupView | None, figure: dict | None, problem: str | None = None
) -> str:
    """ "Calibration by group" of the page's "Per group" section (an HTML fragment).

    Parameters
    ----------
    gv : GroupView or None
        The section's numbers, with whatever the background jobs stored.
    figure : dict or None
        The section's diagrams, as the page draws them.
    problem : str or None
        Why the section cannot be drawn (then ``gv`` is None): written instead.
    """
    if gv is None:
        return "" if problem is None else (
            '<div class="diagnostics slices">' + _heading("Calibration by group", "page")
            + _note(problem) + "</div>"
        )  # fmt: skip
    parts = [_heading("Calibration by group", gv.info.name)]
    parts += [_note(line) for line in summary(gv)]
    parts.append(table_html(group_table(gv)))
    if figure is not None:
        parts.append(figure_html(figure, static=True))
    table = maps_table(gv)
    if table is None:
        pending = ("The global and per-group maps were still being compared when this report "
                   "was made: download it again once the page shows them.")  # fmt: skip
        parts.append(_note(pending))
    else:
        parts += [_note(maps_line(gv)), table_html(table)]
    return '<div class="diagnostics slices">' + "".join(parts) + "</div>"
