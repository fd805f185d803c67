"""Apply a deployable map to a predictions file, streaming: :func:`apply_map_to_file`.

Input: CSV/TSV (also ``.gz``), Parquet or NPZ, with the column conventions of
:func:`~calibration_core.load_predictions` (``p_<class>``/``logit_<class>``
columns or one ``score`` column; NPZ keys ``probs``/``logits``). Labels are
not needed. Output (chosen by the output's extension): CSV/TSV, Parquet or
NPZ. Every other column (ids, labels, features) is kept as it is; the
prediction columns are replaced, in place, by the calibrated probabilities
``p_<class>`` (``score`` for a ``score`` input), so that the output is itself
a predictions file.

CSV and Parquet are streamed in batches: memory stays bounded by the batch
size whatever the file size. In CSV input the columns other than the
predictions are read as text (a batch cannot change their type half-way, and
the output keeps them exactly as written). NPZ archives are read and written
whole (the format has no streaming), and keep only their 1-D arrays of N rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..errors import CalibrationInputError
from ..io.checks import Context
from ..io.columns import LABEL_CANDIDATES, MODEL_COLUMN, SCORE_COLUMN, prediction_columns
from ..io.npz import CLASS_NAMES_KEY, LOGIT_KEY, PROB_KEYS
from ..io.readers import open_stream, parquet_damaged, text_options
from ..io.source import resolve_source
from .document import DeployableMap

#: ``progress(done, total, unit)``: bytes of a CSV, rows of Parquet/NPZ; total may be None.
Progress = Callable[[int, int | None, str], None]
OUTPUT_KINDS = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}
OUTPUT_KINDS[".npz"] = "npz"
CSV_BLOCK_BYTES = 1 << 22  # 16 MB blocks: 928 MB peak RSS on 2 GB, 4 MB: 407 MB
PARQUET_BATCH_ROWS = 1 << 17


# ------------------------------------------------------------------ columns
def output_names(class_names, score: bool) -> list[str]:
    """Names of the calibrated columns: ``score`` for a score input, else ``p_<class>``.

    The layout rule of every writer of calibrated predictions (this module's
    :func:`apply_map_to_file`, the dashboard's calibrated export): a binary
    ``score`` input stays one ``score`` column, and probabilities or logits
    become one ``p_<class>`` probability column per class.
    """
    return [SCORE_COLUMN] if score else [f"p_{c}" for c in class_names]


def output_arrays(calibrated: np.ndarray, score: bool) -> list[pa.Array]:
    """The calibrated (n, K) probabilities as the columns :func:`output_names` names."""
    return [pa.array(calibrated[:, 1])] if score else [pa.array(c) for c in calibrated.T]


def text_writer(sink, schema: pa.Schema, delimiter: str = ",") -> pacsv.CSVWriter:
    """The CSV (or TSV) writer of calibrated predictions, on a path or a binary file object.

    Numbers are written as Arrow writes float64 (shortest round-trip text), and
    only cells that need quotes get them.
    """
    options = pacsv.WriteOptions(delimiter=delimiter, quoting_style="needed")
    return pacsv.CSVWriter(sink, schema, write_options=options)


class Layout:
    """Where the prediction columns are and how the calibrated ones replace them.

    Parameters
    ----------
    names : list of str
        The input's column names.
    deployable : DeployableMap
    display : str
        The input, for messages.
    """

    def __init__(self, names: list[str], deployable: DeployableMap, display: str) -> None:
        skip = {i for i, n in enumerate(names) if n.lower() in (*LABEL_CANDIDATES, MODEL_COLUMN)}
        kind, idx, classes = prediction_columns(names, skip, Context(display))
        self.score = kind == "score"
        _check_kind("probs" if self.score else kind, deployable, display, names[idx[0]])
        self.order = _class_order(list(idx), list(classes), deployable, display)
        self.names = names
        self.first, self.dropped = min(idx), set(idx)
        wanted = deployable.class_names or classes
        self.out_names = output_names(wanted, self.score)

    def matrix(self, batch: pa.RecordBatch, offset: int, display: str) -> np.ndarray:
        """The (n, K) prediction matrix of a batch, in the map's class order."""
        cols = []
        for i in self.order:
            col = batch.column(i)
            if col.null_count:
                bad = np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[:5] + offset
                raise CalibrationInputError(
                    f"column {self.names[i]!r} of {display} has missing values at data rows "
                    f"{', '.join(str(r + 1) for r in bad)} (1-based); fill or drop those rows."
                )
            cols.append(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False))
        mat = np.column_stack(cols)
        return np.column_stack([1.0 - mat[:, 0], mat[:, 0]]) if self.score else mat

    def output(self, batch: pa.RecordBatch, calibrated: np.ndarray) -> pa.RecordBatch:
        """The batch with its prediction columns replaced by the calibrated ones."""
        arrays, names = [], []
        for i, name in enumerate(self.names):
            if i == self.first:
                arrays += output_arrays(calibrated, self.score)
                names += self.out_names
            if i not in self.dropped:
                arrays.append(batch.column(i))
                names.append(name)
        return pa.RecordBatch.from_arrays(arrays, names=names)


def _check_kind(kind: str, deployable: DeployableMap, display: str, column: str) -> None:
    if kind == deployable.input:
        return
    if deployable.input == "logits":
        raise CalibrationInputError(
            f"the map reads logits, but {display} holds probabilities (column {column!r}); "
            "give it logit_<class> columns (the model's raw scores), or fit a map on "
            "probabilities."
        )
    raise CalibrationInputError(
        f"the map reads probabilities, but {display} holds logits (column {column!r}); these "
        "look like logits: give it p_<class> probability columns, or fit a map on logits."
    )


def _class_order(idx: list[int], classes: list[str], deployable, display) -> list[int]:
    """Column indices in the map's class order (matched by name when the map has names)."""
    k = deployable.n_classes
    if len(idx) != k and not (len(idx) == 1 and k == 2):
        raise CalibrationInputError(
            f"the map was fitted on {k} classes but {display} has {len(idx)} prediction "
            "columns; apply it to predictions of the same model and classes."
        )
    names = deployable.class_names
    if names is None or len(idx) == 1:
        return idx
    if sorted(names) != sorted(classes):
        missing = [c for c in names if c not in classes][:5]
        extra = [c for c in classes if c not in names][:5]
        raise CalibrationInputError(
            f"the classes of {display} do not match the map's: missing {missing}, unknown "
            f"{extra}; the columns must be named after the map's classes "
            f"({', '.join(names[:10])}{', ...' if k > 10 else ''})."
        )
    position = dict(zip(classes, idx, strict=True))
    return [position[c] for c in names]


# ------------------------------------------------------------------- inputs
def _text_batches(src, progress: Progress | None) -> Iterator[pa.RecordBatch]:
    read_options, parse_options = text_options(src, None, CSV_BLOCK_BYTES)
    with pacsv.open_csv(
        open_stream(src), read_options=read_options, parse_options=parse_options
    ) as probe:
        raw = probe.schema.names
    stripped = [n.strip() for n in raw]
    skip = {i for i, n in enumerate(stripped) if n.lower() in (*LABEL_CANDIDATES, MODEL_COLUMN)}
    _, idx, _ = prediction_columns(stripped, skip, Context(src.display))
    types = {n: (pa.float64() if i in idx else pa.string()) for i, n in enumerate(raw)}
    # A plain file stream, not the loader's memory map: mapped pages of a file read once
    # would count in the resident set and grow it to the file's size.
    raw = pa.OSFile(str(src.path))
    stream = pa.CompressedInputStream(raw, "gzip") if src.gzipped else raw
    total = os.path.getsize(src.path)
    reader = pacsv.open_csv(
        stream,
        read_options=read_options,
        parse_options=parse_options,
        convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False),
    )
    with raw, reader:
        for batch in reader:
            if progress is not None:
                progress(raw.tell(), total, "bytes")
            yield batch.rename_columns(stripped)


def _parquet_batches(src, progress: Progress | None) -> Iterator[pa.RecordBatch]:
    try:
        pf = pq.ParquetFile(src.file_arg())
    except (pa.ArrowException, OSError):
        raise parquet_damaged(src, "its footer (the table of contents at its end)") from None
    done, total = 0, pf.metadata.num_rows
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS):
        done += batch.num_rows
        if progress is not None:
            progress(done, total, "rows")
        yield batch


def _npz_batch(src, deployable: DeployableMap) -> pa.RecordBatch:
    """An NPZ archive as one batch with ``p_``/``logit_`` columns and its 1-D arrays."""
    with np.load(src.file_arg(), allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}
    lower = {key.lower(): key for key in arrays}
    wanted = (LOGIT_KEY,) if deployable.input == "logits" else PROB_KEYS
    other = PROB_KEYS if deployable.input == "logits" else (LOGIT_KEY,)
    key = next((lower[k] for k in wanted if k in lower), None)
    if key is None:
        found = next((lower[k] for k in other if k in lower), None)
        kind = "logits" if deployable.input == "logits" else "probabilities"
        raise CalibrationInputError(
            f"the map reads {kind}, but {src.display} has no {' or '.join(map(repr, wanted))} "
            f"array{f' (it has {found!r})' if found else ''}; save the {kind} under "
            f"{wanted[0]!r}."
        )
    mat = np.asarray(arrays.pop(key))
    mat = mat[:, None] if mat.ndim == 1 else mat
    names = arrays.pop(lower.get(CLASS_NAMES_KEY, CLASS_NAMES_KEY), None)
    names = deployable.class_names if names is None else [str(n) for n in names]
    if mat.shape[1] == 1:
        cols = {SCORE_COLUMN: mat[:, 0]}
    else:
        prefix = "logit_" if deployable.input == "logits" else "p_"
        names = names if names is not None else [str(j) for j in range(mat.shape[1])]
        cols = {f"{prefix}{c}": mat[:, j] for j, c in enumerate(names[: mat.shape[1]])}
        if len(cols) != mat.shape[1]:
            raise CalibrationInputError(
                f"{src.display} has {mat.shape[1]} prediction columns but its class names "
                f"or the map's name {len(names)} classes; apply the map to predictions of "
                "the same classes."
            )
    n = mat.shape[0]
    extra = {k: v for k, v in arrays.items() if v.ndim == 1 and len(v) == n}
    return pa.RecordBatch.from_pydict({**cols, **extra})


# ------------------------------------------------------------------ outputs
class _NpzSink:
    """Collects the calibrated batches and writes one NPZ archive at the end."""

    def __init__(self, path: Path, layout: Layout) -> None:
        self.path, self.layout = path, layout
        self.batches: list[pa.RecordBatch] = []

    def write_batch(self, batch: pa.RecordBatch) -> None:
        self.batches.append(batch)

    def close(self) -> None:
        table = pa.Table.from_batches(self.batches)
        out = {}
        probs = [table.column(n).to_numpy() for n in self.layout.out_names]
        out["probs"] = np.column_stack(probs) if len(probs) > 1 else probs[0]
        if not self.layout.score:
            out[CLASS_NAMES_KEY] = np.array([n[2:] for n in self.layout.out_names], dtype=str)
        for name in table.column_names:
            if name not in self.layout.out_names:
                col = table.column(name)
                if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                    out[name] = np.array(col.fill_null("").to_pylist(), dtype=str)
                else:
                    out[name] = col.to_numpy()
        with self.path.open("wb") as fh:
            # numpy >= 2.1's stubs match **out against allow_pickle, which numpy 1.24 would
            # store as an array: not passed.
            np.savez(fh, **out)  # type: ignore[arg-type]


def _output_kind(path: Path) -> str:
    kind = OUTPUT_KINDS.get(path.suffix.lower())
    if kind is None:
        raise CalibrationInputError(
            f"cannot write {path.name!r}: the output must end in .csv, .tsv, .parquet or .npz."
        )
    return kind


def _sink(path: Path, schema: pa.Schema, layout: Layout):
    kind = _output_kind(path)
    if kind == "npz":
        return _NpzSink(path, layout)
    if kind == "parquet":
        return pq.ParquetWriter(str(path), schema)
    return text_writer(str(path), schema, "\t" if kind == "tsv" else ",")


def _finish(sink, path: Path, done: bool) -> None:
    """Close the output; remove it when the run failed, so no partial file is left."""
    if sink is None:
        return
    if done or not isinstance(sink, _NpzSink):
        sink.close()
    if not done:
        path.unlink(missing_ok=True)


# ---------------------------------------------------------------------- run
def _batches(src, deployable, progress) -> Iterator[pa.RecordBatch]:
    if src.kind == "npz":
        batch = _npz_batch(src, deployable)
        if progress is not None:
            progress(batch.num_rows, batch.num_rows, "rows")
        return iter([batch])
    if src.kind == "parquet":
        return _parquet_batches(src, progress)
    return _text_batches(src, progress)


def _calibrate(deployable, layout, batch, offset: int, display: str) -> np.ndarray:
    matrix = layout.matrix(batch, offset, display)
    try:
        return deployable.map.predict_proba(matrix)
    except CalibrationInputError as exc:
        last = offset + batch.num_rows
        raise CalibrationInputError(
            f"in data rows {offset + 1}-{last} (1-based) of {display}: {exc}"
        ) from None


def apply_map_to_file(
    deployable: DeployableMap, source, output, *, progress: Progress | None = None
) -> int:
    """Calibrate every row of a predictions file and write the result.

    Parameters
    ----------
    deployable : DeployableMap
        From :func:`~calibration_core.deploy.load_deployable`.
    source : str or os.PathLike
        CSV/TSV (also ``.gz``), Parquet or NPZ predictions (labels optional).
    output : str or os.PathLike
        ``.csv``, ``.tsv``, ``.parquet`` or ``.npz``; written as the input is read.
    progress : callable, optional
        Called after each batch with ``(done, total, unit)``.

    Returns
    -------
    int
        The number of rows written.
    """
    src = resolve_source(source)
    out_path = Path(output)
    _output_kind(out_path)
    if out_path.resolve() == Path(source).resolve():
        raise CalibrationInputError(
            f"the output {out_path.name!r} is the input file; write to another file."
        )
    sink, layout, rows, done = None, None, 0, False
    try:
        for batch in _batches(src, deployable, progress):
            if layout is None:
                layout = Layout(batch.schema.names, deployable, src.display)
            calibrated = _calibrate(deployable, layout, batch, rows, src.display)
            result = layout.output(batch, calibrated)
            if sink is None:
                sink = _sink(out_path, result.schema, layout)
            sink.write_batch(result)
            rows += batch.num_rows
        done = True
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CalibrationInputError(
            f"{src.display} cannot be read after data row {rows} ({exc}); check the file "
            "(a non-number in a prediction column, a row with too many fields)."
        ) from None
    finally:
        _finish(sink, out_path, done)
    if sink is None:
        raise CalibrationInputError(f"{src.display} has no data rows; nothing was written.")
    return rows
