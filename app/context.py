"""What every callback and route of one app instance shares (no module-level state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .callback_failures import CallbackFailures
from .config import AppConfig
from .session import SessionManager
from .store.data_store import DataStore
from .warmup import WarmUp


@dataclass(frozen=True)
class AppContext:
    """The configuration, the disk store, the session manager and the library warm-up.

    ``failures`` is Dash's ``on_error`` handler: what the page shows when a
    callback fails unexpectedly (:mod:`app.callback_failures`).
    """

    config: AppConfig
    store: DataStore
    sessions: SessionManager
    warm_up: WarmUp = field(default_factory=WarmUp)
    failures: CallbackFailures = field(default_factory=CallbackFailures)

    def session_id(self) -> str | None:
        """The current request's (or background job's) verified session id."""
        return self.sessions.current()
