"""Server-side validation of every setting a callback receives.

Components limit what a user can pick, but a crafted request can send
anything (a bin count of 10**9, a negative one, text, unknown map names).
Every callback therefore parses its raw inputs here first; anything outside
the documented ranges raises :class:`SettingsError` with a readable message,
which the dashboard shows instead of a result.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from calibration_core import CalibrationInputError
from calibration_core.maps import MAP_NAMES
from calibration_core.notions import NOTIONS

MIN_BINS, MAX_BINS = 2, 100
NOTION_LABELS = {
    "confidence": "confidence (top label)",
    "class": "one class vs rest",
    "binary": "binary (positive class)",
}
SCHEMES = ("width", "frequency")
#: The value of the ``score-parts`` checklist's one option (ticked: show the parts).
SCORE_PARTS_ON = "parts"
SCHEME_LABELS = {"width": "equal-width", "frequency": "equal-frequency"}
#: Band option -> (kind, core method name or None).
BANDS = {
    "none": (None, None),
    "wilson": ("binomial", "wilson"),
    "clopper-pearson": ("binomial", "clopper-pearson"),
    "jeffreys": ("binomial", "jeffreys"),
    "consistency": ("consistency", None),
}
BAND_LABELS = {
    "none": "none",
    "wilson": "Wilson",
    "clopper-pearson": "Clopper-Pearson",
    "jeffreys": "Jeffreys",
    "consistency": "consistency resampling",
}
LEVELS = (0.8, 0.9, 0.95, 0.99)
MIN_LEVEL, MAX_LEVEL = 0.5, 0.999
HELDOUT_MODES = ("folds", "split")
MIN_FOLDS, MAX_FOLDS = 2, 20
MIN_TEST_FRACTION, MAX_TEST_FRACTION = 0.1, 0.9
#: Class picker value that draws every class as small multiples.
ALL_CLASSES = "__all__"
#: "All classes" draws at most this many classes per calibrator: the worst by one-vs-rest ECE.
ALL_CLASSES_SHOWN = 12
#: ... and at most this many panels on the page (fewer classes with more models and maps).
SMALL_MULTIPLES_PER_PAGE = 36
#: The per-group diagrams draw at most this many groups, the worst first.
GROUPS_SHOWN = 24
MAX_SELECTED_MODELS = 8
HANDLE_PATTERN = re.compile(r"^[a-z]{1,5}-[A-Za-z0-9_-]{1,64}$")
CONSISTENCY_RESAMPLES = 1000
#: Diagram kinds of the view: binned reliability, smoothed reliability, cumulative differences.
DIAGRAM_KINDS = ("binned", "smooth", "cumulative")
DIAGRAM_LABELS = {
    "binned": "binned reliability",
    "smooth": "smooth reliability",
    "cumulative": "cumulative differences",
}


class SettingsError(CalibrationInputError):
    """A setting outside its documented range; the message is shown to the user."""


def _whole(value, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(f"{what} must be a whole number from {lo} to {hi}, got {value!r}.")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise SettingsError(f"{what} must be a whole number from {lo} to {hi}, got {value!r}.")
    value = int(value)
    if not lo <= value <= hi:
        raise SettingsError(f"{what} must be from {lo} to {hi}, got {value}.")
    return value


def _number(value, what: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(f"{what} must be a number from {lo} to {hi}, got {value!r}.")
    value = float(value)
    if not (math.isfinite(value) and lo <= value <= hi):
        raise SettingsError(f"{what} must be from {lo} to {hi}, got {value!r}.")
    return value


def _choice(value, what: str, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        shown = repr(value) if len(repr(value)) < 60 else repr(value)[:57] + "..."
        raise SettingsError(f"{what} must be one of {', '.join(choices)}; got {shown}.")
    return value


@dataclass(frozen=True)
class ViewSettings:
    """The cheap settings: changing them re-bins, never refits.

    Attributes
    ----------
    notion : {"confidence", "class", "binary"}
    class_name : str or None
        For ``notion="class"``: a class name, or :data:`ALL_CLASSES`.
    scheme : {"width", "frequency"}
    n_bins : int
        2..100.
    band : str
        A key of :data:`BANDS`.
    level : float
        Band level in [0.5, 0.999].
    score_parts : bool
        Add the calibration and refinement parts of the Brier score and the
        log-loss to the metric rows (binned as the classwise ECE; off by
        default: one more pass over every class column of every calibrator).
    kind : {"binned", "smooth", "cumulative"}
        The diagram drawn (:data:`DIAGRAM_KINDS`); the bins only shape "binned".
    """

    notion: str = "confidence"
    class_name: str | None = None
    scheme: str = "width"
    n_bins: int = 15
    band: str = "wilson"
    level: float = 0.95
    score_parts: bool = False
    kind: str = "binned"

    @property
    def all_classes(self) -> bool:
        """One-vs-rest small multiples of every class."""
        return self.notion == "class" and self.class_name == ALL_CLASSES

    def describe_binning(self) -> str:
        """E.g. ``"15 equal-width bins"``."""
        return f"{self.n_bins} {SCHEME_LABELS[self.scheme]} bins"

    def describe_band(self) -> str:
        """E.g. ``"Wilson 95%"`` or ``"no band"``."""
        if self.band == "none":
            return "no band"
        return f"{BAND_LABELS[self.band]} {self.level:.0%}".replace(".0%", "%")


def parse_view(
    notion, class_value, scheme, n_bins, band, level, score_parts=(), kind="binned"
) -> ViewSettings:
    """Validate the cheap settings (see :class:`ViewSettings`).

    ``score_parts`` is the checklist's value: ticked when it holds :data:`SCORE_PARTS_ON`.
    """
    notion = _choice(notion, "the notion", NOTIONS)
    class_name = None
    if notion == "class":
        if class_value is None or class_value == "":
            class_name = ALL_CLASSES
        elif not isinstance(class_value, str) or len(class_value) > 200:
            raise SettingsError("the class must be one of the listed class names.")
        else:
            class_name = class_value
    return ViewSettings(
        notion=notion,
        class_name=class_name,
        scheme=_choice(scheme, "the binning scheme", SCHEMES),
        n_bins=_whole(n_bins, "the number of bins", MIN_BINS, MAX_BINS),
        band=_choice(band, "the band", tuple(BANDS)),
        level=_number(level, "the band level", MIN_LEVEL, MAX_LEVEL),
        score_parts=isinstance(score_parts, (list, tuple)) and SCORE_PARTS_ON in score_parts,
        kind=_choice(kind, "the diagram", DIAGRAM_KINDS),
    )


@dataclass(frozen=True)
class HeldOut:
    """How maps are fitted and scored on held-out rows.

    ``mode="folds"``: cross-fitting with ``folds`` folds (every row scored);
    ``mode="split"``: one seeded stratified split, ``test_fraction`` of the
    rows scored.
    """

    mode: str = "folds"
    folds: int = 5
    test_fraction: float = 0.5
    seed: int = 0

    @property
    def key(self) -> str:
        """A stable string for cache keys."""
        if self.mode == "folds":
            return f"folds{self.folds}-s{self.seed}"
        return f"split{self.test_fraction:.4f}-s{self.seed}"

    def compare_kwargs(self) -> dict:
        """Keyword arguments of :func:`calibration_core.compare.compare_maps`."""
        if self.mode == "folds":
            return {"folds": self.folds, "seed": self.seed}
        return {"test_fraction": self.test_fraction, "seed": self.seed}

    def describe(self) -> str:
        """E.g. ``"5-fold cross-fitting"``."""
        if self.mode == "folds":
            return f"{self.folds}-fold cross-fitting"
        return f"train/test split, {self.test_fraction:.0%} of rows held out"


def parse_heldout(mode, folds, test_fraction) -> HeldOut:
    """Validate the held-out scheme (folds 2..20, test fraction 0.1..0.9)."""
    mode = _choice(mode, "the held-out scheme", HELDOUT_MODES)
    if mode == "folds":
        return HeldOut("folds", folds=_whole(folds, "the number of folds", MIN_FOLDS, MAX_FOLDS))
    frac = _number(test_fraction, "the test fraction", MIN_TEST_FRACTION, MAX_TEST_FRACTION)
    return HeldOut("split", test_fraction=round(frac, 4))


def parse_maps(values) -> tuple[str, ...]:
    """Validate the selected calibration maps, returned in display order.

    Unknown names and maps that are not implemented in this installation
    are rejected.
    """
    if values is None:
        return ()
    if not isinstance(values, (list, tuple)) or len(values) > len(MAP_NAMES):
        raise SettingsError("the calibration maps must be a list of map names.")
    for v in values:
        if not isinstance(v, str) or v not in MAP_NAMES:
            raise SettingsError(
                f"unknown calibration map {str(v)[:40]!r}; choose from {', '.join(MAP_NAMES)}."
            )
    return tuple(n for n in MAP_NAMES if n in set(values))


def parse_handles(values) -> tuple[str, ...]:
    """Validate the selected model handles (opaque strings, at most 8)."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise SettingsError("the selected models must be a list.")
    if len(values) > MAX_SELECTED_MODELS:
        raise SettingsError(f"select at most {MAX_SELECTED_MODELS} models at a time.")
    out: list[str] = []
    for v in values:
        if not isinstance(v, str) or not HANDLE_PATTERN.fullmatch(v):
            raise SettingsError("a selected model is not valid; reload the page and pick again.")
        if v not in out:
            out.append(v)
    return tuple(out)


@dataclass
class RawSettings:
    """The raw values of every control, as a callback receives them."""

    handles: object = None
    maps: object = field(default_factory=list)
    heldout: object = "folds"
    folds: object = 5
    fraction: object = 0.5
    notion: object = "confidence"
    class_value: object = None
    scheme: object = "width"
    n_bins: object = 15
    band: object = "wilson"
    level: object = 0.95
    score_parts: object = field(default_factory=list)
    kind: object = "binned"
    #: The group picker's column (:mod:`app.groups.columns`); not part of :meth:`parse`.
    group: object = None
    #: The "Per group" section's minimum group size (None: the core's default).
    group_min_rows: object = None

    def parse(self):
        """Validated ``(handles, maps, heldout, view)``; raises SettingsError."""
        return (
            parse_handles(self.handles),
            parse_maps(self.maps),
            parse_heldout(self.heldout, self.folds, self.fraction),
            parse_view(
                self.notion,
                self.class_value,
                self.scheme,
                self.n_bins,
                self.band,
                self.level,
                self.score_parts,
                self.kind,
            ),
        )
