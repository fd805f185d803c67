"""Diagnostics cards of a server-side dataset: the uploads' cards, on all rows or on the sample.

A dataset's rows are never in memory: a card is offered on **all rows** only
where the cached statistics give its numbers exactly, else on **the sample**
the maps' job drew (its held-out predictions, every calibrator), through the
uploads' own code (:mod:`app.diagnostics`), each card saying which
(:func:`sample_source`). No new statistic is made up for datasets.

=====================================  ==============================================
Card (uploads' Diagnostics section)    For a dataset
=====================================  ==============================================
ECE against the number of bins         the sample: the equal-width half is exact from
                                       the cells (the metrics row, any M in 1..100),
                                       the equal-frequency half needs four passes per
                                       bin count
Plug-in, adaptive, debiased errors     all rows once the equal-frequency bins of the
                                       view's count are computed (bin statistics only:
                                       :func:`whole_estimators`); else the sample
Hosmer-Lemeshow                        the sample: its groups are equal-frequency groups
                                       of 1 - P(first class), no cached column for
                                       K > 2, and its p-value redraws every row's label
                                       (a bootstrap of seconds per calibrator at 1e5
                                       rows: run once by the maps' job,
                                       :func:`sample_hosmer_lemeshow`)
Resampling test, bootstrap intervals   not offered: they resample rows (a background
                                       job each on the uploads' page)
Beyond bins                            the maps' measures table (the sample); KS and
                                       Kuiper of all rows, bracketed, on the cumulative
                                       diagram
Decision view                          not offered: its costs at a threshold inside a
                                       cell are not in the cells
Human-uncertainty                      not offered: a dataset has no soft labels
Over time                              the dataset's time sections
=====================================  ==============================================
"""

from __future__ import annotations

from dataclasses import dataclass

from .dataset_view import SampleHeldOut, model_info, model_settings, sample_variants
from .diagnostics.cards import HosmerLemeshowRow, hosmer_lemeshow_row
from .diagnostics.overview import (
    EstimatorRow,
    estimator_rows,
    estimators_from_statistics,
    sensitivity_curves,
)
from .diagnostics.tables import TextTable, estimator_table, hosmer_lemeshow_table
from .diagnostics.target import HL_DEFAULT_GROUPS, DiagTarget, NotionSpec, notion_spec
from .settings import SCHEME_LABELS, ViewSettings
from .store.data_store import DataStore

#: The Hosmer-Lemeshow card of a fit kept before the maps' job computed it.
HL_MISSING = "not computed for this fit: press Fit maps on a sample again"
#: Where the all-rows estimators come from, under their table.
WHOLE_ESTIMATORS_NOTE = (
    "All rows: from the dataset's cached statistics and its equal-frequency bins of this "
    "count (exact, no row read again)."
)
#: Why a dataset's estimators are on the sample, when its equal-frequency bins are missing.
SAMPLE_ESTIMATORS_NOTE = (
    "On the sample: the adaptive and L2 estimators need equal-mass bins. Pick equal-frequency "
    "bins of this count and press Compute for the all-rows values (four passes over the data)."
)


@dataclass
class DatasetCard:
    """One diagnostics card of a dataset model: a table or a figure, and its rows' source."""

    title: str
    model: str
    source: str
    table: TextTable | None = None
    figure: dict | None = None


def sample_source(found: dict) -> str:
    """``"the sample (100,000 rows, seed 0)"`` of one model of the maps' entry."""
    return f"the sample ({found['info'].rows:,} rows, seed {found['info'].seed})"


def column_statistics(summary, spec: NotionSpec, n_bins: int, scheme: str) -> list:
    """The view's columns (:meth:`NotionSpec.columns`) of an engine's summary
    (:class:`~calibration_core.engines.CalibrationSummary`), binned so."""
    if spec.kind == "confidence":
        return [summary.statistics("confidence", n_bins, scheme)]
    classwise = summary.statistics("classwise", n_bins, scheme)
    if spec.kind == "binary":
        return [classwise[1]]
    return [classwise[k] for _, k in spec.columns(summary.n_classes)]


def whole_estimators(summary, view: ViewSettings, frequency: dict) -> EstimatorRow:
    """The estimators card's row of a dataset model on all rows (exact).

    ``frequency``: this model's equal-frequency statistics at ``view.n_bins``
    (:func:`~calibration_core.distributed.frequency_statistics`, as
    :meth:`app.datasets.Datasets.cached_frequency` keeps them); the plug-in ECE
    uses the view's scheme (equal-width from the cells).
    """
    summary = summary.with_frequency(view.n_bins, frequency)
    spec = notion_spec(model_info("", summary), view)
    plugin = column_statistics(summary, spec, view.n_bins, view.scheme)
    mass = column_statistics(summary, spec, view.n_bins, "frequency")
    classwise = summary.statistics("classwise", view.n_bins, "frequency")
    per_class = [classwise[j] for j in range(summary.n_classes)]
    row = estimators_from_statistics(plugin, mass, per_class)
    row.calibrator = "uncalibrated"
    return row


def whole_cards(summaries: dict, view: ViewSettings, frequency: dict | None) -> list[DatasetCard]:
    """The cards of every model on all rows (the estimators, with equal-frequency bins)."""
    if frequency is None:
        return []
    cards = []
    for name, summary in summaries.items():
        shown, _ = model_settings(summary, view)
        table = estimator_table(
            [whole_estimators(summary, shown, frequency[name])], SCHEME_LABELS[shown.scheme]
        )
        table.notes.insert(0, WHOLE_ESTIMATORS_NOTE)
        title = "Plug-in, adaptive and debiased calibration errors"
        cards.append(DatasetCard(title, name, "all rows", table=table))
    return cards


def sample_hosmer_lemeshow(comparison, groups: int = HL_DEFAULT_GROUPS) -> list:
    """The uploads' Hosmer-Lemeshow row of every calibrator of a sample's comparison.

    Run once by the maps' job (:meth:`app.datasets.Datasets.compare_models`)
    and kept with its entry: the bootstrap p-value takes about 11 s per
    calibrator at 1e5 rows x 10 classes here, too long for a page redraw.
    """
    rows = []
    for label, pred in comparison.calibrated.items():
        row = hosmer_lemeshow_row(pred, groups)
        row.calibrator = label
        rows.append(row)
    return rows


def sample_target(
    dataset: str, entry: dict, summary, view: ViewSettings, store: DataStore
) -> DiagTarget:
    """A :class:`DiagTarget` of one model's calibrators on its sample (for the uploads' cards)."""
    found = entry["models"][summary.name]
    held = SampleHeldOut(f"{entry['heldout']} on a sample of {found['info'].rows:,} rows")
    return DiagTarget(
        model_info(dataset, summary),
        view,
        held,
        tuple(entry["maps"]),
        sample_variants(entry, summary.name, store),
    )


def sample_cards(
    dataset: str,
    entry: dict,
    summaries: dict,
    view: ViewSettings,
    store: DataStore,
    whole: bool = False,
) -> list[DatasetCard]:
    """The uploads' cards of every model's calibrators on its sample.

    ``whole``: the estimators are shown on all rows (:func:`whole_cards`), so
    not here.
    """
    from .figures.diagnostics import sensitivity_figure

    cards = []
    for model, found in entry["models"].items():
        shown, _ = model_settings(summaries[model], view)
        target = sample_target(dataset, entry, summaries[model], shown, store)
        source, spec = sample_source(found), notion_spec(target.info, shown)
        figure = sensitivity_figure(
            sensitivity_curves(store, target), shown.n_bins, spec.label, model
        )
        cards.append(DatasetCard("ECE against the number of bins", model, source, figure=figure))
        if not whole:
            table = estimator_table(estimator_rows(store, target), SCHEME_LABELS[shown.scheme])
            table.notes.insert(0, SAMPLE_ESTIMATORS_NOTE)
            title = "Plug-in, adaptive and debiased calibration errors"
            cards.append(DatasetCard(title, model, source, table=table))
        rows = found.get("hosmer_lemeshow") or [
            HosmerLemeshowRow(v.calibrator, message=HL_MISSING) for v in target.variants
        ]
        table = hosmer_lemeshow_table(rows, target.info.n_classes, HL_DEFAULT_GROUPS)
        cards.append(DatasetCard("Hosmer-Lemeshow goodness of fit", model, source, table=table))
    return cards
