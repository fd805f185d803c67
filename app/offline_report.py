"""The page's HTML report of a predictions file, without a browser (CLI ``report``).

The file's models go into a throwaway disk store in a temporary folder, the
maps are fitted by the page's own fit function (:func:`app.services.fit.run_fits`),
the "Beyond bins" measures are computed as the Diagnostics section's job does,
and the report is the page's "HTML report" export
(:func:`app.services.report.small_export`), so that the command and the
page can never write different reports for the same file and settings.
"""

from __future__ import annotations

import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from calibration_core import load_with_notices

from . import ids
from .config import AppConfig
from .context import AppContext
from .report.groups import SliceSettings, slices_html
from .services.fit import run_fits
from .services.report import small_export
from .session import SessionManager, new_session_id
from .settings import RawSettings
from .store.data_store import DataStore

__all__ = ["ReportSettings", "file_report"]

#: Store limits of a one-off report: the file given is the whole session.
_NO_LIMIT = 1 << 50


@dataclass(frozen=True)
class ReportSettings:
    """What the report is computed with (the page's controls of the same names)."""

    maps: tuple[str, ...]
    folds: int = 5
    n_bins: int = 15
    scheme: str = "width"
    label_column: str | None = None
    renormalize: bool = False
    #: The diagram kind (:data:`app.settings.DIAGRAM_KINDS`).
    diagram: str = "binned"
    #: Calibration by group and over time (``--group-by``, ``--window``).
    slices: SliceSettings = field(default_factory=SliceSettings)


def _context(root: Path, n_models: int) -> AppContext:
    """A private context: a store under ``root`` that holds every model of the file."""
    config = AppConfig(cache_dir=root, secret_key=secrets.token_hex(16))
    store = DataStore(
        root / "store",
        size_limit_bytes=_NO_LIMIT,
        max_models_per_session=max(n_models, config.max_models_per_session),
        max_session_bytes=_NO_LIMIT,
    )
    sessions = SessionManager(config.resolved_secret_key(), config.session_ttl_seconds)
    return AppContext(config=config, store=store, sessions=sessions)


def _ignore_progress(_value) -> None:
    """The page's fit reports progress to its progress bar; a report has none."""


def measure_beyond_bins(ctx: AppContext, sid: str, raw: RawSettings) -> None:
    """Compute and store the "Beyond bins" measures of every model (the page's job does it there).

    Nobody presses "Compute measures" for a report written from the command
    line, so the report would otherwise only say how to get them.
    """
    from .diagnostics.beyond import beyond_rows
    from .diagnostics.target import diag_target

    for handle in raw.handles:
        beyond_rows(ctx.store, diag_target(ctx.store, sid, handle, raw), compute=True)


def file_report(path: Path, settings: ReportSettings) -> tuple[str, list[str]]:
    """The standalone HTML report of a predictions file.

    Parameters
    ----------
    path : Path
        A predictions file (CSV/TSV, Parquet, NPZ), as ``evaluate`` reads it.
    settings : ReportSettings

    Returns
    -------
    (str, list of str)
        The HTML text, and warnings (renormalised rows, maps refused by the
        parameter budget).

    Raises
    ------
    CalibrationInputError
        Unreadable predictions or invalid settings.
    """
    models, notices = load_with_notices(
        path, label_column=settings.label_column, renormalize=settings.renormalize
    )
    with tempfile.TemporaryDirectory(prefix="calibration-report-") as tmp:
        ctx = _context(Path(tmp), len(models))
        try:
            sid = new_session_id()
            infos = ctx.store.add_models(sid, models, source=path.name)
            handles = [info.handle for info in infos]
            state = run_fits(
                ctx, sid, handles, list(settings.maps), "folds", settings.folds, 0.5,
                _ignore_progress,
            )  # fmt: skip
            raw = RawSettings(
                handles,
                list(settings.maps),
                "folds",
                settings.folds,
                scheme=settings.scheme,
                n_bins=settings.n_bins,
                kind=settings.diagram,
            )
            measure_beyond_bins(ctx, sid, raw)
            _, _, _, view = raw.parse()
            sections, slice_warnings = slices_html(
                list(zip(models, infos, strict=True)), view, settings.slices
            )
            content = small_export(ctx, sid, ids.EXPORT_REPORT_HTML, raw, sections)["content"]
        finally:
            ctx.store.close()
    warnings = [state["error"]] if state.get("error") else []
    return content, notices + warnings + slice_warnings
