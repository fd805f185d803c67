"""The page's "Deployable map" download: one map of one model, refitted on all rows.

The user picks a model (among those shown) and a map (the verdict's
recommended map by default: the fewest parameters among the maps not clearly
worse than the best; or any selected map whose held-out fit is done); the map is refitted
on *every* row of the model by :func:`calibration_core.deployable_map`, the
same function behind ``calibration-dashboard fit``, so the download loads with
:func:`calibration_core.load_map` and applies like the command line's map.

Only maps the page has fitted (held out, without error) can be deployed: the
page's map policy (parameter budget) then holds for the refit too, and the
document's held-out estimate is computed with the page's held-out scheme
(folds or split, seed) and binning. The document is cached in the store's memo
per (model, map, held-out scheme, binning), so a second download is instant.
"""

from __future__ import annotations

from dataclasses import dataclass

from calibration_core import CalibrationInputError

from .analysis import UNCALIBRATED, ViewResult
from .exports import download_name
from .options import model_picker
from .settings import parse_maps
from .store.data_store import DataStore
from .store.records import ModelInfo

#: The map picker's default: the verdict's recommended map of the chosen model.
BEST_MAP = "best"


@dataclass(frozen=True)
class DeployChoice:
    """A resolved pick: the model's handle and name and the map's registry name."""

    handle: str
    model: str
    map_name: str


def deploy_model_picker(
    chosen: list[ModelInfo], current: str | None
) -> tuple[list[dict], str | None]:
    """The model picker's options (the selected models, ``chosen``, by name) and value.

    A model still selected stays picked; otherwise the first selected one is.
    The page's selection callback fills it (:mod:`app.callbacks.models`).
    """
    return model_picker(chosen, current, label=lambda info: info.name)


def map_picker(raw_maps, map_choice: str | None) -> tuple[list[dict], str]:
    """The map picker's options (see :func:`map_options`) and value for the selected maps.

    A map still selected stays picked; otherwise :data:`BEST_MAP` is. Bad maps
    offer only the verdict's recommendation (the download then says what is wrong).
    """
    try:
        maps = parse_maps(raw_maps)
    except CalibrationInputError:
        maps = ()
    return map_options(maps), (map_choice if map_choice in maps else BEST_MAP)


def map_options(maps: tuple[str, ...]) -> list[dict]:
    """The map picker's options: the verdict's recommendation first, then every selected map."""
    return [{"label": "Verdict's recommendation", "value": BEST_MAP}] + [
        {"label": name, "value": name} for name in maps
    ]


def verdict_recommendation(store: DataStore, result: ViewResult, handle: str) -> str:
    """The verdict's recommended map of one model, maybe ``"uncalibrated"`` (the identity).

    Raises CalibrationInputError when there is no verdict yet.
    """
    from .verdict import view_verdicts

    model = next(mv for mv in result.models if mv.info.handle == handle)
    single = ViewResult(result.view, result.heldout, result.maps, [model])
    (item,) = view_verdicts(store, single, wait=True)
    if item.verdict is None:
        raise CalibrationInputError(
            f"no verdict yet for {item.model}: {item.message or 'fit the maps first'} "
            "Or pick a map in the map picker."
        )
    return item.verdict.recommended


def resolve_choice(
    store: DataStore, result: ViewResult, handle: str | None, map_choice: str | None
) -> DeployChoice:
    """The model and map to deploy, from the pickers (raises CalibrationInputError).

    ``handle`` None means the first model of the view; ``map_choice`` None or
    :data:`BEST_MAP` means the verdict's recommended map of that model (``"uncalibrated"``:
    the identity map).
    """
    if not result.models:
        raise CalibrationInputError("nothing to deploy: pick a model.")
    infos = {mv.info.handle: mv.info for mv in result.models}
    if handle is None or handle not in infos:
        if handle is not None:
            raise CalibrationInputError(
                "the model picked for the deployable map is no longer shown: pick another one."
            )
        handle = result.models[0].info.handle
    info = infos[handle]
    if map_choice in (None, BEST_MAP):
        map_name = verdict_recommendation(store, result, handle)
    elif map_choice in result.maps:
        map_name = map_choice
    else:
        raise CalibrationInputError(
            f"map {str(map_choice)[:40]!r} is not among the selected maps: select it under "
            "Calibration maps, or pick another one."
        )
    if map_name != UNCALIBRATED:  # the identity map needs no fit
        check_fitted(store, info.handle, info.name, map_name, result)
    return DeployChoice(info.handle, info.name, map_name)


def check_fitted(store: DataStore, handle: str, model: str, map_name: str, result) -> None:
    """Raise CalibrationInputError unless the page's held-out fit of the map is done."""
    record = store.get_fit(handle, map_name, result.heldout)
    if record is None:
        raise CalibrationInputError(
            f"{map_name} is still being fitted on {model}: download it when the fit is done."
        )
    if record.error is not None:
        raise CalibrationInputError(
            f"{map_name} could not be fitted on {model} ({record.error}): pick another map."
        )


def deployable_document(store: DataStore, result: ViewResult, choice: DeployChoice) -> str:
    """The deployable map's JSON: the map refitted on all rows of the model (cached).

    The held-out estimate is a comparison of this map alone with the page's
    held-out scheme and binning (the same folds and seed as the page's fit).
    """
    from calibration_core import compare_maps, deployable_map

    heldout, view = result.heldout, result.view

    def compute() -> str:
        pred = store.predictions(choice.handle)
        comparison = compare_maps(
            pred,
            maps=[] if choice.map_name == UNCALIBRATED else [choice.map_name],
            n_bins=view.n_bins,
            scheme=view.scheme,
            **heldout.compare_kwargs(),
        )
        return deployable_map(pred, choice.map_name, comparison).to_json(indent=2)

    key = ("deployable", choice.handle, choice.map_name, heldout.key, view.scheme, view.n_bins)
    return store.memo(key, compute)


def deployable_download(
    store: DataStore, result: ViewResult, handle: str | None, map_choice: str | None
) -> tuple[dict, str]:
    """``dcc.Download`` data of the deployable map and the message saying what it holds."""
    choice = resolve_choice(store, result, handle, map_choice)
    data = {
        "content": deployable_document(store, result, choice),
        "filename": download_name("map", "json"),
        "type": "application/json",
    }
    if choice.map_name == UNCALIBRATED:
        from calibration_core.deploy import IDENTITY_WORDS  # loads scikit-learn: not at import

        return data, (
            f"Deployable map: uncalibrated of {choice.model}: no map is clearly better, so the "
            f"document holds {IDENTITY_WORDS}."
        )
    return data, f"Deployable map: {choice.map_name} of {choice.model}, refitted on all rows."
