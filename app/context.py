"""What every callback and route of one app instance shares (no module-level state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dash.background_callback.managers import BaseBackgroundCallbackManager

from .config import AppConfig
from .session import SessionManager
from .store import DataStore
from .warmup import WarmUp


@dataclass(frozen=True)
class AppContext:
    """The configuration, the disk store, the session manager, the library warm-up, the jobs."""

    config: AppConfig
    store: DataStore
    sessions: SessionManager
    warm_up: WarmUp = field(default_factory=WarmUp)
    #: Dash's background-callback manager (:func:`app.jobs.background_manager`).
    jobs: BaseBackgroundCallbackManager | None = None

    def session_id(self) -> str | None:
        """The current request's (or background job's) verified session id."""
        return self.sessions.current()
