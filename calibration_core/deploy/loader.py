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
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CalibrationInputError
from ..maps.base import INPUTS, JSON_FORMAT, CalibrationMap
from .document import DEPLOY_KIND, DEPLOY_VERSION, FORMAT_FAMILY, DeployableMap

#: Format of the fold-map export (version 1 of the family).
FOLD_EXPORT_KIND = "fitted-maps"
_VERSIONED = re.compile(r"^(calibration-dashboard/(?:export|map))/v(\d+)$")
_KNOWN = {"calibration-dashboard/export": DEPLOY_VERSION, "calibration-dashboard/map": 1}


def _read(source, where: str) -> Any:
    try:
        text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CalibrationInputError(f"map file not found: {where}.") from None
    except IsADirectoryError:
        raise CalibrationInputError(f"{where} is a folder, not a map file.") from None
    except UnicodeDecodeError:
        raise CalibrationInputError(
            f"{where} is not UTF-8 text, so it is not a map document; export the map again."
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CalibrationInputError(
            f"{where} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "the file is damaged or truncated: export the map again."
        ) from None


def _check_version(data: dict, where: str) -> None:
    """Refuse a format this library does not know, naming a newer version as such."""
    fmt = data.get("format")
    match = _VERSIONED.match(fmt) if isinstance(fmt, str) else None
    if match is None:
        raise CalibrationInputError(
            f"{where} is not a calibration map document (its 'format' is {fmt!r}); expected a "
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
            f"{type(value).__name__} {value!r:.60}; export the map again."
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
            f"{where} is damaged: its fitted {fitted.name} map cannot predict ({exc}); export "
            "the map again."
        ) from None
    if out.shape != (1, k) or not np.isfinite(out).all():
        raise CalibrationInputError(
            f"{where} is damaged: its fitted {fitted.name} map predicts invalid values; export "
            "the map again."
        )


def map_from_entry(entry: Any, where: str) -> CalibrationMap:
    """A fitted map from one ``CalibrationMap.to_dict()`` entry, damage reported as such."""
    if not isinstance(entry, dict):
        raise CalibrationInputError(
            f"{where} is damaged: a map entry must be a JSON object, got "
            f"{type(entry).__name__}; export the map again."
        )
    _check_version(entry, where)
    _field(entry, "map", str, where, "the map's registry name")
    params = _field(entry, "params", dict, where, "an object of map parameters")
    _field(entry, "n_classes", int, where, "a whole number of classes")
    _field(entry, "state", dict, where, "an object holding the fitted state")
    if params.get("input", "probs") not in INPUTS:
        raise CalibrationInputError(
            f"{where} is damaged: params.input must be 'probs' or 'logits', got "
            f"{params.get('input')!r}; export the map again."
        )
    try:
        fitted = CalibrationMap.from_dict(entry)
    except CalibrationInputError as exc:
        raise CalibrationInputError(
            f"{where} cannot be loaded: {exc} If the file was edited or truncated, export the "
            "map again."
        ) from None
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise CalibrationInputError(
            f"{where} is damaged: the fitted state of its {entry['map']} map cannot be "
            f"restored ({type(exc).__name__}: {exc}); export the map again."
        ) from None
    _smoke_test(fitted, where)
    return fitted


def _deployable(data: dict, where: str) -> DeployableMap:
    fitted = map_from_entry(_field(data, "map", dict, where, "the fitted map object"), where)
    kind = _field(data, "input", str, where, "'probs' or 'logits'")
    k = _field(data, "n_classes", int, where, "a whole number of classes")
    names = _field(data, "class_names", list, where, "a list of class names")
    n_rows = _field(data, "n_rows", int, where, "the whole number of rows fitted on")
    held_out = _field(data, "held_out", (dict, type(None)), where, "an object or null")
    if kind not in INPUTS or kind != fitted.input:
        raise CalibrationInputError(
            f"{where} is damaged: 'input' is {kind!r} but its map reads {fitted.input!r}; "
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
            f"{where} holds {len(options)} {what}s ({', '.join(map(repr, options))}); choose "
            f"one with {option}=."
        )
    if wanted not in options:
        raise CalibrationInputError(
            f"{where} has no {what} {wanted!r}; it holds {', '.join(map(repr, options))}."
        )
    return options[wanted]


def _from_fold_export(data: dict, where: str, model, map_name, fold) -> DeployableMap:
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
    return _bare(map_from_entry(entry, where), str(model_name))


def _bare(fitted: CalibrationMap, model: str) -> DeployableMap:
    return DeployableMap(fitted, model, fitted.input, None, None, None, None)


def load_deployable(
    source, *, model: str | None = None, map_name: str | None = None, fold: int | None = None
) -> DeployableMap:
    """Read a map document (any accepted shape, see the module docstring).

    Parameters
    ----------
    source : str, os.PathLike or dict
        A JSON file, or its parsed content.
    model, map_name, fold : optional
        Which entry of a whole fold-map export to load.

    Returns
    -------
    DeployableMap
        Fold-map entries have no class names, rows or held-out estimate (None).
    """
    if isinstance(source, dict):
        data, where = source, "the map document"
    elif isinstance(source, (str, os.PathLike)):
        where = repr(os.fspath(source))
        data = _read(source, where)
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
        return _bare(map_from_entry(data, where), "")
    kind = data.get("kind")
    if kind == DEPLOY_KIND:
        return _deployable(data, where)
    if kind == FOLD_EXPORT_KIND:
        return _from_fold_export(data, where, model, map_name, fold)
    raise CalibrationInputError(
        f"{where} is an export of kind {kind!r}, which holds no fitted map; download the "
        "deployable map (or the fitted maps JSON) instead."
    )


def load_map(
    source, *, model: str | None = None, map_name: str | None = None, fold: int | None = None
) -> CalibrationMap:
    """A fitted, scikit-learn compatible calibration map from a JSON document.

    Parameters
    ----------
    source : str, os.PathLike or dict
        A deployable map document, one entry of a fold-map export, or a whole
        fold-map export (see the module docstring), as a path or a parsed dict.
    model, map_name, fold : optional
        Which entry of a whole fold-map export to load.

    Returns
    -------
    CalibrationMap
        Ready for ``predict_proba``/``predict``. Its ``input`` parameter is the
        document's input kind: raw arrays must be logits for a logit map and
        probability rows for a probability map (each mistake is a
        ``CalibrationInputError``); a Predictions object is read by what it
        carries (its logits when it has them).
    """
    return load_deployable(source, model=model, map_name=map_name, fold=fold).map
