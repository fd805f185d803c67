"""The view of a server-side dataset, drawn from its cached cell statistics only.

A dataset's result (:class:`app.datasets.Datasets`) holds one
:class:`~calibration_core.distributed.ModelSummary` per model: per-cell counts
and sums that answer every equal-width bin count in 1..100 exactly. From them
this module draws, for every model, the reliability diagram of the page's
notion (confidence, one class vs rest (one class or the worst ones), binary)
with its band (binomial intervals or the consistency band, both from bin
statistics) and the metric row, in milliseconds and without reading the data.
With the page's parts box ticked the row adds the Brier and log-loss parts
(:meth:`~calibration_core.distributed.ModelSummary.score_parts`; the log-loss
parts of a model with more than two classes are not mergeable, and a note says so).

Equal-frequency bins are computed on demand (their edges are order statistics
of the whole dataset: four more passes over the data, on the cluster or
streamed, per bin count; :func:`~calibration_core.distributed.frequency_statistics`, exact) and
kept per bin count. The cumulative diagram is drawn from the cells too
(:func:`app.curves.summary_curve_view`: exact at every cell edge, the curve's
range between edges shaded, KS and Kuiper bracketed). What needs the rows is
not offered for the whole dataset, and the page says so: the smooth diagram
(:data:`app.curves.SMOOTH_FROM_CELLS`) and the diagnostics cards.

Calibration maps are compared on a reproducible sample of each model
(:func:`maps_view`): the core's cross-fitted comparison, whose held-out
predictions are kept, so its diagrams (binned, smooth or cumulative, drawn
as the uploads' are), table and the verdict's ECE follow every bin count
(either scheme), notion, band and kind the page picks, without another run.
The verdict is computed once, by the maps' job.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from calibration_core import Binning, CalibrationInputError, ReliabilityCurve

from .analysis import (
    HISTOGRAM_BINS,
    UNCALIBRATED,
    ModelView,
    Panel,
    Variant,
    band_of,
    binned_panel,
    targets,
    worst_classes,
)
from .metrics_table import METRICS
from .settings import ALL_CLASSES, ALL_CLASSES_SHOWN, ViewSettings
from .store.data_store import DataStore
from .store.records import ModelInfo

if TYPE_CHECKING:
    from calibration_core.engines import CalibrationSummary

    from .verdict import ModelVerdict

#: Metric row fields of a dataset model, in the table's order, with their headers.
DATASET_METRICS = {
    "n_samples": "rows",
    "accuracy": "accuracy",
    "confidence_ece": "confidence ECE",
    "confidence_mce": "confidence MCE",
    "classwise_ece": "classwise ECE",
    "brier_score": "Brier",
    "log_loss": "log-loss",
}
#: Columns of a dataset's maps table (held-out metrics on the sample), with their headers.
SAMPLE_METRICS = {
    "accuracy": "accuracy",
    "confidence_ece": "confidence ECE",
    "classwise_ece": "classwise ECE",
    "brier_score": "Brier",
    "log_loss": "log-loss",
}
#: The Brier and log-loss parts after their score when the page's parts box is ticked
#: (the columns and headers of the models' table).
DATASET_PARTS = {
    "brier_score": ("brier_calibration", "brier_refinement"),
    "log_loss": ("log_loss_calibration", "log_loss_refinement"),
}
#: Classes drawn in the "all classes" view of a dataset model (its worst by ECE).
DATASET_CLASSES_SHOWN = ALL_CLASSES_SHOWN
FREQUENCY_NOTE = (
    "Equal-frequency bins of a dataset are not in its cached statistics: their edges are "
    "order statistics of the whole dataset, found exactly in four more passes over the data "
    "(on the cluster or streamed), for each bin count. Press Compute to compute {n_bins} "
    "equal-frequency bins, or choose equal-width bins (any count 1..100), drawn at once."
)
KIND_NOTES = {
    "smooth": "The whole dataset shows its binned reliability diagram instead; the maps' "
    "section below draws the smooth one on a sample of each model (Fit maps on a sample).",
    "cumulative": "The whole dataset's cumulative diagram comes from the cached cell "
    "statistics: exact at every cell edge (the markers), with the box of each cell where "
    "the curve can be between two edges; KS and Kuiper are the full curve's, as ranges "
    "when the cells leave them open.",
}
MAPS_NOTE = (
    "The diagrams above are the whole dataset, uncalibrated. Calibration maps are fitted on "
    "a sample (Fit maps on a sample, below), which also gives their diagrams of every kind "
    "and their verdict, on that sample. The uploads' diagnostics cards are shown where they "
    "can be, each saying on which rows: on all rows here when the cached statistics give "
    "them exactly (the calibration-error estimators, once this bin count's equal-frequency "
    "bins are computed), on the sample with the maps otherwise; the resampling test, the "
    "bootstrap intervals and the decision view resample or split rows: uploads only."
)
LOG_LOSS_PARTS_NOTE = (
    "Log-loss cal. and ref. are n/a for {models}: {why}. The Brier parts are exact for any "
    "number of classes."
)


@dataclass(frozen=True)
class WholeDataset:
    """Stands for the held-out scheme in a dataset figure's subtitle: no map is fitted."""

    def describe(self) -> str:
        """The subtitle's part that says which rows are scored."""
        return "all rows, uncalibrated (cached statistics)"


@dataclass
class DatasetView:
    """What the page draws for a dataset: one figure per model, metric rows, notes.

    ``columns``: the metric columns of the rows, with their headers; ``measures``:
    with the maps, one row per model of :func:`sample_measure_rows`; ``verdicts``:
    with the maps, :func:`app.verdict.sample_verdicts`.
    """

    figures: list[dict]
    rows: list[dict]
    notes: list[str]
    columns: dict[str, str] = field(default_factory=lambda: dict(DATASET_METRICS))
    measures: list[dict] = field(default_factory=list)
    verdicts: list[ModelVerdict] = field(default_factory=list)


def with_parts(metrics: dict[str, str], view: ViewSettings) -> dict[str, str]:
    """``metrics`` (field -> header) with the parts after their score when the box is ticked."""
    if not view.score_parts:
        return dict(metrics)
    columns = {}
    for key, header in metrics.items():
        columns[key] = header
        for part in DATASET_PARTS.get(key, ()):
            columns[part] = METRICS[part][0]
    return columns


def part_notes(summaries: dict, view: ViewSettings) -> list[str]:
    """Why a dataset model's log-loss parts are empty (K > 2), when the parts are shown."""
    from calibration_core.distributed.parts import LOG_LOSS_PARTS_K2

    wide = [s.name for s in summaries.values() if s.n_classes != 2]
    if not view.score_parts or not wide:
        return []
    return [LOG_LOSS_PARTS_NOTE.format(models=", ".join(wide), why=LOG_LOSS_PARTS_K2)]


def model_info(dataset: str, summary) -> ModelInfo:
    """The :class:`ModelInfo` of one model of a dataset (no handle of the store)."""
    return ModelInfo(
        handle=f"dataset:{dataset}:{summary.name}",
        name=summary.name,
        n_samples=summary.n_samples,
        n_classes=summary.n_classes,
        class_names=tuple(summary.class_names),
        source=f"dataset {dataset}",
        has_logits=False,
    )


def target_statistics(summary: CalibrationSummary, view: ViewSettings, k: int | None):
    """Bin statistics of one panel: the notion's column, or class ``k``.

    Any engine's summary (:class:`~calibration_core.engines.CalibrationSummary`);
    a dataset's answers equal-frequency bins once they are attached
    (:meth:`~calibration_core.distributed.ModelSummary.with_frequency`).
    """
    if k is not None:
        return summary.statistics("classwise", view.n_bins, view.scheme)[k]
    notion = "binary" if view.notion == "binary" else "confidence"
    return summary.statistics(notion, view.n_bins, view.scheme)


def panel_of(summary: CalibrationSummary, view: ViewSettings, k, label: str | None) -> Panel:
    """One uncalibrated reliability panel, with its band and its histogram."""
    stats = target_statistics(summary, view, k)
    curve = ReliabilityCurve.from_statistics(stats, Binning(view.scheme, view.n_bins))
    hist = stats
    if view.scheme != "width":  # equal-width histogram from the cells, as for uploads
        hist = target_statistics(summary, replace(view, n_bins=HISTOGRAM_BINS, scheme="width"), k)
    return Panel(UNCALIBRATED, label, curve, band_of(stats, curve, view), histogram=hist)


def model_panels(dataset: str, summary: CalibrationSummary, view: ViewSettings) -> ModelView:
    """The panels of one model (the worst classes first in "all classes")."""
    info = model_info(dataset, summary)
    rows = targets(info, view)
    shown = None
    if view.all_classes:
        classwise = summary.statistics("classwise", view.n_bins, view.scheme)
        eces = np.asarray(classwise.ece())
        keep = worst_classes(eces, DATASET_CLASSES_SHOWN)
        rows, shown = [rows[k] for k in keep], (len(keep), len(rows))
    panels = [panel_of(summary, view, k, label) for k, label in rows]
    return ModelView(info, panels, summary.n_samples, classes_shown=shown, class_rows=rows)


def whole_figure(summary, mv: ModelView, view: ViewSettings, side_by_side: bool) -> dict:
    """The whole dataset's diagram of one model: cumulative from its cells, else binned.

    The smooth kind has no version from the cells
    (:data:`app.curves.SMOOTH_FROM_CELLS`): the binned diagram is drawn, and
    its subtitle says so.
    """
    from .curves import summary_curve_view
    from .figures.diagram import curves_figure_dict
    from .figures.reliability import reliability_figure_dict

    if view.kind == "cumulative":
        cv = summary_curve_view(summary, mv.class_rows, view)
        return curves_figure_dict(mv, cv, view, WholeDataset(), side_by_side)
    binned = replace(view, kind="binned")
    return reliability_figure_dict(mv, binned, WholeDataset(), side_by_side)


def model_settings(summary, view: ViewSettings) -> tuple[ViewSettings, list[str]]:
    """The view of one model: a class it does not have becomes its worst classes, with a note.

    The page's class list follows the models picked in the model list, whose
    classes a dataset need not share.
    """
    if view.notion != "class" or view.all_classes or view.class_name in summary.class_names:
        return view, []
    note = (
        f"{summary.name} has no class named {view.class_name!r} (the class picked for the "
        f"models of the model list): showing its worst classes instead."
    )
    return replace(view, class_name=ALL_CLASSES), [note]


def summary_metrics(summary: CalibrationSummary, view: ViewSettings) -> dict:
    """Any engine's metrics at the view's bins, with the Brier and log-loss parts when
    the parts box is ticked (:meth:`~calibration_core.engines.CalibrationSummary.score_parts`;
    None where the engine does not know them): the rows of both of the page's tables."""
    metrics = summary.metrics(view.n_bins, view.scheme)
    if view.score_parts:
        metrics.update(summary.score_parts(view.n_bins, view.scheme))
    return metrics


def metric_row(summary: CalibrationSummary, view: ViewSettings) -> dict:
    """The row of a dataset model in the models' table: exact on every row."""
    return {"model": summary.name, "n_samples": summary.n_samples, **summary_metrics(summary, view)}


def dataset_view(
    dataset: str, summaries: dict, view: ViewSettings, frequency: dict | None = None
) -> DatasetView:
    """Figures, metric rows and notes of a dataset for the page's view.

    ``frequency``: the dataset's equal-frequency statistics at ``view.n_bins``
    (:func:`~calibration_core.distributed.frequency_statistics`), needed when
    the view's scheme is ``"frequency"``.

    Raises
    ------
    CalibrationInputError
        Equal-frequency bins not computed yet, or a notion the models do not
        have (binary on K != 2, an unknown class).
    """
    if view.scheme != "width" and frequency is None:
        raise CalibrationInputError(FREQUENCY_NOTE.format(n_bins=view.n_bins))
    if view.scheme == "width":
        frequency = None
    from .curves import SMOOTH_FROM_CELLS

    notes = [MAPS_NOTE]
    if view.kind != "binned":
        notes += [SMOOTH_FROM_CELLS] if view.kind == "smooth" else []
        notes.append(KIND_NOTES[view.kind])
    notes += part_notes(summaries, view)
    side_by_side = len(summaries) > 1
    figures, rows = [], []
    for summary in summaries.values():
        shown, why = model_settings(summary, view)
        notes += why
        if frequency is not None:
            summary = summary.with_frequency(view.n_bins, frequency[summary.name])
        mv = model_panels(dataset, summary, shown)
        figures.append(whole_figure(summary, mv, shown, side_by_side))
        rows.append(metric_row(summary, shown))
    return DatasetView(figures, rows, notes, with_parts(DATASET_METRICS, view))


@dataclass(frozen=True)
class SampleHeldOut:
    """The held-out scheme of a dataset's maps, for the figures' subtitle."""

    text: str

    def describe(self) -> str:
        """E.g. ``"5-fold cross-fitting on a sample of 100,000 rows"``."""
        return self.text


def sample_panels(info: ModelInfo, comparison, view: ViewSettings) -> ModelView:
    """Panels of every calibrator of one model, from the comparison's held-out rows."""
    binning = Binning(view.scheme, view.n_bins)
    hist_binning = binning if view.scheme == "width" else Binning("width", HISTOGRAM_BINS)
    rows = targets(info, view)
    uncalibrated = comparison.calibrated[UNCALIBRATED]
    shown = None
    if view.all_classes:
        eces = [uncalibrated.statistics(binning, "class", k).ece() for k, _ in rows]
        keep = worst_classes(np.asarray(eces), DATASET_CLASSES_SHOWN)
        rows, shown = [rows[k] for k in keep], (len(keep), len(rows))
    mv = ModelView(info, n_scored=uncalibrated.n_samples, classes_shown=shown, class_rows=rows)
    for label, pred in comparison.calibrated.items():
        for k, class_label in rows:
            panel, _stats = binned_panel(pred, label, k, class_label, binning, hist_binning, view)
            mv.panels.append(panel)
    return mv


def sample_rows(model: str, comparison, view: ViewSettings) -> list[dict]:
    """The comparison table of one model at the page's binning (failed maps with their error).

    The held-out predictions are read by the in-memory engine
    (:class:`~calibration_core.engines.PredictionsSummary`) as the dataset's
    rows are by the Dask engine (:func:`summary_metrics`); with the parts box
    ticked, the parts of any K (the sample's rows are in memory).
    """
    from calibration_core.engines import PredictionsSummary

    rows = []
    for row in comparison.rows():
        pred = comparison.calibrated.get(row["map"])
        metrics = {} if pred is None else summary_metrics(PredictionsSummary(pred), view)
        rows.append({"model": model, "map": row["map"], "error": row["error"], **metrics})
    return rows


def sample_measure_rows(entry: dict) -> list[dict]:
    """Per model, the binning-free measures of its sample's uncalibrated rows (top label).

    From the ``measures_summary`` the maps' job keeps
    (:meth:`app.datasets.Datasets.compare_models`); ``sample_rows`` and
    ``sample_seed`` say which rows were drawn. Models kept without measures
    (an older fit) are left out. A value that is undefined is None.
    """
    rows = []
    for model, found in entry["models"].items():
        m = found.get("measures")
        if m is None:
            continue
        info, top, skce = found["info"], m["confidence"], m["canonical"]["skce"]
        hierarchy = top["hierarchy"] or {"recalibration": {"slope": {}}, "curve": {}}
        rows.append(
            {
                "model": model,
                "sample_rows": info.rows,
                "sample_seed": info.seed,
                "smooth_ece": top["smooth_ece"]["value"],
                "ks_error": top["cumulative"]["ks_error"],
                "ks_p_value": top["cumulative"]["ks_p_value"],
                "spiegelhalter_z": top["spiegelhalter"]["z"],
                "spiegelhalter_p_value": top["spiegelhalter"]["p_value"],
                "tace": m["classwise"]["tace"],
                "skce": skce["unbiased"],
                "skce_p_value": skce["p_value"],
                "slope": hierarchy["recalibration"]["slope"].get("value"),
                "ici": hierarchy["curve"].get("ici"),
            }
        )
    return rows


def maps_view(
    dataset: str, entry: dict, summaries: dict, view: ViewSettings, store: DataStore | None = None
) -> DatasetView:
    """Figures, comparison rows and notes of the maps fitted on a dataset's samples.

    ``entry``: :meth:`app.datasets.Datasets.cached_maps`; ``summaries``: the
    dataset's (for the models' class names); ``store``: whose memo keeps the
    smooth and cumulative curves of the entry's fit (none: computed each time).

    Raises
    ------
    CalibrationInputError
        A notion the models do not have (binary on K != 2).
    """
    from .verdict import sample_verdicts

    notes: list[str] = []
    side_by_side = len(entry["models"]) > 1
    figures, rows = [], []
    for model, found in entry["models"].items():
        summary = summaries[model]
        shown, why = model_settings(summary, view)
        notes += why
        info = model_info(dataset, summary)
        held = SampleHeldOut(f"{entry['heldout']} on a sample of {found['info'].rows:,} rows")
        mv = sample_panels(info, found["comparison"], shown)
        found_variants = sample_variants(entry, model, store)
        figures.append(sample_figure(mv, found_variants, shown, held, side_by_side, store))
        rows += sample_rows(model, found["comparison"], shown)
    columns = with_parts(SAMPLE_METRICS, view)
    verdicts = sample_verdicts(entry, view)
    return DatasetView(figures, rows, notes, columns, sample_measure_rows(entry), verdicts)


def sample_variants(entry: dict, model: str, store: DataStore | None) -> list[Variant]:
    """Every calibrator's held-out predictions of ``model`` on its sample, as variants.

    Their handles name the entry's fit (``fit_id``, new for each run of the
    maps' job), so that the store's memo keeps their curves across redraws;
    without a store or a ``fit_id`` (an older fit) they have none.
    """
    fit_id = entry.get("fit_id") if store is not None else None
    calibrated = entry["models"][model]["comparison"].calibrated
    return [
        Variant(label, None if fit_id is None else f"dataset-maps:{fit_id}:{model}:{label}", pred)
        for label, pred in calibrated.items()
    ]


def sample_figure(
    mv: ModelView,
    found: list[Variant],
    view: ViewSettings,
    held: SampleHeldOut,
    side_by_side: bool,
    store: DataStore | None = None,
) -> dict:
    """The diagram of one model's maps on its sample, of the view's kind.

    Binned: :func:`~app.figures.reliability.reliability_figure_dict` of the
    panels ``mv``; smooth and cumulative: the uploads' curves
    (:func:`app.curves.variants_curve_view`) of every calibrator's held-out
    predictions ``found`` (:func:`sample_variants`), for the same panel rows
    (in "all classes" the worst few).
    """
    from .curves import variants_curve_view
    from .figures.diagram import curves_figure_dict
    from .figures.reliability import reliability_figure_dict

    if view.kind == "binned":
        return reliability_figure_dict(mv, view, held, side_by_side)
    cv = variants_curve_view(store, found, mv.class_rows, view)
    return curves_figure_dict(mv, cv, view, held, side_by_side)
