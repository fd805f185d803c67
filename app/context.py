"""What every callback and route of one app instance shares (no module-level state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dash.background_callback.managers import BaseBackgroundCallbackManager

from .callback_failures import CallbackFailures
from .config import AppConfig
from .datasets import Datasets
from .session import SessionManager
from .store.data_store import DataStore
from .upload.parser import UploadParser
from .warmup import WarmUp


@dataclass(frozen=True)
class AppContext:
    """The configuration, the disk store, the session manager, the library warm-up, the jobs.

    ``upload_parser`` parses uploads in child processes (:mod:`app.upload.parser`).

    ``failures`` is Dash's ``on_error`` handler: what the page shows when a
    callback fails unexpectedly (:mod:`app.callback_failures`).
    """

    config: AppConfig
    store: DataStore
    sessions: SessionManager
    warm_up: WarmUp = field(default_factory=WarmUp)
    failures: CallbackFailures = field(default_factory=CallbackFailures)
    #: Dash's background-callback manager (:func:`app.jobs.background_manager`).
    jobs: BaseBackgroundCallbackManager | None = None
    upload_parser: UploadParser | None = None
    #: The server-side datasets (``DATASETS_DIR``); None: not configured.
    datasets: Datasets | None = None

    def dataset_names(self) -> list[str] | None:
        """The datasets the page offers; None when ``DATASETS_DIR`` is not set."""
        return None if self.datasets is None else self.datasets.names()

    def session_id(self) -> str | None:
        """The current request's (or background job's) verified session id."""
        return self.sessions.current()
