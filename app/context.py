"""What every callback and route of one app instance shares (no module-level state)."""

from __future__ import annotations

from dataclasses import dataclass

from .config import AppConfig
from .session import SessionManager
from .store import DataStore


@dataclass(frozen=True)
class AppContext:
    """The configuration, the disk store and the session manager of one app."""

    config: AppConfig
    store: DataStore
    sessions: SessionManager

    def session_id(self) -> str | None:
        """The current request's (or background job's) verified session id."""
        return self.sessions.current()
