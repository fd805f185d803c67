"""The deployable map document: one map refitted on all rows, as versioned JSON.

After a cross-fitted comparison (:func:`calibration_core.compare_maps`) says
how a map does on held-out rows, :func:`deployable_map` refits that map on
*all* rows and wraps it with what a pipeline needs to use it safely: the input
kind, the class names, the rows it was fitted on, the library version and the
held-out estimate of its effect. :meth:`DeployableMap.to_dict` is the JSON
document (format :data:`DEPLOY_FORMAT`, kind :data:`DEPLOY_KIND`, fields in
``docs/deployable-map.md``); :mod:`~calibration_core.deploy.loader` reads it
back. No pickle is involved: the map's own ``to_dict``/``from_dict`` carry
its parameters and fitted state.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..binning import Scheme
from ..compare import METRIC_COLUMNS, UNCALIBRATED, Comparison, compare_maps
from ..errors import CalibrationInputError
from ..maps import make_map
from ..maps.base import CalibrationMap
from ..maps.temperature import TemperatureScaling
from ..predictions import Predictions

#: Format family of the dashboard's exports; the fold-map export is version 1.
FORMAT_FAMILY = "calibration-dashboard/export/v"
#: Version of the deployable document (version 1 is the fold-map export).
DEPLOY_VERSION = 2
DEPLOY_FORMAT = f"{FORMAT_FAMILY}{DEPLOY_VERSION}"
DEPLOY_KIND = "deployable-map"


def input_kind(predictions: Predictions) -> str:
    """``"logits"`` when the predictions carry logits (maps then read them), else ``"probs"``."""
    return "probs" if predictions.logits is None else "logits"


@dataclass
class DeployableMap:
    """A map fitted on all rows, with what is needed to apply it elsewhere.

    Attributes
    ----------
    map : CalibrationMap
        The fitted map; its ``input`` parameter is :attr:`input`.
    model : str
        Name of the model whose predictions it was fitted on.
    input : {"probs", "logits"}
        What the map reads at predict time.
    class_names : tuple of str, or None
        The K class names in column order (None for a bare fold-map entry,
        which does not record them).
    n_rows : int or None
        Rows the map was fitted on (None for a bare fold-map entry).
    held_out : dict or None
        The held-out estimate of the effect (see :func:`held_out_estimate`).
    library_version : str or None
        ``calibration_core.__version__`` of the library that fitted it.
    created : str or None
        When the document was made, ISO 8601 UTC.
    """

    map: CalibrationMap
    model: str
    input: str
    class_names: tuple[str, ...] | None
    n_rows: int | None
    held_out: dict[str, Any] | None
    library_version: str | None
    created: str | None = None

    @property
    def n_classes(self) -> int:
        """K, the number of classes (and of prediction columns)."""
        return int(self.map.n_classes_)

    def to_dict(self) -> dict[str, Any]:
        """The deployable document as a JSON-able dict (fields: ``docs/deployable-map.md``)."""
        return {
            "format": DEPLOY_FORMAT,
            "kind": DEPLOY_KIND,
            "library_version": self.library_version,
            "created": self.created,
            "model": self.model,
            "input": self.input,
            "n_classes": self.n_classes,
            "class_names": None if self.class_names is None else list(self.class_names),
            "n_rows": self.n_rows,
            "map": self.map.to_dict(),
            "held_out": self.held_out,
        }

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as JSON text (NaN refused: the document is strict JSON)."""
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def save(self, path: str | Path) -> None:
        """Write the document to ``path`` as indented JSON (UTF-8)."""
        Path(path).write_text(self.to_json(indent=2) + "\n", encoding="utf-8")


def _metrics(row: dict[str, Any]) -> dict[str, float | None]:
    return {name: row[name] for name in METRIC_COLUMNS}


def held_out_estimate(comparison: Comparison, map_label: str) -> dict[str, Any]:
    """The held-out metrics of the uncalibrated predictions and of one map.

    Parameters
    ----------
    comparison : Comparison
        A result of :func:`~calibration_core.compare_maps`.
    map_label : str
        The map's row in ``comparison.table``.

    Returns
    -------
    dict
        ``method`` ("crossfit" or "train_test"), ``folds``, ``seed``,
        ``n_scored``, ``n_bins``, ``scheme``, and ``uncalibrated`` /
        ``calibrated``: the metric columns (log-loss, ECE, Brier, ...).
    """
    rows = {row["map"]: row for row in comparison.rows()}
    if map_label not in rows or comparison.errors.get(map_label):
        why = comparison.errors.get(map_label, "it is not in the comparison")
        raise CalibrationInputError(
            f"the comparison has no held-out result for map {map_label!r} ({why}); compare "
            "that map first, or choose one of " + ", ".join(repr(n) for n in rows) + "."
        )
    s = comparison.settings
    return {
        "method": s["mode"],
        "folds": s["folds"],
        "seed": s["seed"],
        "n_scored": s["n_scored"],
        "n_bins": s["n_bins"],
        "scheme": s["scheme"],
        "uncalibrated": _metrics(rows[UNCALIBRATED]),
        "calibrated": _metrics(rows[map_label]),
    }


#: What the deployable map of the uncalibrated predictions is, in words.
IDENTITY_WORDS = (
    "the identity map (temperature scaling with T = 1), which returns the predictions unchanged"
)


def best_map(comparison: Comparison, candidates=None) -> str:
    """Deprecated: the map with the lowest held-out log-loss in ``comparison``.

    Use :func:`recommended_map`, what ``fit --select best`` and the page deploy: the
    fewest parameters among the maps not clearly worse than the best. Kept for one
    release with a :class:`DeprecationWarning`; it still returns the lowest
    log-loss among the maps (never ``"uncalibrated"``), as before.

    Parameters
    ----------
    comparison : Comparison
    candidates : iterable of str, optional
        Map labels to choose from (all maps that did not fail by default).

    Returns
    -------
    str
        The winning map's label.
    """
    warnings.warn(
        "calibration_core.deploy.best_map is deprecated and will be removed in the next "
        "release: use recommended_map (the simplest map not clearly worse than the best).",
        DeprecationWarning,
        stacklevel=2,
    )
    table = comparison.table.drop(index=UNCALIBRATED)
    if candidates is not None:
        table = table[table.index.isin(list(candidates))]
    scores = table["log_loss"].dropna()
    if scores.empty:
        raise CalibrationInputError(
            "no map has a held-out log-loss to choose from (every map failed or none was "
            f"compared): {comparison.errors or 'no maps'}. Compare other maps."
        )
    return str(scores.idxmin())


def recommended_map(comparison: Comparison) -> str:
    """The verdict's recommended map of ``comparison`` (what ``fit --select best`` deploys).

    The map with the fewest parameters among those not clearly worse than the
    lowest held-out log-loss (:func:`calibration_core.compare.choose_map`);
    ``"uncalibrated"`` when no map is clearly better than doing nothing
    (:func:`deployable_map` then wraps the identity map).

    Parameters
    ----------
    comparison : Comparison

    Returns
    -------
    str
        A map label of ``comparison``, or ``"uncalibrated"``.
    """
    return comparison.verdict().recommended


def deployable_map(
    predictions: Predictions,
    map_name: str,
    comparison: Comparison | None = None,
    *,
    folds: int = 5,
    seed: int = 0,
    n_bins: int = 15,
    scheme: Scheme = "width",
    **params,
) -> DeployableMap:
    """Refit a map on all rows and wrap it as a deployable document.

    Parameters
    ----------
    predictions : Predictions
        All rows with labels; the map is fitted on every one of them.
    map_name : str
        Registry name of the map (e.g. ``"temperature"``), or ``"uncalibrated"``
        for :data:`IDENTITY_WORDS` (the predictions unchanged; nothing is fitted).
    comparison : Comparison, optional
        A comparison of ``predictions`` that includes ``map_name``; its
        held-out row is the estimate of the effect. When omitted, a
        comparison of this map alone is run with ``folds``, ``seed``,
        ``n_bins`` and ``scheme``.
    **params
        Parameters of the map (e.g. ``n_bins=10`` of ``histogram``); ``input``
        is set from the predictions.

    Returns
    -------
    DeployableMap
    """
    from .. import __version__

    if not isinstance(predictions, Predictions):
        raise CalibrationInputError(
            "deployable_map needs a Predictions object with labels (e.g. from "
            f"calibration_core.load_predictions), got {type(predictions).__name__}."
        )
    kind = input_kind(predictions)
    identity = map_name == UNCALIBRATED
    if identity:
        fitted = TemperatureScaling.identity(predictions.n_classes, input=kind)
    else:
        fitted = make_map(map_name, **{**params, "input": kind}).fit(predictions, None)
    if comparison is None:
        comparison = compare_maps(
            predictions,
            maps={} if identity else {map_name: make_map(map_name, **params)},
            folds=folds,
            seed=seed,
            n_bins=n_bins,
            scheme=scheme,
        )
    return DeployableMap(
        map=fitted,
        model=predictions.name,
        input=kind,
        class_names=tuple(predictions.class_names),
        n_rows=predictions.n_samples,
        held_out=held_out_estimate(comparison, map_name),
        library_version=__version__,
        created=datetime.now(UTC).replace(microsecond=0).isoformat(),
    )
