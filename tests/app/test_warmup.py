"""The page starts without the fitting libraries; the warm-up loads them before any job forks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import dash

from app.warmup import HEAVY_MODULES, WarmJobManager, WarmUp

HEAVY = ("sklearn", "pandas", "pyarrow", "scipy.stats", "scipy.special", "scipy.sparse", "IPython")


def _run(code: str, env_dir) -> str:
    env = {"CACHE_DIR": str(env_dir), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_server_and_its_first_page_do_not_load_the_fitting_libraries(tmp_path):
    # A first start builds the demo (that trains scikit-learn models) into the cache.
    _run(
        """
        from app.config import AppConfig
        from app.factory import create_app
        create_app(AppConfig.from_env()).server.extensions["calibration_dashboard"].store.demo_models()
        """,
        tmp_path,
    )
    out = _run(
        f"""
        import sys
        from app.cli import _without_ipython
        _without_ipython()
        from app.config import AppConfig
        from app.factory import create_app
        app = create_app(AppConfig.from_env())
        client = app.server.test_client()
        assert client.get("/").status_code == 200
        assert client.get("/_dash-layout").status_code == 200
        print(sorted(m for m in {HEAVY!r} if sys.modules.get(m) is not None))
        """,
        tmp_path,
    )
    assert out.strip() == "[]", out


def test_a_gunicorn_worker_loads_them_before_it_answers(tmp_path):
    out = _run(
        """
        import sys
        import app.wsgi
        ctx = app.wsgi.server.extensions["calibration_dashboard"]
        print(ctx.warm_up.done, all(m in sys.modules for m in ("sklearn", "pandas")))
        """,
        tmp_path,
    )
    assert out.split() == ["True", "True"], out


def test_warm_up_imports_its_modules_once_and_tolerates_a_missing_one(tmp_path, monkeypatch):
    (tmp_path / "warm_probe_module.py").write_text("COUNT = [0]\nCOUNT[0] += 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    warm = WarmUp(("warm_probe_module", "no_such_module_for_the_warm_up"))
    assert warm.wait(timeout=0) is True  # never started: nothing to wait for
    warm.start().join(timeout=30)
    assert warm.done and warm.seconds is not None
    warm.run()  # a second run does nothing
    assert sys.modules["warm_probe_module"].COUNT == [1]
    assert set(HEAVY_MODULES) >= {"sklearn.base", "pandas", "calibration_core.compare"}


def test_job_manager_never_forks_while_a_warm_up_imports(tmp_path, monkeypatch):
    (tmp_path / "slow_warm_probe.py").write_text("import time\ntime.sleep(0.6)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    calls: list[tuple[float, bool]] = []
    warm = WarmUp(("slow_warm_probe",))

    def fake_fork(self, key, job_fn, args, context):
        calls.append((time.perf_counter(), warm.done))
        return 1234

    monkeypatch.setattr(dash.DiskcacheManager, "call_job_fn", fake_fork)
    import diskcache

    manager = WarmJobManager(diskcache.Cache(str(tmp_path / "jobs")), warm)
    thread = warm.start()
    deadline = time.perf_counter() + 5
    while "slow_warm_probe" not in sys.modules and time.perf_counter() < deadline:
        time.sleep(0.01)  # the warm-up thread is inside the slow import now
    started = time.perf_counter()
    assert manager.call_job_fn("key", None, (), None) == 1234
    thread.join(timeout=30)
    assert calls and calls[0][1] is True  # the fork came after the warm-up
    assert calls[0][0] - started > 0.2


def test_delayed_warm_up_starts_later_and_can_be_waited_for(monkeypatch, tmp_path):
    (tmp_path / "late_warm_probe.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    warm = WarmUp(("late_warm_probe",))
    thread = warm.start(delay=0.3)
    time.sleep(0.1)
    assert not warm.done
    thread.join(timeout=30)
    assert warm.done and warm.wait(timeout=0)
    assert isinstance(thread, threading.Thread) and thread.daemon
