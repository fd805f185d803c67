"""The Dask engine of the command line: ``evaluate``, ``fit`` and ``apply`` on a dataset.

The FILE argument may be a Parquet file, a folder of ``*.parquet`` or a quoted
glob (``'logs/*.parquet'``). The dataset is read and summarised on a Dask
cluster (:mod:`calibration_core.distributed`): ``--scheduler tcp://host:8786``
uses a running scheduler, otherwise a LocalCluster of ``--workers N`` worker
processes starts for the run. The output has the schema of ``evaluate``
(docs/evaluate-json-schema.md): per model the exact ``uncalibrated`` row of
every row; with ``--maps`` one row per map cross-fitted on the model's
reproducible sample (``--sample-rows``, ``--seed``;
:func:`~calibration_core.distributed.compare_maps_on_sample`) and the sample's
verdict among the maps and ``uncalibrated``, else a verdict with that single
candidate; with ``--measures`` the measures of the same sample. Every row,
verdict and measures object says what it was computed on (``evaluated_on``:
``"all rows"`` or ``{"rows", "seed", "of"}``). With ``--group-by``/``--window``, the
``slices``/``time`` objects: point estimates exact on every row
(:mod:`calibration_core.distributed.slices`; equal-frequency edges of every
group selected exactly, :mod:`calibration_core.distributed.group_bins`), bounds,
test and flags of the in-memory reports on the sample (``intervals_evaluated_on``);
``--group-maps`` the in-memory ``group_maps`` of the sample. The ``uncalibrated`` row's
Brier parts are exact for every K, its log-loss parts for K = 2 only: for
K > 2 they are null, because the core renormalises each row's binned class
frequencies over its K bins at once, which no per-bin sum of one class column
gives (:mod:`calibration_core.distributed.parts`). A progress bar (rows
summarised) is drawn on stderr when it is a terminal.

``fit FILES --engine dask --map NAME`` fits temperature and Platt exactly on
every row and other maps on a recorded sample, and writes the deployable map
(``--select best``: the maps are cross-fitted on the sample and the best one
is refitted so);
``apply MAP FILES --engine dask -o DIR`` writes one calibrated Parquet file per
input file (docs/dask.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

from ..dask_security import dask_security
from .common import EXIT_OK, CommandError, ProgressBar, one_model, parse_maps
from .groups import group_columns, reference_argument, slice_lines
from .outputs import (
    ALL_ROWS,
    SLICES_NOT_IN_CSV,
    ModelResult,
    evaluate_document,
    measures_lines,
    single_verdict,
    uncalibrated_row,
    verdict_line,
    write_apply_summary,
    write_csv,
    write_fit_summary,
)


def check_cluster_options(args: argparse.Namespace) -> None:
    """``--scheduler``/``--workers`` only with ``--engine dask``, and at least one worker."""
    if args.engine != "dask":
        if args.scheduler is not None or args.workers is not None:
            raise CommandError("--scheduler and --workers need --engine dask.")
        return
    if args.workers is not None and args.workers < 1:
        raise CommandError(f"--workers must be at least 1, got {args.workers}.")


def check_dask_options(args: argparse.Namespace) -> None:
    """Refuse the ``evaluate`` options the Dask engine does not support yet, naming each."""
    check_cluster_options(args)
    check_sample_option(args)
    if args.engine != "dask":
        return
    sliced = bool(args.group_by or args.window)
    if args.sample_rows is not None and args.maps is None and not args.measures and not sliced:
        raise CommandError(
            f"--sample-rows {args.sample_rows}: nothing is computed on a sample without "
            "--maps, --measures, --group-by or --window; add one of them, or drop --sample-rows."
        )
    check_bins(args)


def check_sample_option(args: argparse.Namespace) -> None:
    """``--sample-rows`` (evaluate, fit) only with ``--engine dask`` (or ``--engine stream``
    with ``--group-by``/``--window``), and at least 1."""
    if args.sample_rows is None:
        return
    sliced = bool(getattr(args, "group_by", None) or getattr(args, "window", None))
    if args.engine != "dask" and not (args.engine == "stream" and sliced):
        raise CommandError(
            "--sample-rows needs --engine dask (or --engine stream with --group-by or --window)."
        )
    if args.sample_rows < 1:
        raise CommandError(f"--sample-rows must be at least 1, got {args.sample_rows}.")


def check_bins(args: argparse.Namespace) -> None:
    """Equal-width ``--bins`` up to the cells' limit (100), of the Dask or streaming engine."""
    from calibration_core.distributed import MAX_CELL_BINS

    if args.scheme == "width" and args.bins > MAX_CELL_BINS:
        engine = "streaming" if args.engine == "stream" else "Dask"
        raise CommandError(
            f"--bins {args.bins}: the {engine} engine answers equal-width bin counts up to "
            f"{MAX_CELL_BINS} from one pass; use --bins {MAX_CELL_BINS} or fewer, or "
            "--scheme frequency."
        )


@contextlib.contextmanager
def dask_client(args: argparse.Namespace) -> Iterator[Any]:
    """A distributed Client on ``--scheduler``, or on a LocalCluster of ``--workers``."""
    from calibration_core.distributed import require_dask
    from calibration_core.distributed.engine import local_cluster

    try:
        require_dask()
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    from distributed import Client

    if args.scheduler is not None:
        security = dask_security(args.scheduler)  # refused as bad input (exit 2)
        try:
            client = Client(args.scheduler, timeout="20s", security=security)
        except OSError as exc:
            raise CommandError(
                f"cannot reach the Dask scheduler at {args.scheduler} ({exc}); check the "
                "address, or use --workers N for a local cluster."
            ) from None
        with client:
            yield client
        return
    cluster = local_cluster(
        args.workers,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    with cluster, Client(cluster) as client:
        yield client


def evaluate_on_dask(args: argparse.Namespace, out) -> int:
    """Run ``evaluate --engine dask`` and write the result to ``out``; returns the exit code."""
    from distributed import KilledWorker

    from calibration_core.distributed import dataset_summaries
    from calibration_core.distributed.frequency import frequency_statistics

    maps = sample_maps(args)
    time_spec(args)  # refused windows before the cluster starts
    group_map_names(args)  # an unknown map fails before any work on the cluster
    bar = ProgressBar(sys.stderr, "summarising") if sys.stderr.isatty() else None
    with dask_client(args) as client:
        read = {"label_column": args.label_column, "renormalize": args.renormalize}
        try:
            summaries = dataset_summaries(
                args.file,
                client=client,
                progress=None if bar is None else lambda done, total: bar(done, total, "rows"),
                **read,
            )
            if args.scheme == "frequency":
                frequency = frequency_statistics(
                    args.file, summaries, args.bins, client=client, **read
                )
                summaries = {name: s.with_frequency(args.bins, frequency[name])
                             for name, s in summaries.items()}  # fmt: skip
        except KilledWorker as exc:
            raise killed_error(exc) from None
        finally:
            if bar is not None:
                bar.close()
        try:
            found = [
                on_sample(args, maps, client, s) if maps or args.measures else ModelResult(s)
                for s in summaries.values()
            ]
            slices = dataset_slices(args, client) if args.group_by or args.window else {}
        except KilledWorker as exc:
            raise killed_error(exc) from None
    for result in found:
        result.slices = slices.get(result.summary.name, {})
    write_dask_result(args, evaluate_document(args, maps, found, engine_settings(args, maps)), out)
    return EXIT_OK


def engine_settings(args: argparse.Namespace, maps=()) -> dict[str, Any]:
    """The settings only the Dask and streaming engines write: ``engine`` and ``sample_rows``."""
    sampled = bool(maps or args.measures or args.group_by or args.window)
    return {"engine": args.engine, "sample_rows": sample_rows(args) if sampled else None}


def write_dask_result(args: argparse.Namespace, doc: dict[str, Any], out) -> None:
    """The document (JSON), the CSV or the tables of ``evaluate --engine dask``."""
    models = doc["models"]
    if args.format == "json":
        json.dump(doc, out, indent=2, allow_nan=False)
        out.write("\n")
    elif args.format == "csv":
        write_csv(models, out)
        if args.group_by or args.window:
            print(SLICES_NOT_IN_CSV, file=sys.stderr)
    else:
        write_dask_tables(models, args, out)
        for m in models:
            lines = slice_lines(m["model"], m)
            if m.get("group_maps"):
                where = on_words(m["group_maps"][0]["evaluated_on"])
                lines.append(f"  group maps fitted, held out and scored on {where}")
            if lines:
                out.write("\n" + "\n".join(lines) + "\n")


def group_map_names(args: argparse.Namespace) -> tuple[str, ...]:
    """The maps of ``--group-maps`` (with ``--group-by``), each checked by the registry."""
    from calibration_core.maps import make_map

    if not (args.group_by and getattr(args, "group_maps", None)):
        return ()
    names = tuple(group_columns(args.group_maps))
    for name in names:
        make_map(name)
    return names


def dataset_slices(args: argparse.Namespace, client, passes=None) -> dict[str, dict[str, Any]]:
    """Per model, its ``slices``, ``group_maps`` and ``time`` objects.

    Point estimates are exact, from one pass over the dataset per option
    (:func:`~calibration_core.distributed.slices.dataset_groups`), and with
    ``--scheme frequency`` four more that select and apply every group's
    own edges (:func:`~calibration_core.distributed.group_bins.group_frequency_bins`);
    intervals, the homogeneity test, the drift flags and the group maps are the
    in-memory reports' on the model's reproducible sample (``--sample-rows``,
    ``--seed``), drawn once with the group and time columns.

    The passes run on ``client`` (Dask), or with ``passes``
    (:class:`~calibration_core.distributed.frequency.InProcessPasses`, the
    streaming engine; ``client`` None) in this process, the same tasks piece
    after piece; the reports on the sample then run here too.
    """
    from calibration_core.distributed.slices import GroupSpec, dataset_groups

    read = {"label_column": args.label_column, "renormalize": args.renormalize}
    specs = {}
    if args.group_by:
        specs["slices"] = GroupSpec(columns=tuple(group_columns(args.group_by)), n_bins=args.bins)
    if args.window:
        specs["time"] = time_spec(args)
    where = {"client": client, "passes": passes}
    found = {key: dataset_groups(args.file, spec, **where, **read)
             for key, spec in specs.items()}  # fmt: skip
    bins = {key: frequency_bins(args, where, spec, found[key]) for key, spec in specs.items()}
    names = list(next(iter(found.values())))
    out = {}
    for name in names:
        groups = {k: f[name] for k, f in found.items()}
        out[name] = model_slices_of(args, where, name, specs, groups,
                                    {k: b.get(name) for k, b in bins.items()})  # fmt: skip
    return out


def time_spec(args: argparse.Namespace):
    """The :class:`~calibration_core.distributed.slices.GroupSpec` of ``--window`` (None without).

    Its refusals come before any pass: a reference in dates for windows of N
    rows, and for them a row group of several models, found in the files'
    footers (:func:`~calibration_core.distributed.pieces.model_first_rows`).
    """
    from calibration_core.distributed.pieces import (
        ReadOptions,
        dataset_name,
        find_pieces,
        model_first_rows,
    )
    from calibration_core.distributed.slices import GroupSpec
    from calibration_core.slices import parse_reference

    if not args.window:
        return None
    period = parse_reference(reference_argument(args))
    spec = GroupSpec(window=args.window, time_column=args.time_column, reference=period,
                     n_bins=args.bins)  # fmt: skip
    if spec.rows_window:
        options = ReadOptions(args.label_column, args.renormalize, dataset_name(args.file))
        model_first_rows(find_pieces(args.file), options)
    return spec


def frequency_bins(args: argparse.Namespace, where: dict, spec, groups: dict) -> dict[str, Any]:
    """Per model, every group's own equal-frequency bins (``--scheme frequency``), else {}.

    ``where``: the ``client`` and ``passes`` of the passes (:func:`dataset_slices`).
    """
    from calibration_core.distributed.group_bins import group_frequency_bins

    if args.scheme != "frequency":
        return {}
    return group_frequency_bins(
        args.file, spec, groups, min_rows=args.min_group_rows, **where,
        label_column=args.label_column, renormalize=args.renormalize,
    )  # fmt: skip


def model_slices_of(
    args, where: dict, name: str, specs: dict, groups: dict, bins: dict
) -> dict[str, Any]:
    """One model's ``slices``/``group_maps``/``time`` objects: exact totals, then its
    sample's (:func:`~calibration_core.distributed.slices.model_slices`; ``where``: the
    ``client`` and ``passes`` of :func:`dataset_slices`)."""
    from calibration_core.distributed.slices import SliceSample, exact_groups, model_slices

    exact = {key: exact_groups(g, specs[key], args.min_group_rows, bins[key])
             for key, g in groups.items()}  # fmt: skip
    time_column = groups["time"].time_column if "time" in groups else None
    drawn = SliceSample(sample_rows(args), args.seed, args.slice_resamples, args.level,
                        args.min_group_rows, args.scheme, group_map_names(args),
                        args.folds)  # fmt: skip
    return model_slices(args.file, name, specs, exact, time_column, drawn, **where,
                        label_column=args.label_column, renormalize=args.renormalize)  # fmt: skip


def killed_error(exc) -> CommandError:
    """The message of a run stopped by workers that kept dying (``KilledWorker``)."""
    return CommandError(
        f"Dask workers died repeatedly while computing {exc.task!r} (out of memory, or "
        "killed); the run was stopped. Give the workers more memory, or use smaller "
        "row groups."
    )


def sample_maps(args: argparse.Namespace) -> tuple[str, ...]:
    """The maps ``evaluate --engine dask`` cross-fits on the sample: none without ``--maps``.

    An unknown name fails here, before any work on the cluster, with the
    in-memory engine's message (the registry's :func:`~calibration_core.maps.make_map`).
    """
    from calibration_core.maps import available_maps, make_map

    if args.maps is None:
        return ()
    maps = parse_maps(args.maps)
    names = tuple(available_maps()) if maps == "all" else maps
    for name in names:
        make_map(name)
    return names


def on_sample(args: argparse.Namespace, maps, client, summary) -> ModelResult:
    """The maps' held-out comparison and the measures of a model, on one drawn sample.

    The sample is ``--sample-rows`` rows drawn with ``--seed``
    (:func:`~calibration_core.distributed.sample_predictions`); the maps are
    cross-fitted on it as ``fit --select best --engine dask`` does
    (:func:`~calibration_core.distributed.compare_maps_on_sample`, ``--folds``,
    folds seeded by ``--seed``); the comparison and the measures each run as one
    task on the cluster. ``summary``: the model's, exact on every row.
    """
    from calibration_core.distributed import (
        compare_maps_on_sample,
        run_on_sample,
        sample_predictions,
    )
    from calibration_core.measures import measures_summary

    read = {"model": summary.name, "label_column": args.label_column,
            "renormalize": args.renormalize}  # fmt: skip
    size = sample_rows(args)
    comparison = None
    if maps:
        settings = {"folds": args.folds, "n_bins": args.bins, "scheme": args.scheme}
        drawn = compare_maps_on_sample(
            args.file, list(maps), size=size, seed=args.seed, client=client, **settings, **read
        )
        sample, info, comparison = drawn.sample, drawn.info, drawn.comparison
    else:
        sample, info = sample_predictions(
            args.file, size=size, seed=args.seed, client=client, **read
        )
    measures = None
    if args.measures:
        measures = run_on_sample(measures_summary, sample, client, seed=args.seed)
    return ModelResult(summary, comparison, measures, evaluated_on(info, summary.n_samples))


def evaluated_on(info, n_rows: int) -> dict[str, int]:
    """``evaluated_on`` of what was computed on a sample: its rows and seed, of ``n_rows``."""
    return {"rows": info.rows, "seed": info.seed, "of": n_rows}


def on_words(on: str | dict[str, int]) -> str:
    """``evaluated_on`` in words: "all rows" or "a uniform sample of N of M rows (seed s)"."""
    if on == ALL_ROWS:
        return ALL_ROWS
    return f"a uniform sample of {on['rows']:,} of {on['of']:,} rows (seed {on['seed']})"


def write_dask_tables(models: list[dict[str, Any]], args: argparse.Namespace, out) -> None:
    """One line of metrics per model and map (to 4 decimals), then verdicts and measures."""
    from calibration_core.compare import METRIC_COLUMNS

    kind = "equal-width" if args.scheme == "width" else "equal-frequency"
    done = "uncalibrated on every row"
    if any(len(m["rows"]) > 1 for m in models):
        done += f", maps held out ({args.folds}-fold cross-fitting) on a sample"
    where = "streamed in this process" if args.engine == "stream" else "on Dask"
    out.write(f"{args.file}: metrics {where}, {args.bins} {kind} bins; {done}\n")
    out.write("model  map  rows  " + "  ".join(METRIC_COLUMNS) + "\n")
    for m in models:
        for row in m["rows"]:
            on = row["evaluated_on"]
            rows = m["n_samples"] if on == ALL_ROWS else on["rows"]
            values = "  ".join("-" if row[c] is None else f"{row[c]:.4f}" for c in METRIC_COLUMNS)
            out.write(f"{m['model']}  {row['map']}  {rows}  {values}\n")
            if row["error"] is not None:
                out.write(f"  {row['map']} failed: {row['error']}\n")
    verdicts = [
        f"{m['model']}: {verdict_line(m['verdict'])} On {on_words(m['verdict']['evaluated_on'])}."
        for m in models
        if len(m["rows"]) > 1
    ]
    if verdicts:
        out.write("\n" + "\n".join(verdicts) + "\n")
    for m in models:
        if "measures" in m:
            where = on_words(m["measures"]["evaluated_on"])
            out.write(f"\n{m['model']}: measures of the uncalibrated predictions on {where}\n")
            out.write("\n".join(measures_lines(m["measures"])) + "\n")


# ------------------------------------------------------------ fit, apply
def check_fit_options(args: argparse.Namespace, maps) -> str:
    """The one map ``fit --engine dask`` deploys ("" with ``--select best``); checks options."""
    check_cluster_options(args)
    check_sample_option(args)
    if args.engine != "dask":
        return ""
    check_bins(args)
    return "" if args.select is not None else maps[0]


def fit_dataset_map(args: argparse.Namespace, map_name: str, client, summary):
    """The map fitted on the dataset: exactly (temperature, Platt) or on a sample."""
    from calibration_core.distributed.select import fit_map_on_dataset

    return fit_map_on_dataset(
        args.file,
        map_name,
        size=sample_rows(args),
        seed=args.seed,
        client=client,
        label_column=args.label_column,
        renormalize=args.renormalize,
        model=summary.name,
    )


def sample_rows(args: argparse.Namespace) -> int:
    """``--sample-rows``, or the core's default sample size."""
    from calibration_core.distributed import DEFAULT_SAMPLE_ROWS

    return DEFAULT_SAMPLE_ROWS if args.sample_rows is None else args.sample_rows


def fit_on_dask(args: argparse.Namespace, map_name: str, out) -> int:
    """Run ``fit --engine dask``: fit one map on a dataset and write the deployable map.

    The JSON summary has the fields of the in-memory ``fit`` (``calibration-dashboard/fit/v1``):
    ``comparison`` holds the exact uncalibrated row of the whole dataset,
    ``held_out`` is null (nothing is cross-fitted) and ``settings`` adds
    ``engine`` and ``fitted_on`` (``"all rows"`` or ``"sample"``).
    """
    from distributed import KilledWorker

    from calibration_core import PART_FIELDS
    from calibration_core.distributed import (
        dataset_deployable,
        dataset_summaries,
        frequency_statistics,
    )
    from calibration_core.distributed.select import EXACT_MAPS
    from calibration_core.maps import make_map

    make_map(map_name)  # an unknown name fails before any work on the cluster
    with dask_client(args) as client:
        read = {"label_column": args.label_column, "renormalize": args.renormalize}
        try:
            summaries = dataset_summaries(args.file, client=client, **read)
            summary = one_model(summaries, args.model, args.file)
            if args.scheme == "frequency":
                wanted = {summary.name: summary}
                frequency = frequency_statistics(
                    args.file, wanted, args.bins, client=client, **read
                )
                summary = summary.with_frequency(args.bins, frequency[summary.name])
            fitted = fit_dataset_map(args, map_name, client, summary)
        except KilledWorker as exc:
            raise killed_error(exc) from None
    exact = map_name in EXACT_MAPS
    n_rows = summary.n_samples if exact else int(fitted.fit_sample_["rows"])
    deployable = dataset_deployable(fitted, summary.name, summary.class_names, n_rows)
    deployable.save(args.output)
    row = uncalibrated_row(summary, args.bins, args.scheme)
    for part in PART_FIELDS:  # fit's comparison rows have no parts (as in memory)
        del row[part]
    settings = {
        "maps": [map_name],
        "folds": args.folds,
        "seed": args.seed,
        "n_bins": args.bins,
        "scheme": args.scheme,
        "engine": "dask",
        "fitted_on": "all rows" if exact else "sample",
    }
    verdict = single_verdict(summary, row, 0.95).to_dict()
    return write_fit_summary(
        args,
        deployable,
        out,
        model=summary.name,
        map_name=map_name,
        settings=settings,
        comparison=[row],
        verdict=verdict,
        n_rows=n_rows,
        held_out=None,
    )


def apply_on_dask(args: argparse.Namespace, deployable, out) -> int:
    """Run ``apply --engine dask``: calibrated Parquet, one task per input file, into OUT/."""
    from distributed import KilledWorker

    from calibration_core.distributed import apply_map_to_dataset

    check_cluster_options(args)
    with dask_client(args) as client:
        try:
            written = apply_map_to_dataset(deployable, args.file, args.output, client=client)
        except KilledWorker as exc:
            raise killed_error(exc) from None
    rows = sum(written.values())
    return write_apply_summary(args, deployable, rows, out, engine="dask", files=written)


def select_on_dask(args: argparse.Namespace, maps, out) -> int:
    """Run ``fit --select best --engine dask``: choose on the sample, refit, write the map.

    The maps are cross-fitted on the reproducible sample (``--sample-rows``,
    ``--seed``) as the in-memory ``fit --select best`` cross-fits them on all
    rows; the verdict's recommended map is refitted as ``fit --map``
    fits it on this engine. ``comparison`` and ``verdict`` are the sample's;
    ``held_out`` records the sample under ``"sample"``.
    """
    from distributed import KilledWorker

    from calibration_core.compare import UNCALIBRATED
    from calibration_core.distributed import dataset_summaries, select_map_on_dataset
    from calibration_core.distributed.select import EXACT_MAPS

    read = {"label_column": args.label_column, "renormalize": args.renormalize}
    settings = {"folds": args.folds, "seed": args.seed, "n_bins": args.bins, "scheme": args.scheme}
    with dask_client(args) as client:
        try:
            summary = one_model(
                dataset_summaries(args.file, client=client, **read), args.model, args.file
            )
            deployable, found = select_map_on_dataset(
                args.file,
                maps,
                model=summary.name,
                class_names=summary.class_names,
                n_rows=summary.n_samples,
                client=client,
                size=sample_rows(args),
                **settings,
                **read,
            )
        except KilledWorker as exc:
            raise killed_error(exc) from None
    deployable.save(args.output)
    verdict = found.comparison.verdict()
    chosen = verdict.recommended  # "uncalibrated": the identity map was deployed
    rows = found.comparison.rows()
    settings = {
        "maps": [r["map"] for r in rows][1:],
        **settings,
        "engine": "dask",
        "fitted_on": "all rows" if chosen in (*EXACT_MAPS, UNCALIBRATED) else "sample",
    }
    return write_fit_summary(
        args,
        deployable,
        out,
        model=summary.name,
        map_name=chosen,
        settings=settings,
        comparison=rows,
        verdict=verdict.to_dict(),
    )
