"""What every diagnostic is computed for: the section's settings and the target they pick.

* the Diagnostics section's own settings: the choices and defaults the page
  offers, their parsers (a bad value raises :class:`~app.settings.SettingsError`,
  shown as a message) and the per-session memory of the last values used
  (:func:`remember`, read back by the HTML report);
* the **target** (:class:`DiagTarget`, :func:`diag_target`): one model, the
  view's settings and its *calibrators* (the uncalibrated predictions first,
  then each selected map already in the fit store, all scored on held-out
  rows, see :class:`app.settings.HeldOut`);
* the view's **notion** for that model (:class:`NotionSpec`) and the
  per-calibrator memo (:func:`memo`) the cheap diagnostics share.

Core calls only (no Dash, no Plotly), like :mod:`app.analysis`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from calibration_core import Binning, BinStatistics, Predictions

from ..analysis import Variant, targets, variants
from ..settings import HeldOut, RawSettings, SettingsError, ViewSettings, parse_handles
from ..store.data_store import DataStore
from ..store.records import ModelInfo

_T = TypeVar("_T")

RESAMPLE_CHOICES = (200, 500, 1000, 2000, 5000)
DEFAULT_RESAMPLES = 1000
HL_MIN_GROUPS, HL_MAX_GROUPS, HL_DEFAULT_GROUPS = 3, 50, 10
BOOT_LEVELS = (0.8, 0.9, 0.95, 0.99)
DEFAULT_BOOT_LEVEL = 0.95
MAX_COST = 1e12
#: Resampling-test measures (the core's names) and how the page names them.
MEASURE_LABELS = {
    "confidence_ece": "confidence ECE",
    "confidence_mce": "confidence MCE",
    "classwise_ece": "classwise ECE",
    "classwise_mce": "classwise MCE",
    "binary_ece": "binary ECE (K = 2)",
    "binary_mce": "binary MCE (K = 2)",
    "brier_score": "Brier score",
    "log_loss": "log-loss",
}


# ------------------------------------------------------------------ settings
def _choice_number(value: Any, what: str, choices: Sequence[int | float]) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in choices:
        raise SettingsError(f"{what} must be one of {', '.join(map(str, choices))}; got {value!r}.")
    return type(choices[0])(value)


def parse_measure(value: Any) -> str:
    """A resampling-test measure (a key of :data:`MEASURE_LABELS`)."""
    if not isinstance(value, str) or value not in MEASURE_LABELS:
        raise SettingsError(f"the test measure must be one of {', '.join(MEASURE_LABELS)}.")
    return value


def parse_resamples(value: Any) -> int:
    """A number of resamples of :data:`RESAMPLE_CHOICES`."""
    return int(_choice_number(value, "the number of resamples", RESAMPLE_CHOICES))


def parse_level(value: Any) -> float:
    """A bootstrap level of :data:`BOOT_LEVELS`."""
    return float(_choice_number(value, "the interval level", BOOT_LEVELS))


def parse_groups(value: Any) -> int:
    """Hosmer-Lemeshow groups, 3..50."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(
            f"the number of groups must be a whole number from {HL_MIN_GROUPS} to {HL_MAX_GROUPS}."
        )
    if not (math.isfinite(value) and float(value).is_integer()):
        raise SettingsError("the number of groups must be a whole number.")
    if not HL_MIN_GROUPS <= value <= HL_MAX_GROUPS:
        raise SettingsError(
            f"the number of groups must be from {HL_MIN_GROUPS} to {HL_MAX_GROUPS}, got {value}."
        )
    return int(value)


def parse_costs(cost_fp: Any, cost_fn: Any) -> tuple[float, float]:
    """``(C(+|-), C(-|+))``: finite costs >= 0, not both 0."""
    out = []
    for value, what in (
        (cost_fp, "C(+|−), the cost of a false positive,"),
        (cost_fn, "C(−|+), the cost of a false negative,"),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SettingsError(f"{what} must be a number >= 0.")
        if not (math.isfinite(value) and 0 <= value <= MAX_COST):
            raise SettingsError(f"{what} must be a number from 0 to {MAX_COST:g}.")
        out.append(float(value))
    if out[0] + out[1] == 0:
        raise SettingsError("the two costs are both 0: give at least one a positive cost.")
    return out[0], out[1]


def parse_prior(value: Any, what: str) -> float | None:
    """An optional positive-class rate in (0, 1) (None or empty: not given)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(f"{what} must be a positive-class rate between 0 and 1.")
    if not (math.isfinite(value) and 0 < value < 1):
        raise SettingsError(f"{what} must lie strictly between 0 and 1, got {value!r}.")
    return float(value)


def remember(store: DataStore, sid: str | None, part: str, values: dict) -> None:
    """Keep the Diagnostics settings a session last used (read by the HTML report)."""
    if sid:
        store.cache.set(f"diag:settings:{sid}:{part}", values, expire=store.ttl)


def remembered(store: DataStore, sid: str | None, part: str) -> dict:
    """The settings :func:`remember` kept for ``part`` (empty when none)."""
    if not sid:
        return {}
    value = store.cache.get(f"diag:settings:{sid}:{part}", default=None)
    return value if isinstance(value, dict) else {}


# -------------------------------------------------------------------- target
@dataclass
class DiagTarget:
    """One model, the view's settings and its calibrators (uncalibrated first)."""

    info: ModelInfo
    view: ViewSettings
    heldout: HeldOut
    maps: tuple[str, ...]
    variants: list[Variant] = field(default_factory=list)

    @property
    def ready(self) -> list[Variant]:
        """Calibrators whose predictions are in the store."""
        return [v for v in self.variants if v.pred is not None]

    @property
    def n_scored(self) -> int | None:
        """Rows every calibrator is scored on (held-out rows in split mode)."""
        first = self.variants[0] if self.variants else None
        return None if first is None or first.pred is None else first.pred.n_samples


def diag_target(
    store: DataStore, sid: str | None, handle: str | None, raw: RawSettings
) -> DiagTarget:
    """The model ``handle`` with the view's maps, held-out scheme and binning.

    Parameters
    ----------
    store : DataStore
    sid : str or None
        The session id (the model must belong to it, or be a demo model).
    handle : str or None
        The model picked in the Diagnostics section (None or empty: none yet).
    raw : RawSettings
        The main view's settings (maps, held-out scheme, notion, binning); its
        handles and band settings are ignored.

    Raises
    ------
    CalibrationInputError
        A bad setting, or a model the session cannot use (``SettingsError``,
        ``DataUnavailable``).
    """
    if not handle:
        raise SettingsError("Pick a model above to see its diagnostics.")
    (handle,) = parse_handles([handle])
    _, maps, heldout, view = RawSettings(
        [handle],
        raw.maps,
        raw.heldout,
        raw.folds,
        raw.fraction,
        raw.notion,
        raw.class_value,
        raw.scheme,
        raw.n_bins,
        "none",
        0.95,
    ).parse()
    info = store.resolve(sid, handle)
    return DiagTarget(info, view, heldout, maps, variants(store, info, maps, heldout))


@dataclass(frozen=True)
class NotionSpec:
    """The view's notion for one model: which score columns its ECE uses.

    ``kind`` is "confidence", "binary", "class" (``class_index``) or
    "classwise" (the mean over classes: the one-vs-rest view of all classes).
    """

    kind: str
    class_index: int | None = None
    label: str = ""

    def columns(self, n_classes: int) -> list[tuple[str, int | None]]:
        """``(notion, class index)`` of each score column."""
        if self.kind == "classwise":
            return [("class", j) for j in range(n_classes)]
        return [(self.kind, self.class_index)]


def notion_spec(info: ModelInfo, view: ViewSettings) -> NotionSpec:
    """The notion of the view for ``info`` (raises for binary on K != 2, unknown class)."""
    rows = targets(info, view)
    if view.notion == "confidence":
        return NotionSpec("confidence", None, "confidence (top label)")
    if view.notion == "binary":
        return NotionSpec("binary", None, f"binary (class {info.class_names[1]})")
    if view.all_classes:
        return NotionSpec("classwise", None, "one class vs rest, mean over all classes")
    k, label = rows[0]
    return NotionSpec("class", k, f"one class vs rest (class {label})")


def notion_statistics(pred: Predictions, binning: Binning, spec: NotionSpec) -> list[BinStatistics]:
    """Per-bin statistics of each score column of ``spec`` (one per class for "classwise").

    Parameters
    ----------
    pred : Predictions
        Scores of shape ``(N, K)`` and labels of shape ``(N,)``.
    binning : Binning
    spec : NotionSpec

    Returns
    -------
    list of BinStatistics
        One per column of :meth:`NotionSpec.columns`, each with arrays of shape
        ``(n_bins,)``.
    """
    return [pred.statistics(binning, n, k) for n, k in spec.columns(pred.n_classes)]


def memo(store: DataStore, variant: Variant, key: tuple, compute: Callable[[], _T]) -> _T:
    """``compute()``, kept in the store's per-process memo under the calibrator and ``key``.

    Calibrators without a handle (nothing stored to key on) are computed every time.
    """
    if variant.handle is None:
        return compute()
    return store.memo(("diag", variant.handle, *key), compute)
