"""Choose among maps on a dataset: held-out comparison on its sample, then the refit.

The in-memory ``fit --select best`` compares maps on held-out folds of all
rows and deploys the verdict's recommended map (the fewest parameters among
those not clearly worse than the lowest held-out log-loss). On a dataset too
large for memory the comparison runs on the reproducible uniform sample
(:func:`~.sample.sample_predictions`): the core's own
:func:`~calibration_core.compare_maps` cross-fits every map on the sample, so
every map is scored on sample rows it was not fitted on, and
:func:`~calibration_core.deploy.recommended_map` picks the map. It is then
refitted as ``fit --engine dask --map`` fits it: temperature and Platt exactly
on every row of the dataset (distributed Newton fits), any other map on the
whole sample, its size and seed recorded as ``"fit_sample"``
(:func:`fit_map_on_dataset`, also what ``fit --engine dask --map`` runs); when
the recommendation is ``"uncalibrated"``, the identity map is deployed.

When a client is given, the comparison itself runs as one task on the
cluster (the sample is bounded, default 1e6 rows), so the caller only holds
a future.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..binning import Scheme
from ..compare import UNCALIBRATED, Comparison, compare_maps
from ..deploy import DeployableMap, recommended_map
from ..deploy.document import held_out_estimate, input_kind
from ..maps.temperature import TemperatureScaling
from ..predictions import Predictions
from . import DEFAULT_SAMPLE_ROWS
from .apply import dataset_deployable
from .platt import fit_platt_on_dataset
from .sample import (
    SampleInfo,
    fit_map_on_sample,
    fit_on_sample,
    run_on_sample,
    sample_predictions,
)
from .temperature import fit_temperature_on_dataset

__all__ = [
    "EXACT_MAPS",
    "SampleComparison",
    "compare_maps_on_sample",
    "fit_map_on_dataset",
    "select_map_on_dataset",
]

#: Maps fitted exactly on every row of a dataset; the others on its sample.
EXACT_MAPS = ("temperature", "platt")


@dataclass
class SampleComparison:
    """A held-out comparison of maps on a dataset's sample.

    Attributes
    ----------
    comparison : Comparison
        :func:`~calibration_core.compare_maps` on the sample (cross-fitted).
    sample : Predictions
        The sample's rows.
    info : SampleInfo
        How the sample was drawn (rows, seed, fraction, dataset rows).
    """

    comparison: Comparison
    sample: Predictions
    info: SampleInfo


def compare_maps_on_sample(
    source,
    maps,
    *,
    size: int = DEFAULT_SAMPLE_ROWS,
    seed: int = 0,
    folds: int = 5,
    n_bins: int = 15,
    scheme: Scheme = "width",
    test_fraction: float | None = None,
    client: Any = None,
    **options,
) -> SampleComparison:
    """Cross-fit ``maps`` on a reproducible sample of one model of a dataset.

    Parameters
    ----------
    source : str or list
        Parquet file, folder, glob or list (as :func:`~.engine.dataset_summaries`).
    maps : str or sequence
        Map names (or ``"all"``), as :func:`~calibration_core.compare_maps`.
    size, seed : int
        The sample (:func:`~.sample.sample_predictions`); ``seed`` also
        assigns the folds.
    folds, n_bins, scheme, test_fraction
        Of the comparison (``test_fraction``: one seeded train/test split
        instead of cross-fitting).
    client : distributed.Client, optional
        When given, the comparison runs as one task on the cluster.
    **options
        ``model``, ``label_column``, ``renormalize``, ``name`` of the sample.

    Returns
    -------
    SampleComparison
    """
    sample, info = sample_predictions(source, size=size, seed=seed, client=client, **options)
    settings: dict[str, Any] = {"folds": folds, "seed": seed, "n_bins": n_bins, "scheme": scheme}
    if test_fraction is not None:
        settings["test_fraction"] = test_fraction
    comparison = run_on_sample(compare_maps, sample, client, maps=maps, **settings)
    return SampleComparison(comparison, sample, info)


def fit_map_on_dataset(
    source,
    map_name: str,
    *,
    size: int = DEFAULT_SAMPLE_ROWS,
    seed: int = 0,
    drawn: SampleComparison | None = None,
    client: Any = None,
    **options,
):
    """``map_name`` fitted for deployment: exactly on every row, or on a sample.

    Parameters
    ----------
    source : str or list
    map_name : str
    size, seed : int
        The sample of maps other than :data:`EXACT_MAPS` (:func:`~.sample.fit_map_on_sample`).
    drawn : SampleComparison, optional
        Its sample is reused (not drawn again) instead.
    client : distributed.Client, optional
    **options
        ``model``, ``label_column``, ``renormalize``.

    Returns
    -------
    CalibrationMap
        Fitted; a sample fit carries ``fit_sample_`` (exported as ``"fit_sample"``).
    """
    if map_name == "temperature":
        return fit_temperature_on_dataset(source, client=client, **options)
    if map_name == "platt":
        return fit_platt_on_dataset(source, client=client, **options)
    if drawn is not None:
        return fit_on_sample(map_name, drawn.sample, drawn.info)
    return fit_map_on_sample(source, map_name, size=size, seed=seed, client=client, **options)


def select_map_on_dataset(
    source, maps, *, model: str, class_names, n_rows: int, client: Any = None, **settings
) -> tuple[DeployableMap, SampleComparison]:
    """The verdict's recommended map on the sample, refitted and wrapped as deployable.

    Parameters
    ----------
    source : str or list
    maps : str or sequence
        The candidates (``"all"`` for every map of the registry).
    model : str
        The model of the dataset to fit (its rows only).
    class_names : sequence of str
    n_rows : int
        The model's rows in the dataset (recorded for exact fits).
    client : distributed.Client, optional
    **settings
        ``size``, ``seed``, ``folds``, ``n_bins``, ``scheme`` of
        :func:`compare_maps_on_sample`, and ``label_column``, ``renormalize``.

    Returns
    -------
    DeployableMap, SampleComparison
        The deployable's ``held_out`` is the winner's held-out estimate on the
        sample, with the sample recorded under ``"sample"``.
    """
    read = {k: settings.pop(k) for k in ("label_column", "renormalize") if k in settings}
    found = compare_maps_on_sample(source, maps, model=model, client=client, **read, **settings)
    chosen = recommended_map(found.comparison)
    if chosen == UNCALIBRATED:  # no map is clearly better: deploy the identity
        fitted = TemperatureScaling.identity(len(class_names), input=input_kind(found.sample))
    else:
        fitted = fit_map_on_dataset(source, chosen, drawn=found, client=client, model=model, **read)
    rows = n_rows if chosen in (*EXACT_MAPS, UNCALIBRATED) else found.info.rows
    deployable = dataset_deployable(fitted, model, class_names, rows)
    deployable.held_out = {
        **held_out_estimate(found.comparison, chosen),
        "sample": asdict(found.info),
    }
    return deployable, found
