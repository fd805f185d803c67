"""Parse each upload in a child process under memory and CPU-time limits.

Why
    The loader bounds what it decodes (:mod:`calibration_core.io.budget`), but
    it trusts a Parquet file's footer and page headers for one batch (65,536
    rows) before it can count what the batch decoded, and a bug in a parser
    (pyarrow's CSV or Parquet reader, pandas) could allocate without bound. In
    the web worker that memory is shared with the requests of other users
    (gunicorn's threads) and, once freed, rarely returned to the system. In
    a child of its own a parse can take at most ``PARSE_MEMORY_LIMIT_MB`` of
    address space (``RLIMIT_AS``) and ``PARSE_TIME_LIMIT_SECONDS`` of CPU time
    (``RLIMIT_CPU``); past either it fails, the user is told so, and the worker
    has not grown.
How
    Everything that reads the uploaded bytes runs in the child
    (:func:`parse_upload`: the expansion checks of :mod:`app.upload.guard`, the
    loader, the class limit, the soft labels). Children come from
    :mod:`multiprocessing`'s *forkserver*: a single-threaded process, started
    with :data:`PRELOAD` imported (:meth:`UploadParser.start`, when a server
    warms up; else at the first upload), forks one fresh child per upload. A
    plain ``fork()`` of the threaded web worker could leave the child waiting
    for a lock another thread held (SQLite's, the import lock, logging's).
    The child receives the uploaded file's descriptor (the file is never
    copied), routes Arrow's buffers through ``malloc`` and starts Arrow's
    thread pools with a tiny read (:func:`_prepare_arrow`), then sets its
    limits relative to its address space at that point (so the limit counts
    what the parse adds, not the interpreter and the libraries), parses, and
    sends the arrays back over a socket pair as raw bytes behind a JSON
    header (never a pickle: a child whose parser was subverted could send
    code), which the web worker turns into read-only arrays.
Failures
    A file the loader refuses keeps the loader's message. A child that runs
    out of memory (a ``MemoryError``, also behind a loader message, or a
    death by signal, e.g. Arrow aborting when an allocation fails), or out of
    time (``SIGXCPU``, or the worker stops waiting after as long in wall-clock time)
    gives :class:`ParseLimitExceeded` with a message naming the limit.
    Another error in the child is logged with its traceback
    (:class:`ParserCrashed`). Nothing already stored is touched.
Cost
    About 0.1 s per upload (a fork of the forkserver and the allocator's warm
    up), plus 0.3 s per 100 MB of arrays sent back (BENCHMARKS.md, "Hostile
    uploads"). The forkserver itself keeps about 110 MB of memory per web
    worker.
The notebook
    :func:`app.notebook.show` parses in the kernel (``in_process``): a
    forkserver and its children import the ``__main__`` script again
    (multiprocessing's spawn preparation), so a script calling ``show()``
    without an ``if __name__ == "__main__":`` guard would run it again there.
    The notebook serves one local user their own files; the size, expansion,
    decoded-bytes and class checks hold, the child's rlimits do not.
"""

from __future__ import annotations

import io
import json
import logging
import multiprocessing
import os
import resource
import signal
import threading
import traceback
from dataclasses import dataclass
from multiprocessing import forkserver, reduction
from multiprocessing.connection import Connection

import numpy as np

from calibration_core import CalibrationInputError, Predictions
from calibration_core.predictions import with_extra

from ..store.extra_columns import (
    KIND_DTYPES,
    EncodedColumn,
    decode_extra,
    encode_extra,
    parse_categories,
    received_column,
)
from ..store.soft_label_store import read_upload_soft_labels
from .guard import DECODED_FACTOR, check_expansion, decoded_limit

log = logging.getLogger("calibration_dashboard.upload")

#: Imported once by the forkserver, so that no child imports them.
PRELOAD = (
    "pandas",
    "pyarrow.csv",
    "pyarrow.parquet",
    "calibration_core.io",
    "calibration_core.io.soft_labels",
    "app.upload.parser",
)
#: Address space a parse may add by default on top of the decoded-data bound (MB).
MEMORY_HEADROOM_MB = 256
#: Dtypes of the arrays a child may send back (float64 probabilities, intp labels).
ARRAY_DTYPES = ("<f8", "<i8")
#: Dtypes of the file's other columns (:mod:`app.store.extra_columns`).
EXTRA_DTYPES = tuple(d for dtypes in KIND_DTYPES.values() for d in dtypes)
#: Largest JSON header a child may send (names of up to 25,000 classes, ...).
MAX_HEADER_BYTES = 64 << 20


def load_with_notices(*args, **kwargs):
    """:func:`calibration_core.io.load_with_notices` (imported on first use: pandas, pyarrow)."""
    from calibration_core.io import load_with_notices as load

    return load(*args, **kwargs)


def default_memory_limit_mb(max_upload_mb: int) -> int:
    """``PARSE_MEMORY_LIMIT_MB`` when unset: the decoded-data bound plus a headroom.

    The loader decodes at most ``DECODED_FACTOR x MAX_UPLOAD_MB`` (1.6 GB at
    200 MB); :data:`MEMORY_HEADROOM_MB` covers the readers' own buffers.
    """
    return DECODED_FACTOR * max_upload_mb + MEMORY_HEADROOM_MB


@dataclass(frozen=True)
class ParseLimits:
    """What one parse may cost (from the configuration).

    Attributes
    ----------
    upload_bytes : int
        ``MAX_UPLOAD_MB`` in bytes (the expansion checks, the decoded bound).
    max_classes : int
        ``MAX_CLASSES``.
    memory_mb : int
        ``PARSE_MEMORY_LIMIT_MB``: address space the parse may add.
    cpu_seconds : int
        ``PARSE_TIME_LIMIT_SECONDS``: CPU time of the child, and the
        wall-clock time the worker waits for it.
    concurrency : int
        ``PARSE_CONCURRENCY``: parses one web worker runs at once. An upload
        beyond it waits for a free slot (at most ``cpu_seconds``), so one
        worker's parses take at most ``concurrency x memory_mb``.
    """

    upload_bytes: int
    max_classes: int
    memory_mb: int
    cpu_seconds: int
    concurrency: int = 2


@dataclass(frozen=True)
class LoadOptions:
    """The user's loading options of one upload (the page's switch and picker).

    Attributes
    ----------
    renormalize : bool
        Divide probability rows by their sums ("renormalise rows").
    label_column : str or None
        The column holding the true classes; None: the loader's default names.
    """

    renormalize: bool = False
    label_column: str | None = None


@dataclass(frozen=True)
class ParsedUpload:
    """What a file holds: its models, the soft labels of those that have them, and notices.

    ``notices`` are the loader's notes for the user (e.g. rows renormalised).
    """

    predictions: list[Predictions]
    soft_labels: dict[str, np.ndarray]
    notices: tuple[str, ...] = ()


class ParseLimitExceeded(CalibrationInputError):
    """A parse that needed more memory or CPU time than allowed (message for the user)."""


class ParserBusy(CalibrationInputError):
    """No parse slot of the worker freed up while the upload waited (message for the user)."""


class ParserCrashed(RuntimeError):
    """An unexpected error in the parsing child; the message holds its traceback."""


# ------------------------------------------------------------ the parse itself
def check_classes(preds: list[Predictions], max_classes: int) -> None:
    """Refuse a file with a model of more than ``max_classes`` classes (``MAX_CLASSES``).

    The core keeps no such limit; on a shared server every class costs sorted
    scores and a row in the class views, so the operator sets the bound.
    """
    for pred in preds:
        if pred.n_classes > max_classes:
            raise CalibrationInputError(
                f"model {pred.name!r} has {pred.n_classes:,} classes; this server accepts at "
                f"most {max_classes:,} per model (MAX_CLASSES). Keep the frequent classes and "
                "merge the rest into an 'other' column, or ask the operator to raise MAX_CLASSES."
            )


def parse_upload(
    stream, name: str, limits: ParseLimits, options: LoadOptions = LoadOptions()
) -> ParsedUpload:
    """Check, load and validate one uploaded file (what the child runs; no limits set here).

    Parameters
    ----------
    stream : binary file-like, seekable
    name : str
        The cleaned file name (format detection, messages).
    limits : ParseLimits
    options : LoadOptions
        The user's loading options.

    Raises
    ------
    CalibrationInputError
        The loader's or the guards' message for a file that cannot be used.
    """
    check_expansion(stream, name, limits.upload_bytes)  # compressed bombs, huge widths
    bound = decoded_limit(limits.upload_bytes)
    preds, notices = load_with_notices(
        stream,
        file_name=name,
        max_decoded_bytes=bound,
        renormalize=options.renormalize,
        label_column=options.label_column,
    )
    check_classes(preds, limits.max_classes)
    soft = read_upload_soft_labels(stream, name, preds, bound)
    return ParsedUpload(preds, soft, tuple(notices))


# ------------------------------------------------------------------ the child
def _address_space() -> int | None:
    """This process's address space in bytes (Linux ``VmSize``); None where unknown."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _prepare_arrow() -> None:
    """Route Arrow's buffers through ``malloc``, then start its thread pools with a tiny read.

    Arrow's default allocator (mimalloc) reserves 1 GiB of addresses at its
    first use and places buffers inside: ``RLIMIT_AS`` would not see them.
    With the system allocator every table Arrow builds for the loader counts.
    Some of Arrow's internal allocations still go to mimalloc, whose
    reservation the tiny read makes now, before the limits are set, together
    with the thread pools' stacks: a limit set first would make them fail,
    and Arrow aborts the process when some allocations fail.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    pa.set_memory_pool(pa.system_memory_pool())
    pacsv.read_csv(io.BytesIO(b"a,b\n0.5,x\n" * 64))
    buf = io.BytesIO()
    pq.write_table(pa.table({"a": [0.5] * 64}), buf)
    pq.read_table(pa.BufferReader(buf.getvalue()))


def _set_limits(limits: ParseLimits) -> None:
    """``RLIMIT_AS`` (Linux; elsewhere the address space is unknown) and ``RLIMIT_CPU``."""
    space = _address_space()
    if space is not None:
        space += limits.memory_mb * (1 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (space, space))
    # SIGXCPU at the soft limit ends the process (nothing here handles it).
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))


def _out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised while handling, a ``MemoryError``.

    The loader turns Arrow's errors into messages about the file; one caused
    by a failed allocation must not tell the user that the file is malformed.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, MemoryError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _send(conn: Connection, header: dict, arrays=()) -> None:
    conn.send_bytes(json.dumps(header).encode())
    for arr in arrays:  # arrays as their bytes (a datetime64 array has no buffer of its own)
        conn.send_bytes(arr.reshape(-1).view(np.uint8) if isinstance(arr, np.ndarray) else arr)


def _array_spec(arr: np.ndarray) -> dict:
    return {"dtype": arr.dtype.str, "shape": list(arr.shape)}


def _send_parsed(conn: Connection, parsed: ParsedUpload) -> None:
    """The models as a JSON header (names, array dtypes and shapes), then the arrays' bytes.

    After a model's own arrays come its other columns (:mod:`app.store.extra_columns`):
    each column's array, then, for a text column, its categories as JSON bytes.
    """
    models, arrays = [], []
    for pred in parsed.predictions:
        own = {"probs": pred.probs, "labels": pred.labels}
        if pred.logits is not None:
            own["logits"] = pred.logits
        if (soft := parsed.soft_labels.get(pred.name)) is not None:
            own["soft"] = np.asarray(soft, dtype=np.float64)
        own = {key: np.ascontiguousarray(arr) for key, arr in own.items()}
        specs = {key: _array_spec(arr) for key, arr in own.items()}
        extra = encode_extra(pred.extra)
        models.append(
            {
                "name": pred.name,
                "classes": list(pred.class_names),
                "score_column": pred.score_column,
                "arrays": specs,
                "extra": [{**col.header(), **_array_spec(col.values)} for col in extra],
            }
        )
        arrays.extend(own.values())
        for col in extra:
            arrays.append(col.values)
            if col.kind == "text":
                arrays.append(col.categories_bytes())
    _send(conn, {"kind": "ok", "models": models, "notices": list(parsed.notices)}, arrays)


def _refusal(exc: CalibrationInputError) -> dict:
    """The header of a refused file: the message and its remedy (for the page's phrasing)."""
    return {
        "kind": "refused",
        "message": exc.detail,
        "remedy": exc.remedy,
        "columns": list(exc.columns),
    }


def run_child(conn: Connection, name: str, limits: ParseLimits, options: LoadOptions) -> None:
    """The child's entry point: receive the file, set the limits, parse, send the result."""
    fd = reduction.recv_handle(conn)
    _prepare_arrow()
    _set_limits(limits)
    try:
        with os.fdopen(fd, "rb") as stream:
            parsed = parse_upload(stream, name, limits, options)
    except Exception as exc:
        if _out_of_memory(exc):
            _send(conn, {"kind": "memory"})
        elif isinstance(exc, CalibrationInputError):
            _send(conn, _refusal(exc))
        else:
            _send(conn, {"kind": "error", "traceback": traceback.format_exc()})
        return
    _send_parsed(conn, parsed)


# ----------------------------------------------------------------- the parent
def _receive_array(
    conn: Connection, spec: dict, budget: list[int], dtypes=ARRAY_DTYPES
) -> np.ndarray:
    dtype, shape = spec["dtype"], tuple(int(n) for n in spec["shape"])
    if dtype not in dtypes or any(n < 0 for n in shape):
        raise ParserCrashed(f"the parser sent an array of {dtype} {shape}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    budget[0] -= nbytes
    if budget[0] < 0:
        raise ParserCrashed("the parser sent more data than the decoded-data bound")
    buf = bytearray(nbytes)
    if conn.recv_bytes_into(buf) != nbytes:
        raise ParserCrashed(f"the parser sent a short array ({dtype} {shape})")
    arr = np.frombuffer(buf, dtype=dtype).reshape(shape)
    arr.flags.writeable = False
    return arr


def _receive_extra(conn: Connection, spec: dict, n: int, budget: list[int]) -> EncodedColumn:
    """One other column of a model (its array, and the categories of a text column), checked.

    The categories count against the decoded-data bound like the arrays.
    """
    if [int(d) for d in spec.get("shape", ())] != [n]:
        raise ParserCrashed(f"the parser sent column {spec.get('name')!r} of another length")
    values = _receive_array(conn, spec, budget, EXTRA_DTYPES)
    categories: tuple[str, ...] = ()
    try:
        if spec.get("kind") == "text":
            raw = conn.recv_bytes(max(budget[0], 1))
            budget[0] -= len(raw)
            categories = parse_categories(raw, int(spec["n_categories"]), str(spec["name"]))
        return received_column(spec, values, categories)
    except (CalibrationInputError, OSError) as exc:  # OSError: longer than the bound
        raise ParserCrashed(f"the parser sent a bad column: {exc}") from None


def _receive_parsed(conn: Connection, header: dict, max_bytes: int) -> ParsedUpload:
    preds, soft, budget = [], {}, [max_bytes]
    for model in header["models"]:
        arrays = {key: _receive_array(conn, spec, budget) for key, spec in model["arrays"].items()}
        pred = Predictions(
            probs=arrays["probs"],
            labels=arrays["labels"],
            class_names=tuple(str(c) for c in model["classes"]),
            logits=arrays.get("logits"),
            name=str(model["name"]),
            score_column=model.get("score_column") is True,
        )
        n = pred.n_samples
        extra = [_receive_extra(conn, spec, n, budget) for spec in model.get("extra", ())]
        if extra:
            pred = with_extra(pred, decode_extra(extra))
        preds.append(pred)
        if "soft" in arrays:
            soft[pred.name] = arrays["soft"]
    return ParsedUpload(preds, soft, tuple(str(n) for n in header.get("notices", ())))


class UploadParser:
    """Parses uploads in children of a forkserver, under :class:`ParseLimits`.

    Parameters
    ----------
    limits : ParseLimits
    in_process : bool
        Parse in this process instead (the notebook's dashboard, one local user
        uploading their own files): a forkserver child imports the ``__main__``
        script again (multiprocessing's spawn preparation), so a script calling
        :func:`app.notebook.show` without an ``if __name__ == "__main__":`` guard
        would run ``show()`` again in it. The size, expansion, decoded-bytes and
        class checks still hold; lost are the child's memory and CPU limits
        (``PARSE_MEMORY_LIMIT_MB``, ``PARSE_TIME_LIMIT_SECONDS``) and its isolation
        (a parse that exhausts memory takes the kernel with it).
    """

    def __init__(self, limits: ParseLimits, in_process: bool = False) -> None:
        self.limits = limits
        self.in_process = in_process
        self._slots = threading.BoundedSemaphore(limits.concurrency)
        self._mp = multiprocessing.get_context("forkserver")
        self._mp.set_forkserver_preload(list(PRELOAD))

    def start(self) -> None:
        """Start the forkserver now (it imports :data:`PRELOAD` in the background).

        Safe from a threaded process (the forkserver is a fresh interpreter,
        started with ``posix_spawn``-like fork and exec); servers call it when
        they warm up so that the first upload does not wait for the imports.
        Nothing to start when parsing in process.
        """
        if not self.in_process:
            forkserver.ensure_running()

    def memory_message(self) -> str:
        """What the user reads when a parse runs out of memory."""
        return (
            f"this file needs more than {self.limits.memory_mb:,} MB of memory to parse, the "
            "most one upload may take here (PARSE_MEMORY_LIMIT_MB). Split it into smaller "
            "files and keep only the prediction, label and model columns, or ask the operator "
            "to raise PARSE_MEMORY_LIMIT_MB. Nothing already loaded was changed."
        )

    def time_message(self) -> str:
        """What the user reads when a parse runs out of time."""
        return (
            f"this file took more than {self.limits.cpu_seconds} s to parse, the "
            "most one upload may take here (PARSE_TIME_LIMIT_SECONDS). Split it into smaller "
            "files, or ask the operator to raise PARSE_TIME_LIMIT_SECONDS. Nothing already "
            "loaded was changed."
        )

    def busy_message(self) -> str:
        """What the user reads when no parse slot freed up in time."""
        return (
            f"the server is parsing {self.limits.concurrency} other upload(s) and none finished "
            f"within {self.limits.cpu_seconds} s (PARSE_CONCURRENCY). Try again in a minute. "
            "Nothing already loaded was changed."
        )

    def parse(self, stream, name: str, options: LoadOptions = LoadOptions()) -> ParsedUpload:
        """Parse one received file (a real file: it needs a descriptor) in a fresh child
        (or in this process: ``in_process``).

        ``options`` are the user's loading options (:class:`LoadOptions`).

        At most ``limits.concurrency`` parses run at once in this process;
        another upload waits for a slot (at most ``limits.cpu_seconds``).

        Raises
        ------
        CalibrationInputError
            The loader's message, :class:`ParseLimitExceeded` or :class:`ParserBusy`.
        ParserCrashed
            An unexpected error in the child (its traceback in the message).
        """
        if not self._slots.acquire(timeout=self.limits.cpu_seconds):
            log.warning("upload parser: no free slot after %s s", self.limits.cpu_seconds)
            raise ParserBusy(self.busy_message())
        try:
            if self.in_process:
                return parse_upload(stream, name, self.limits, options)
            return self._parse_in_child(stream, name, options)
        finally:
            self._slots.release()

    def _parse_in_child(self, stream, name: str, options: LoadOptions) -> ParsedUpload:
        conn, child_conn = self._mp.Pipe(duplex=True)  # a socket pair: it can pass descriptors
        proc = self._mp.Process(
            target=run_child, args=(child_conn, name, self.limits, options), name="upload-parser"
        )
        proc.start()
        child_conn.close()
        try:
            reduction.send_handle(conn, stream.fileno(), proc.pid)
            return self._result(conn, proc)
        finally:
            conn.close()
            if proc.is_alive():
                proc.kill()
            proc.join()
            proc.close()

    def _result(self, conn: Connection, proc) -> ParsedUpload:
        if not conn.poll(self.limits.cpu_seconds):
            proc.kill()
            log.warning("upload parser %s: no answer after %s s, stopped", proc.pid,
                        self.limits.cpu_seconds)  # fmt: skip
            raise ParseLimitExceeded(self.time_message())
        try:
            header = json.loads(conn.recv_bytes(MAX_HEADER_BYTES))
        except EOFError:
            raise self._death(proc) from None
        kind = header.get("kind")
        if kind == "ok":
            try:
                return _receive_parsed(conn, header, decoded_limit(self.limits.upload_bytes))
            except (EOFError, OSError):  # the child died while sending
                raise self._death(proc) from None
        if kind == "refused":
            raise CalibrationInputError(
                str(header["message"]),
                remedy=header.get("remedy"),
                columns=header.get("columns") or (),
            )
        if kind == "memory":
            log.warning("upload parser %s: out of memory (%s MB)", proc.pid, self.limits.memory_mb)
            raise ParseLimitExceeded(self.memory_message())
        raise ParserCrashed(f"the upload parser failed:\n{header.get('traceback', header)}")

    def _death(self, proc) -> Exception:
        """The error for a child that ended without an answer (killed by a signal)."""
        proc.join()
        code = proc.exitcode
        log.warning("upload parser %s ended with status %s", proc.pid, code)
        if code == -signal.SIGXCPU:
            return ParseLimitExceeded(self.time_message())
        if code is not None and code < 0:  # e.g. SIGABRT from a failed allocation in Arrow
            return ParseLimitExceeded(self.memory_message())
        return ParserCrashed(f"the upload parser exited with status {code} without an answer")
