"""Read a calibration map back from JSON: :func:`load_map` and :func:`load_deployable`.

Accepted shapes (a path to a JSON file, or the already parsed dict):

1. the deployable document of :class:`~calibration_core.deploy.DeployableMap`
   (format ``calibration-dashboard/export/v2``, kind ``deployable-map``);
2. one entry of today's fold-map export, i.e. one ``CalibrationMap.to_dict()``
   (format ``calibration-dashboard/map/v1``): ``export["models"][model][map][fold]``;
3. the whole fold-map export (format ``calibration-dashboard/export/v1``, kind
   ``fitted-maps``), with ``model``, ``map_name`` and ``fold`` choosing the
   entry (each may be left out when there is only one choice).

A newer format version and a damaged document (bad JSON, missing keys, wrong
types, fitted state that does not predict) raise
:class:`~calibration_core.CalibrationInputError` naming the file, the field
and what to do.

Hostile documents are refused before they cost memory or time, in this order:
the file's size (``max_bytes``, checked before it is read), the nesting depth
of its JSON (:data:`MAX_DEPTH`, by a scan of its brackets outside strings,
before it is parsed), ``n_classes`` (a whole number in ``[2, max_classes]``)
and the length of every fitted-state array against the shape ``n_classes``
implies (:func:`calibration_core.maps.state.state_array`), before any array
is built. Messages quote at most a short excerpt of an offending value.

The size rule: a K-class document holds at most K (K + 1) numbers (the
coefficients and intercepts of a matrix or Dirichlet map, the largest layout)
and a few thousand others (isotonic steps, histogram bins, metadata), written
with at most :data:`BYTES_PER_NUMBER` bytes each in indented JSON.
:func:`map_byte_limit` is that bound plus :data:`HEADER_BYTES`, never below
:data:`DEFAULT_MAX_BYTES`, the default of ``max_bytes`` (which holds a matrix
map of about 1,250 classes). Pass ``max_bytes=map_byte_limit(K)`` to read
larger ones.
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

import numpy as np

from ..errors import CalibrationInputError, excerpt
from ..maps.base import INPUTS, JSON_FORMAT, CalibrationMap
from .document import DEPLOY_KIND, DEPLOY_VERSION, FORMAT_FAMILY, DeployableMap

#: Format of the fold-map export (version 1 of the family).
FOLD_EXPORT_KIND = "fitted-maps"
_VERSIONED = re.compile(r"^(calibration-dashboard/(?:export|map))/v(\d+)$")
_KNOWN = {"calibration-dashboard/export": DEPLOY_VERSION, "calibration-dashboard/map": 1}

#: Default most classes of a map document (``load_map(max_classes=)``).
MAX_CLASSES = 10_000
#: Deepest nesting of arrays and objects in a map document (a real one is at most 6 deep).
MAX_DEPTH = 32
#: Bytes one number can take in an indented document (indent, digits, comma, newline).
BYTES_PER_NUMBER = 40
#: Bytes allowed besides the K (K + 1) numbers: metadata, isotonic steps, histogram bins.
HEADER_BYTES = 16 << 20
#: Default most bytes of a map document file (``load_map(max_bytes=)``).
DEFAULT_MAX_BYTES = 64 << 20
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_DEPTH_CHUNK = 1 << 20


def _cut(exc: BaseException, limit: int = 120) -> str:
    """An exception's message, cut to ``limit`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def map_byte_limit(n_classes: int) -> int:
    """Most bytes a map document of ``n_classes`` classes can need (the module's size rule)."""
    return max(DEFAULT_MAX_BYTES, HEADER_BYTES + BYTES_PER_NUMBER * n_classes * (n_classes + 1))


def _again(where: str, problem: str) -> CalibrationInputError:
    return CalibrationInputError(
        f"{where} {problem}; the file is damaged, edited or not a map: export the map again."
    )


def _read_text(source, where: str, max_bytes: int) -> str:
    """The file's text, refused before reading when it is not a regular file or too large."""
    try:
        info = os.stat(source)
    except FileNotFoundError:
        raise CalibrationInputError(f"map file not found: {where}.") from None
    if stat.S_ISDIR(info.st_mode):
        raise CalibrationInputError(f"{where} is a folder, not a map file.")
    if not stat.S_ISREG(info.st_mode):
        raise CalibrationInputError(f"{where} is not a regular file; give the map's JSON file.")
    if info.st_size > max_bytes:
        raise CalibrationInputError(
            f"{where} has {info.st_size:,} bytes, more than a map document of this many classes "
            f"needs (max_bytes={max_bytes:,}); it is not a map document, or pass a larger "
            "max_bytes (calibration_core.deploy.map_byte_limit(K) for K classes)."
        )
    with open(source, "rb") as fh:
        raw = fh.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise CalibrationInputError(f"{where} grew past max_bytes={max_bytes:,} while read.")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CalibrationInputError(
            f"{where} is not UTF-8 text, so it is not a map document; export the map again."
        ) from None


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """Deepest nesting of ``[``/``{`` outside JSON strings, counted up to just past ``limit``.

    Strings are removed by one regular expression, the rest reduced to its
    brackets, and the depth summed in chunks with numpy: linear time, and
    memory bounded by the chunk whatever the text.
    """
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text)).encode("ascii", "replace")
    codes = np.frombuffer(brackets, dtype=np.uint8)
    deepest = depth = 0
    for start in range(0, codes.size, _DEPTH_CHUNK):
        part = codes[start : start + _DEPTH_CHUNK]
        steps = np.where((part == ord("[")) | (part == ord("{")), 1, -1).astype(np.int32)
        running = depth + np.cumsum(steps, dtype=np.int64)
        deepest, depth = max(deepest, int(running.max())), int(running[-1])
        if deepest > limit:
            break
    return deepest


def _refuse_constant(name: str):
    raise CalibrationInputError(
        f"the map document holds {name}, which strict JSON (and a map document) never does"
    )


def _parse(text: str, where: str) -> Any:
    """JSON of a document whose size is bounded: depth checked first, every failure ours."""
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise _again(where, f"nests arrays or objects more than {MAX_DEPTH} deep")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise CalibrationInputError(
            f"{where} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "the file is damaged or truncated: export the map again."
        ) from None
    except CalibrationInputError as exc:
        raise _again(where, f"is refused: {exc}") from None
    except (ValueError, RecursionError) as exc:  # e.g. an int of more than 4,300 digits
        raise _again(where, f"cannot be read ({_cut(exc)})") from None


def _read(source, where: str, max_bytes: int) -> Any:
    return _parse(_read_text(source, where, max_bytes), where)


def _n_classes(data: dict, where: str, max_classes: int) -> int:
    """``data["n_classes"]``: a whole number in ``[2, max_classes]``, checked before any use."""
    value = _field(data, "n_classes", int, where, "a whole number of classes")
    if not 2 <= value <= max_classes:
        shown = excerpt(value, 40)
        fix = (
            "export the map again"
            if value < 2
            else f"pass a larger max_classes (now {max_classes:,}) if the map really has them"
        )
        raise CalibrationInputError(
            f"{where}: the field 'n_classes' is {shown}, outside 2 to {max_classes:,} "
            f"(max_classes); {fix}."
        )
    return value


def _check_version(data: dict, where: str) -> None:
    """Refuse a format this library does not know, naming a newer version as such."""
    fmt = data.get("format")
    match = _VERSIONED.match(fmt) if isinstance(fmt, str) else None
    if match is None:
        raise CalibrationInputError(
            f"{where} is not a calibration map document (its 'format' is {excerpt(fmt)}); "
            "expected a "
            f"deployable map ({FORMAT_FAMILY}{DEPLOY_VERSION}), a fold-map export "
            f"({FORMAT_FAMILY}1) or one of its entries ({JSON_FORMAT})."
        )
    family, version = match.group(1), int(match.group(2))
    if version > _KNOWN[family]:
        from .. import __version__

        raise CalibrationInputError(
            f"{where} has format {fmt!r}, newer than this library (calibration-dashboard "
            f"{__version__}) reads (up to {family}/v{_KNOWN[family]}); upgrade "
            "calibration-dashboard to load it."
        )


def _field(data: dict, key: str, types, where: str, what: str):
    if key not in data:
        raise CalibrationInputError(
            f"{where} is damaged: the field {key!r} ({what}) is missing; export the map again."
        )
    value = data[key]
    types = types if isinstance(types, tuple) else (types,)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise CalibrationInputError(
            f"{where} is damaged: the field {key!r} must be {what}, got "
            f"{type(value).__name__} {excerpt(value)}; export the map again."
        )
    return value


def _smoke_test(fitted: CalibrationMap, where: str) -> None:
    """Predict one row, so that damaged fitted state fails now and not in a pipeline."""
    k = fitted.n_classes_
    row = np.linspace(-1.0, 1.0, k)[None, :] if fitted.input == "logits" else np.full((1, k), 1 / k)
    try:
        out = fitted.predict_proba(row)
    except Exception as exc:
        raise CalibrationInputError(
            f"{where} is damaged: its fitted {fitted.name} map cannot predict "
            f"({_cut(exc)}); export "
            "the map again."
        ) from None
    if out.shape != (1, k) or not np.isfinite(out).all():
        raise CalibrationInputError(
            f"{where} is damaged: its fitted {fitted.name} map predicts invalid values; export "
            "the map again."
        )


def map_from_entry(entry: Any, where: str, max_classes: int = MAX_CLASSES) -> CalibrationMap:
    """A fitted map from one ``CalibrationMap.to_dict()`` entry, damage reported as such."""
    if not isinstance(entry, dict):
        raise CalibrationInputError(
            f"{where} is damaged: a map entry must be a JSON object, got "
            f"{type(entry).__name__}; export the map again."
        )
    _check_version(entry, where)
    _field(entry, "map", str, where, "the map's registry name")
    params = _field(entry, "params", dict, where, "an object of map parameters")
    _n_classes(entry, where, max_classes)
    _field(entry, "state", dict, where, "an object holding the fitted state")
    if params.get("input", "probs") not in INPUTS:
        raise CalibrationInputError(
            f"{where} is damaged: params.input must be 'probs' or 'logits', got "
            f"{excerpt(params.get('input'))}; export the map again."
        )
    try:
        fitted = CalibrationMap.from_dict(entry)
    except CalibrationInputError as exc:
        raise CalibrationInputError(
            f"{where} cannot be loaded: {_cut(exc, 300)} If the file was edited or truncated, "
            "export the map again."
        ) from None
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
        raise CalibrationInputError(
            f"{where} is damaged: the fitted state of its {entry['map']} map cannot be "
            f"restored ({type(exc).__name__}: {_cut(exc)}); export the map again."
        ) from None
    _smoke_test(fitted, where)
    return fitted


def _deployable(data: dict, where: str, max_classes: int) -> DeployableMap:
    k = _n_classes(data, where, max_classes)
    entry = _field(data, "map", dict, where, "the fitted map object")
    fitted = map_from_entry(entry, where, max_classes)
    kind = _field(data, "input", str, where, "'probs' or 'logits'")
    names = _field(data, "class_names", list, where, "a list of class names")
    n_rows = _field(data, "n_rows", int, where, "the whole number of rows fitted on")
    held_out = _field(data, "held_out", (dict, type(None)), where, "an object or null")
    if kind not in INPUTS or kind != fitted.input:
        raise CalibrationInputError(
            f"{where} is damaged: 'input' is {excerpt(kind)} but its map reads {fitted.input!r}; "
            "export the map again."
        )
    if k != fitted.n_classes_ or len(names) != k or not all(isinstance(n, str) for n in names):
        raise CalibrationInputError(
            f"{where} is damaged: 'n_classes' ({k}), 'class_names' ({len(names)} names) and "
            f"the map ({fitted.n_classes_} classes) disagree; export the map again."
        )
    return DeployableMap(
        map=fitted,
        model=str(data.get("model", "")),
        input=kind,
        class_names=tuple(names),
        n_rows=n_rows,
        held_out=held_out,
        library_version=data.get("library_version"),
        created=data.get("created"),
    )


def _pick(options: dict, wanted, what: str, option: str, where: str):
    if wanted is None:
        if len(options) == 1:
            return next(iter(options.values()))
        raise CalibrationInputError(
            f"{where} holds {len(options)} {what}s ({excerpt(list(options))}); choose "
            f"one with {option}=."
        )
    if wanted not in options:
        raise CalibrationInputError(
            f"{where} has no {what} {excerpt(wanted)}; it holds {excerpt(list(options))}."
        )
    return options[wanted]


def _from_fold_export(
    data: dict, where: str, model, map_name, fold, max_classes: int
) -> DeployableMap:
    models = _field(data, "models", dict, where, "an object of models")
    maps = _pick(models, model, "model", "model", where)
    if not isinstance(maps, dict):
        raise CalibrationInputError(f"{where} is damaged: a model's maps must be an object.")
    name = map_name if map_name is not None else (next(iter(maps)) if len(maps) == 1 else None)
    entries = _pick(maps, name, "map", "map_name", where)
    if not isinstance(entries, list) or not entries:
        raise CalibrationInputError(f"{where} is damaged: a map's folds must be a list.")
    folds = dict(enumerate(entries))
    entry = _pick(folds, fold, "fold", "fold", where)
    model_name = model if model is not None else next(iter(models))
    return _bare(map_from_entry(entry, where, max_classes), str(model_name))


def _bare(fitted: CalibrationMap, model: str) -> DeployableMap:
    return DeployableMap(fitted, model, fitted.input, None, None, None, None)


def load_deployable(
    source,
    *,
    model: str | None = None,
    map_name: str | None = None,
    fold: int | None = None,
    max_classes: int = MAX_CLASSES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> DeployableMap:
    """Read a map document (any accepted shape, see the module docstring).

    Parameters
    ----------
    source : str, os.PathLike or dict
        A JSON file, or its parsed content.
    model, map_name, fold : optional
        Which entry of a whole fold-map export to load.
    max_classes : int
        Most classes accepted (:data:`MAX_CLASSES` by default; the dashboard
        and the command line pass their ``MAX_CLASSES``).
    max_bytes : int
        Most bytes of a file, checked before it is read (see the module's size
        rule and :func:`map_byte_limit`).

    Returns
    -------
    DeployableMap
        Fold-map entries have no class names, rows or held-out estimate (None).
    """
    if isinstance(source, dict):
        data, where = source, "the map document"
    elif isinstance(source, (str, os.PathLike)):
        where = repr(os.fspath(source))
        data = _read(source, where, max_bytes)
    else:
        raise CalibrationInputError(
            f"load_map takes a path to a JSON file or a dict, got {type(source).__name__}."
        )
    if not isinstance(data, dict):
        raise CalibrationInputError(
            f"{where} is not a map document: its JSON is a {type(data).__name__}, not an "
            "object; export the map again."
        )
    _check_version(data, where)
    if data["format"] == JSON_FORMAT:
        return _bare(map_from_entry(data, where, max_classes), "")
    kind = data.get("kind")
    if kind == DEPLOY_KIND:
        return _deployable(data, where, max_classes)
    if kind == FOLD_EXPORT_KIND:
        return _from_fold_export(data, where, model, map_name, fold, max_classes)
    raise CalibrationInputError(
        f"{where} is an export of kind {excerpt(kind)}, which holds no fitted map; download the "
        "deployable map (or the fitted maps JSON) instead."
    )


def load_map(
    source,
    *,
    model: str | None = None,
    map_name: str | None = None,
    fold: int | None = None,
    max_classes: int = MAX_CLASSES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> CalibrationMap:
    """A fitted, scikit-learn compatible calibration map from a JSON document.

    Parameters
    ----------
    source : str, os.PathLike or dict
        A deployable map document, one entry of a fold-map export, or a whole
        fold-map export (see the module docstring), as a path or a parsed dict.
    model, map_name, fold : optional
        Which entry of a whole fold-map export to load.
    max_classes, max_bytes : int
        Limits of the document, checked before anything is allocated (see
        :func:`load_deployable`).

    Returns
    -------
    CalibrationMap
        Ready for ``predict_proba``/``predict``. Its ``input`` parameter is the
        document's input kind: raw arrays must be logits for a logit map and
        probability rows for a probability map (each mistake is a
        ``CalibrationInputError``); a Predictions object is read by what it
        carries (its logits when it has them).
    """
    return load_deployable(
        source,
        model=model,
        map_name=map_name,
        fold=fold,
        max_classes=max_classes,
        max_bytes=max_bytes,
    ).map
