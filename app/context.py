"""What every callback and route of one app instance shares (no module-level state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import AppConfig
from .session import SessionManager
from .store.data_store import DataStore
from .warmup import WarmUp


@dataclass(frozen=True)
class AppContext:
    """The configuration, the disk store, the session manager and the library warm-up."""

    config: AppConfig
    store: DataStore
    sessions: SessionManager
    warm_up: WarmUp = field(default_factory=WarmUp)

    def session_id(self) -> str | None:
        """The current request's (or background job's) verified session id."""
        return self.sessions.current()
