"""The verdict of a view's models (which map to trust), from the store's fits, and its HTML.

The numbers come from :func:`calibration_core.compare.choose_map` on the
held-out calibrated predictions the page already shows (the uncalibrated
rows compete too), with the fitted maps of the store for the parameters in
words; this module only gathers them per model and writes the report's
section (every text escaped).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from calibration_core import CalibrationInputError
from calibration_core.compare import Verdict, choose_map
from calibration_core.compare.verdict import DEFAULT_LEVEL, DEFAULT_RESAMPLES
from calibration_core.maps.base import CalibrationMap

from .analysis import variants
from .store.data_store import DataStore

__all__ = ["ModelVerdict", "verdict_html", "view_verdicts"]


@dataclass(frozen=True)
class ModelVerdict:
    """One model's verdict, or why there is none (``message``)."""

    model: str
    verdict: Verdict | None
    message: str = ""


def _fitted_maps(store: DataStore, handle: str, names, heldout) -> dict[str, list[CalibrationMap]]:
    """Map name to its fitted fold maps, rebuilt from the store's exported parameters."""
    out: dict[str, list[CalibrationMap]] = {}
    for name in names:
        record = store.get_fit(handle, name, heldout)
        if record is not None and record.error is None and record.params:
            out[name] = [CalibrationMap.from_dict(p) for p in record.params]
    return out


def view_verdicts(
    store: DataStore,
    result,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
) -> list[ModelVerdict]:
    """The verdict of every model of ``result`` (an analysis ViewResult).

    Candidates are the uncalibrated predictions and every map whose fit is
    done; maps still pending or failed are left out (and named in the message).
    """
    out = []
    for mv in result.models:
        found = variants(store, mv.info, result.maps, result.heldout)
        ready = {v.calibrator: v.pred for v in found if v.pred is not None}
        missing = [v.calibrator for v in found if v.pred is None]
        note = f"not compared (pending or failed): {', '.join(missing)}" if missing else ""
        try:
            verdict = choose_map(
                ready,
                _fitted_maps(store, mv.info.handle, list(ready), result.heldout),
                n_resamples=n_resamples,
                level=level,
                seed=result.heldout.seed,
                n_bins=result.view.n_bins,
                scheme=result.view.scheme,
            )
        except CalibrationInputError as exc:
            out.append(ModelVerdict(mv.info.name, None, str(exc)))
            continue
        out.append(ModelVerdict(mv.info.name, verdict, note))
    return out


def _verdict_lines(verdict: Verdict) -> list[str]:
    lines = [verdict.summary]
    ece = ", ".join(f"{name} {value:.4f}" for name, value in verdict.confidence_ece.items())
    lines.append(f"Held-out confidence ECE: {ece}.")
    lines += [f"{name}: {words}." for name, words in verdict.parameters.items()]
    return lines


def verdict_html(verdicts: list[ModelVerdict]) -> str:
    """The report's "Verdict" section: one block per model, every text escaped."""
    if not verdicts:
        return ""
    parts = ["<h2>Verdict</h2>"]
    for item in verdicts:
        lines = _verdict_lines(item.verdict) if item.verdict is not None else []
        if item.message:
            lines.append(item.message)
        body = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        parts.append(f'<h3>{html.escape(item.model)}</h3><ul class="verdict">{body}</ul>')
    parts.append(
        '<p class="caption">Best map by held-out log-loss (a proper score; the uncalibrated '
        "predictions compete too). The difference is the runner-up's mean per-row log-loss "
        "minus the winner's, with a paired-bootstrap percentile interval over the same "
        "held-out rows; “no clear winner” when the interval covers 0.</p>"
    )
    return "".join(parts)
