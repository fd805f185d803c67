"""Reading the configuration: every missing or invalid setting named at once (app.config)."""

from __future__ import annotations

import pytest

from app.config import AppConfig, ConfigError, error_line
from app.supervisor import check_configuration
from app.web_settings import web_settings

BAD_PRODUCTION = {
    "APP_ENV": "production",
    "MAX_UPLOAD_MB": "lots",
    "DEBUG": "maybe",
    "ALLOWED_ORIGINS": "example.org/path",
    "FRAME_ANCESTORS": "*",
}


def test_every_bad_setting_is_named_not_only_the_first():
    with pytest.raises(ConfigError) as caught:
        AppConfig.from_env(BAD_PRODUCTION)
    named = [problem.split()[0] for problem in caught.value.problems]
    assert named == [
        "MAX_UPLOAD_MB",
        "ALLOWED_ORIGINS",
        "DEBUG",
        "FRAME_ANCESTORS",
        "ALLOWED_HOSTS",
        "SECRET_KEY",
    ]
    assert str(caught.value).startswith("6 problems: (1) MAX_UPLOAD_MB must be a whole number")


def test_one_problem_keeps_its_own_message():
    with pytest.raises(ConfigError, match=r"^JOB_WORKERS must be at least 1, got 0\.$"):
        AppConfig.from_env({"JOB_WORKERS": "0"})


def test_the_error_line_is_one_line():
    error = ConfigError("A must be set.", "B must be\na number.")
    assert error_line(error) == (
        "calibration-dashboard: configuration error: 2 problems: (1) A must be set. "
        "(2) B must be a number."
    )


def test_web_settings_name_every_bad_gunicorn_variable():
    with pytest.raises(ConfigError) as caught:
        web_settings({"PORT": "http", "WEB_CONCURRENCY": "0", "THREADS": "4"})
    assert [p.split()[0] for p in caught.value.problems] == ["PORT", "WEB_CONCURRENCY", "THREADS=4"]
    assert web_settings({"REDIS_URL": "redis://r"}).worker_class == "gthread"


def test_the_supervisor_checks_the_app_and_gunicorn_together():
    env = {"APP_ENV": "production", "WEB_CONCURRENCY": "none"}
    with pytest.raises(ConfigError) as caught:
        check_configuration(env)
    # WEB_CONCURRENCY is read by the app (its memory share) and by gunicorn: named once.
    assert sorted(p.split()[0] for p in caught.value.problems) == [
        "ALLOWED_HOSTS",
        "SECRET_KEY",
        "WEB_CONCURRENCY",
    ]
    # Without REDIS_URL the supervisor starts its own Redis: threads are allowed.
    check_configuration({"THREADS": "4"})


def test_the_memory_cache_bound_is_shared_by_every_process_of_the_instance():
    mb = 1 << 20
    alone = AppConfig.from_env({"MEMORY_CACHE_MB": "1200"})
    assert alone.memory_cache_bytes == 1200 * mb  # one process (python -m app, a notebook)
    web = AppConfig.from_env({"MEMORY_CACHE_MB": "1200", "WEB_CONCURRENCY": "4"})
    assert web.memory_cache_bytes == 300 * mb
    team = {"MEMORY_CACHE_MB": "1200", "WEB_CONCURRENCY": "4", "JOB_WORKERS": "2"}
    with_jobs = AppConfig.from_env({**team, "REDIS_URL": "redis://redis:6379/0"})
    assert with_jobs.memory_processes == 6 and with_jobs.memory_cache_bytes == 200 * mb


def test_client_quota_defaults_to_twice_the_session_quota_and_the_reserve_is_bounded():
    assert AppConfig.from_env({"SESSION_QUOTA_MB": "100"}).client_quota_bytes == 200 << 20
    assert AppConfig.from_env({"CLIENT_QUOTA_MB": "300"}).client_quota_bytes == 300 << 20
    assert AppConfig.from_env({"STORE_RESERVE_PERCENT": "0"}).store_reserve_percent == 0
    with pytest.raises(ConfigError, match="STORE_RESERVE_PERCENT must be between 0 and 90"):
        AppConfig.from_env({"STORE_RESERVE_PERCENT": "95"})
