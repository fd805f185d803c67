"""Server-side Parquet datasets: the operator's list, the jobs, the cached statistics.

An operator sets ``DATASETS_DIR``, and ``DASK_SCHEDULER_ADDRESS`` for a cluster
(:mod:`app.config`).
Every sub-folder of ``DATASETS_DIR`` holding ``*.parquet`` files is one dataset,
named after the folder; every ``*.parquet`` file directly in it is one, named
after the file's stem (a folder wins over a file of the same name). The list
is read from the directory on each use, so datasets can be added without a
restart. The browser only ever sends a dataset *name*: :meth:`Datasets.resolve`
looks it up in that list and never joins it to a path, so no name reaches a
file outside it.

Links are resolved before anything is offered: an entry (or a ``*.parquet``
file of a dataset folder) whose real path is not inside the real
``DATASETS_DIR`` (a link to ``/etc/passwd``, to a folder or a mounted volume
outside, a loop, a link back to ``DATASETS_DIR`` itself) is not a dataset, nor
is anything but a regular file or a folder (FIFOs, devices, sockets). A
volume is offered by mounting it *inside* ``DATASETS_DIR``. The listed paths
are the resolved ones, so a link changed after the listing is not followed.

The first view of a dataset is a background job that summarises every row
group (one pass, exact mergeable statistics of 3,098 cells per score column)
on one of two engines (:meth:`Datasets.engine`):

* with ``DASK_SCHEDULER_ADDRESS``, on the cluster
  (:func:`calibration_core.distributed.dataset_summaries`); the job is a
  :func:`app.job_limits.cluster_job` (the job time limit, no memory limit of
  the web side: the cluster bounds it, the job only waits on it);
* without it, streamed in the job's own process
  (:func:`calibration_core.distributed.stream.stream_summaries`: the same
  summaries from the same per-batch code, no Dask); the job then runs under the
  web side's job limits (``JOB_TIME_LIMIT_SECONDS``, ``JOB_MEMORY_LIMIT_MB``) like
  every job on uploads, and memory follows the batch, not the dataset.

Equal-frequency bins, the maps' sample and the groups and windows take the
same per-piece passes on either engine (Dask tasks, or
:class:`~calibration_core.distributed.frequency.InProcessPasses` piece after
piece), so the numbers, and the sample drawn for a seed, are the same. The
job keeps the result,
one :class:`~calibration_core.distributed.ModelSummary` per model, in
``CACHE_DIR/datasets`` keyed by session and dataset. Every later view of any
equal-width bin count 1..100, notion or band is read from it in milliseconds
(:mod:`app.dataset_view`) without touching the data again.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import diskcache

from calibration_core import CalibrationInputError

from .config import MB
from .dask_security import dask_security

#: ``progress(done, total, text)`` of a background job (see ``run_job`` of the job wiring).
Progress = Callable[[int, int, str], None]
#: Seconds to wait for the scheduler before the page is told it cannot be reached.
CONNECT_SECONDS = 20
#: Size bound of the cached statistics (about 0.25 MB per model and class).
RESULTS_LIMIT_MB = 1024
#: Rows of the reproducible sample (per model) the page cross-fits maps on: the held-out
#: predictions of every map are kept, about 8 bytes x classes x (maps + 1) per row.
MAPS_SAMPLE_ROWS = 100_000


def contained(entry: Path, base: Path) -> tuple[Path, str] | tuple[None, str]:
    """``(real path, "dir" or "file")`` of ``entry`` when it resolves strictly inside ``base``.

    Otherwise ``(None, why)``: a broken link or a loop, a real path outside
    ``base`` (or ``base`` itself), or a file that is neither regular nor a folder.
    """
    try:
        real = entry.resolve(strict=True)
        mode = real.stat().st_mode
    except (OSError, RuntimeError):  # missing target, or a symlink loop
        return None, "is a broken link or a link loop"
    if real == base or not real.is_relative_to(base):
        return None, "is a link leading outside DATASETS_DIR"
    if stat.S_ISDIR(mode):
        return real, "dir"
    if stat.S_ISREG(mode):
        return real, "file"
    return None, "is not a regular file or folder (a FIFO, device or socket)"


def _dataset_folder(real: Path, base: Path) -> bool:
    """A folder holding ``*.parquet`` files, each a regular file inside ``base``."""
    files = [f for f in real.glob("*.parquet") if not f.name.startswith(".")]
    return bool(files) and all(contained(f, base)[1] == "file" for f in files)


def scan_datasets(root: Path) -> dict[str, Path]:
    """``{name: real path}`` of the datasets in ``root`` (see the module docstring), by name."""
    found: dict[str, Path] = {}
    try:
        base = root.resolve(strict=True)
        entries = sorted(e for e in root.iterdir() if not e.name.startswith("."))
    except (OSError, RuntimeError):
        return found
    files = []
    for entry in entries:
        real, kind = contained(entry, base)
        if real is not None and kind == "dir" and _dataset_folder(real, base):
            found[entry.name] = real
        elif real is not None and kind == "file" and entry.suffix == ".parquet":
            files.append((entry.stem, real))
    for stem, real in files:
        found.setdefault(stem, real)
    return dict(sorted(found.items()))


def refusal_reason(root: Path, name: str) -> str | None:
    """Why an entry of ``root`` called ``name`` (or ``name.parquet``) is not offered, if one is.

    Looked up among the folder's entries (the name is never joined to a path).
    """
    try:
        base = root.resolve(strict=True)
        entries = [e for e in root.iterdir() if name in (e.name, e.stem)]
    except (OSError, RuntimeError):
        return None
    for entry in entries:
        real, why = contained(entry, base)
        if real is None:
            return why
    return None


class Datasets:
    """The datasets of ``DATASETS_DIR``, computed on a cluster or streamed, cached per session.

    Parameters
    ----------
    root : Path
        ``DATASETS_DIR``.
    address : str or None
        ``DASK_SCHEDULER_ADDRESS``; None: the jobs stream the files in their own
        process (the streaming engine).
    cache_dir : Path
        Where the statistics are kept (``CACHE_DIR/datasets``).
    ttl_seconds : int
        How long they are kept (``SESSION_TTL_SECONDS``).
    """

    def __init__(self, root: Path, address: str | None, cache_dir: Path, ttl_seconds: int) -> None:
        self.root = Path(root)
        self.address = address
        self.ttl_seconds = ttl_seconds
        self.results = diskcache.Cache(str(cache_dir), size_limit=RESULTS_LIMIT_MB * MB)

    def names(self) -> list[str]:
        """The datasets' names, sorted."""
        return list(scan_datasets(self.root))

    def resolve(self, name: object) -> Path:
        """The path of dataset ``name``; only names of :meth:`names` are accepted.

        Raises
        ------
        CalibrationInputError
            Any other value (a path, ``..``, a name that is not listed).
        """
        known = scan_datasets(self.root)
        if isinstance(name, str) and name in known:
            return known[name]
        why = refusal_reason(self.root, name) if isinstance(name, str) else None
        if why is not None:
            raise CalibrationInputError(
                f"the dataset {name[:80]!r} {why}, so this server does not offer it; the "
                "operator can move the data (or mount its volume) inside DATASETS_DIR."
            )
        shown = repr(name)[:80]
        raise CalibrationInputError(
            f"this server has no dataset named {shown}; pick one from the list "
            f"({', '.join(known) or 'none configured'})."
        )

    # ------------------------------------------------------------ cache
    def cached(self, sid: str | None, name: object) -> dict | None:
        """The stored result of ``name`` for session ``sid``, or None.

        A dict: ``summaries`` (model name -> ModelSummary), ``seconds`` (the
        cluster run) and ``rows`` (all models).
        """
        if sid is None or not isinstance(name, str):
            return None
        return self.results.get((sid, name))

    def keep(self, sid: str, name: str, summaries: dict, seconds: float) -> None:
        """Store a computed result for ``sid``."""
        rows = sum(s.n_samples for s in summaries.values())
        entry = {"summaries": summaries, "seconds": seconds, "rows": rows}
        self.results.set((sid, name), entry, expire=self.ttl_seconds)

    # ------------------------------------------------------------ job
    def compute(self, sid: str | None, name: object, progress: Progress) -> None:
        """Summarise dataset ``name`` on the cluster and keep it for ``sid`` (the job's body).

        Nothing is done when it is kept already (even if its files are gone since),
        nor without a session. Every failure the user can act on
        (bad rows, with file and row range; an unreachable scheduler; workers that
        died) is a :class:`CalibrationInputError` with a message for the page.
        """
        if self.cached(sid, name) is not None:
            return
        path = self.resolve(name)
        if sid is None:
            return
        start = time.perf_counter()
        try:
            summaries = self.summarise(path, progress)
        except CalibrationInputError as exc:
            raise CalibrationInputError(self.relative(str(exc))) from None
        self.keep(sid, str(name), summaries, time.perf_counter() - start)

    def summarise(self, path: Path, progress: Progress) -> dict:
        """The per-model summaries of the files at ``path``, on the scheduler or streamed."""
        report = rows_progress(progress, self.where)
        if not self.on_cluster:
            from calibration_core.distributed.stream import stream_summaries

            return stream_summaries(str(path), progress=report)
        from calibration_core.distributed import dataset_summaries

        with self.engine() as where:
            return dataset_summaries(str(path), client=where["client"], progress=report)

    # ------------------------------------------------------------ equal-frequency bins
    def cached_frequency(self, sid: str | None, name: object, n_bins: int) -> dict | None:
        """The equal-frequency statistics of ``name`` at ``n_bins`` for ``sid``, or None.

        ``{model: {"confidence": BinStatistics, "classwise": BinStatistics}}``.
        """
        if sid is None or not isinstance(name, str):
            return None
        return self.results.get((sid, name, "frequency", int(n_bins)))

    def compute_frequency(
        self, sid: str | None, name: object, n_bins: int, progress: Progress
    ) -> None:
        """Exact equal-frequency bins of ``name`` at ``n_bins`` (four passes over the data).

        The dataset's statistics must be kept (their row counts fix the ranks).
        """
        entry = self.cached(sid, name)
        if entry is None or self.cached_frequency(sid, name, n_bins) is not None:
            return
        from calibration_core.distributed import frequency_statistics

        path = self.resolve(name)
        progress(0, 1, f"{n_bins} equal-frequency bins: four passes over the data {self.where}")
        with self.engine() as where:
            try:
                found = frequency_statistics(str(path), entry["summaries"], n_bins, **where)
            except CalibrationInputError as exc:
                raise CalibrationInputError(self.relative(str(exc))) from None
        progress(1, 1, f"{n_bins} equal-frequency bins computed")
        key = (sid, str(name), "frequency", int(n_bins))
        self.results.set(key, found, expire=self.ttl_seconds)

    # ------------------------------------------------------------ maps
    def cached_maps(self, sid: str | None, name: object) -> dict | None:
        """The last maps' comparison of ``name`` for ``sid``, or None.

        A dict: ``fit_id`` (new for every fit: it keys the page's memo of
        curves), ``maps`` (names), ``heldout`` (its description), ``models``
        (model name -> ``{"comparison", "info", "measures", "verdict",
        "hosmer_lemeshow"}``: the core's Comparison on the sample, its
        SampleInfo, ``measures_summary`` of the sample's uncalibrated rows, the
        comparison's Verdict and every calibrator's Hosmer-Lemeshow row) and
        ``seconds``.
        """
        if sid is None or not isinstance(name, str):
            return None
        return self.results.get((sid, name, "maps"))

    def fit_maps(
        self, sid: str | None, name: object, maps: tuple, heldout, progress: Progress
    ) -> None:
        """Cross-fit ``maps`` on a sample of every model of ``name`` (a job).

        The dataset's statistics are computed first when they are not kept.
        ``heldout``: the page's :class:`~app.settings.HeldOut` (folds or a split).
        """
        if not maps:
            raise CalibrationInputError(
                "no calibration map is picked: choose maps under Calibration maps, then press "
                "Fit maps on a sample."
            )
        self.compute(sid, name, progress)
        entry = self.cached(sid, name)
        if entry is None:
            return
        start = time.perf_counter()
        try:
            path, models = self.resolve(name), list(entry["summaries"])
            models = self.compare_models(path, models, maps, heldout, progress)
        except CalibrationInputError as exc:
            raise CalibrationInputError(self.relative(str(exc))) from None
        kept = {
            "fit_id": secrets.token_hex(8),
            "maps": tuple(maps),
            "heldout": heldout.describe(),
            "models": models,
            "seconds": time.perf_counter() - start,
        }
        self.results.set((sid, str(name), "maps"), kept, expire=self.ttl_seconds)

    def compare_models(self, path: Path, models: list, maps, heldout, progress: Progress) -> dict:
        """``{model: {"comparison", "info", "measures", "verdict", "hosmer_lemeshow"}}``.

        The maps are cross-fitted on each model's sample and the binning-free
        measures of its uncalibrated rows computed (seeded by the sample's
        seed), each as one task on the cluster (in the job's process on the
        streaming engine, on the same sample), as ``evaluate --engine dask
        --maps --measures``; then the comparison's verdict (here in the job,
        once), as that command computes it, and the uploads' Hosmer-Lemeshow card of
        every calibrator (:func:`app.dataset_diagnostics.sample_hosmer_lemeshow`).
        """
        from calibration_core.distributed import compare_maps_on_sample, run_on_sample
        from calibration_core.measures import measures_summary

        from .dataset_diagnostics import sample_hosmer_lemeshow

        done = {}
        with self.engine() as where:
            for i, model in enumerate(models):
                progress(
                    i,
                    len(models),
                    f"{model}: sampling up to {MAPS_SAMPLE_ROWS:,} rows and cross-fitting "
                    f"{', '.join(maps)} {self.where}, then its measures, verdict and "
                    "Hosmer-Lemeshow test",
                )
                found = compare_maps_on_sample(
                    str(path),
                    list(maps),
                    size=MAPS_SAMPLE_ROWS,
                    model=model,
                    **where,
                    **heldout.compare_kwargs(),
                )
                measures = run_on_sample(
                    measures_summary, found.sample, where.get("client"), seed=found.info.seed
                )
                done[model] = {
                    "comparison": found.comparison,
                    "info": found.info,
                    "measures": measures,
                    "verdict": found.comparison.verdict(),
                    "hosmer_lemeshow": sample_hosmer_lemeshow(found.comparison),
                }
        progress(len(models), len(models), "maps fitted")
        return done

    @property
    def on_cluster(self) -> bool:
        """Whether the jobs run on a Dask scheduler (else they stream in their own process)."""
        return self.address is not None

    @property
    def where(self) -> str:
        """Where the jobs compute, in words for their progress."""
        return "on the cluster" if self.on_cluster else "in this server"

    @property
    def place(self) -> str:
        """Where the datasets are computed, in words for the page's captions."""
        return "on the Dask cluster" if self.on_cluster else "streamed in this server"

    @contextlib.contextmanager
    def engine(self) -> Iterator[dict[str, Any]]:
        """Where the passes run, as keywords of the core's dataset functions.

        ``{"client": Client}`` on the scheduler (closed on exit; workers that
        kept dying are the page's :func:`killed_error`), or ``{"passes":
        InProcessPasses()}`` without one (the streaming engine: in this process,
        no Dask imported).
        """
        if not self.on_cluster:
            from calibration_core.distributed.frequency import InProcessPasses

            yield {"passes": InProcessPasses()}
            return
        client = self.client()
        from distributed import KilledWorker

        with client:
            try:
                yield {"client": client}
            except KilledWorker as exc:
                raise killed_error(exc) from None

    def client(self):
        """A ``distributed.Client`` of the scheduler (the page is told when it is out of reach)."""
        from calibration_core.distributed import require_dask

        try:
            require_dask()
        except ImportError as exc:
            raise CalibrationInputError(f"this server cannot compute datasets: {exc}") from None
        from distributed import Client

        security = dask_security(self.address)
        try:
            return Client(self.address, timeout=f"{CONNECT_SECONDS}s", security=security)
        except OSError as exc:
            raise CalibrationInputError(
                f"the Dask scheduler at {self.address} cannot be reached ({exc}); try again "
                "later, or ask the operator to check DASK_SCHEDULER_ADDRESS."
            ) from None

    def relative(self, message: str) -> str:
        """``message`` with file paths shown relative to ``DATASETS_DIR``."""
        message = message.replace(str(self.root) + os.sep, "")
        try:  # the listed paths are resolved: a DATASETS_DIR behind a link shows as its target
            return message.replace(str(self.root.resolve(strict=True)) + os.sep, "")
        except (OSError, RuntimeError):
            return message


def killed_error(exc) -> CalibrationInputError:
    """The page's message when the cluster's workers kept dying on a task."""
    return CalibrationInputError(
        f"the cluster's workers died repeatedly while computing {exc.task!r} (out "
        "of memory, or killed); ask the operator for more worker memory or smaller "
        "row groups."
    )


def rows_progress(progress: Progress, where: str = "on the cluster") -> Callable[[int, int], None]:
    """``progress(done, total)`` in rows, reported at most once per whole percent.

    ``where``: where the rows are summarised, in words (:attr:`Datasets.where`).
    """
    last = [-1]

    def report(done: int, total: int) -> None:
        percent = 100 * done // max(total, 1)
        if percent == last[0] and done < total:
            return
        last[0] = percent
        progress(done, total, f"{done:,} of {total:,} rows summarised {where}")

    return report
