"""`load_predictions`: any supported file -> one :class:`Predictions` per model."""

from __future__ import annotations

import warnings

from ..errors import RenormalisedRowsWarning, TimeZonesWarning
from ..predictions import Predictions
from .budget import DecodedBudget
from .checks import Context
from .npz import read_npz
from .readers import read_parquet_table, read_text_table
from .source import resolve_source
from .tables import table_to_predictions


def load_predictions(
    source,
    *,
    label_column: str | None = None,
    renormalize: bool = False,
    name: str | None = None,
    file_name: str | None = None,
    encoding: str | None = None,
    max_decoded_bytes: int | None = None,
) -> list[Predictions]:
    """Load predictions and labels from a CSV/TSV (.gz), Parquet or npz file.

    Parameters
    ----------
    source : str, os.PathLike, bytes or binary file-like
        A path, or the content of a file (e.g. an upload).
    label_column : str, optional
        The column (or npz key) holding the true classes. Default: the one
        of ``label, y, target, true, ground_truth`` present (any case).
    renormalize : bool
        Divide probability rows by their sums instead of rejecting rows whose
        sum differs from 1 by more than ``K * 5e-5 + 1e-6``
        (:func:`~calibration_core.io.checks.row_sum_tolerance`: values rounded
        to 4 decimals, e.g. ``df.round(4)``, are within it). Rows within that
        tolerance are always divided by their sums; when any was off by more
        than float32 rounding, a :class:`~calibration_core.RenormalisedRowsWarning`
        says how many rows and the largest deviation.
    name : str, optional
        The model name when the file has no ``model`` column. Default: the
        file name without extensions, else ``"model"``.
    file_name : str, optional
        The original name of bytes or a file-like: used to detect the format
        (with the content's magic bytes) and in messages.
    encoding : str, optional
        Text encoding of CSV/TSV files. Default: UTF-8 (with or without a
        byte-order mark) or UTF-16/32 with a byte-order mark; anything else
        is an error, never a silent Latin-1 fallback.
    max_decoded_bytes : int, optional
        Refuse the file (:class:`~calibration_core.io.budget.DecodedTooLarge`)
        when the data it decodes to (columns read, arrays, the float64 matrix)
        would pass this many bytes, counted before allocating them (see
        :mod:`calibration_core.io.budget`). Default: no bound.

    Returns
    -------
    list of Predictions
        One per model, in order of first appearance in the ``model`` column.

    Raises
    ------
    CalibrationInputError
        For anything that cannot be read as predictions, with a message that
        says what is wrong, where (file, column, rows) and how to fix it; when
        ``renormalize`` or ``label_column`` fixes it, its ``remedy`` says which
        (and ``columns`` lists the file's columns to choose from). Rows
        are numbered as data rows, 1-based after the header, for text files;
        1-based for Parquet; 0-based array indices for npz.

    Notes
    -----
    Column conventions (:mod:`calibration_core.io.columns`): a label column;
    probability columns ``p_<class>``/``prob_<class>``/``proba_<class>``, or
    logit columns ``logit_<class>``, or one binary ``score`` column (labels
    0/1 or false/true); an optional ``model`` column; ``h_<class>`` soft
    labels and other columns are ignored. String labels match class names;
    integer labels are class indices when the classes are ``0..K-1``.
    A model whose labels are all one class is rejected. Class names, model
    names and string labels are at most
    :data:`~calibration_core.io.budget.MAX_NAME_LENGTH` characters.
    """
    src = resolve_source(source, file_name)
    model_name = name or src.stem or "model"
    budget = DecodedBudget(max_decoded_bytes, src.display)
    if src.kind == "npz":
        pred = read_npz(
            src, label_column=label_column, renormalize=renormalize, name=model_name, budget=budget
        )
        return [pred]
    if src.kind == "parquet":
        table = read_parquet_table(src, label_column=label_column, budget=budget)
        ctx = Context(src.display, "table")
    else:
        table = read_text_table(src, encoding=encoding, budget=budget)
        ctx = Context(src.display, "data")
    return table_to_predictions(
        table, ctx, label_column=label_column, renormalize=renormalize, name=model_name,
        budget=budget,
    )  # fmt: skip


#: The warnings :func:`load_with_notices` returns as notices for the user.
NOTICES = (RenormalisedRowsWarning, TimeZonesWarning)


def load_with_notices(source, **options) -> tuple[list[Predictions], list[str]]:
    """:func:`load_predictions`, returning its notices instead of warning them.

    Front ends (the upload, the command line) show the notices where the
    user reads them, e.g. how many rows were renormalised.

    Returns
    -------
    (list of Predictions, list of str)
        The models, and the messages of :data:`NOTICES` (rows renormalised,
        times of several zones converted to UTC).
    """
    with warnings.catch_warnings(record=True) as seen:
        for category in NOTICES:
            warnings.simplefilter("always", category)
        preds = load_predictions(source, **options)
    notices: list[warnings.WarningMessage] = []
    others: list[warnings.WarningMessage] = []
    for w in seen:
        (notices if issubclass(w.category, NOTICES) else others).append(w)
    for w in others:  # not ours to show: hand them on unchanged
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return preds, [str(w.message) for w in notices]
