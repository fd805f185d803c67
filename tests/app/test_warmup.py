"""The page starts without the fitting libraries; the warm-up loads them in the background."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from app.warmup import HEAVY_MODULES, WarmUp

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


@pytest.mark.slow  # fresh interpreters import the whole stack
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
        from app.cli.serve import without_ipython
        without_ipython()
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


@pytest.mark.slow  # fresh interpreters import the whole stack
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


@pytest.mark.slow  # fresh interpreters import the whole stack
def test_dev_server_answers_every_request_while_the_warm_up_runs(tmp_path):
    """Regression: requests served while the warm-up imported pandas got HTTP 500
    ("partially initialized module 'pandas'") from plotly's JSON encoder."""
    import socket
    import urllib.error
    import urllib.request
    from collections import Counter

    repo = str(__import__("pathlib").Path(__file__).resolve().parents[2])
    env = {"CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": repo}
    # The demo in the cache first (building it imports pandas before the server listens).
    _run(
        """
        from app.config import AppConfig
        from app.factory import create_app
        create_app(AppConfig.from_env()).server.extensions["calibration_dashboard"].store.demo_models()
        """,
        tmp_path,
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = (
        "import sys; sys.modules.setdefault('IPython', None)\n"
        "import app.server as s\n"
        "s.WARM_UP_DELAY = 0.0\n"
        f"s.serve(port={port})\n"
    )
    log_path = tmp_path / "server.log"
    log_file = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=log_file,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    codes: Counter = Counter()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.01)

        def warmed() -> bool:
            return "warm-up: libraries loaded" in log_path.read_text()

        def hammer() -> None:
            end = time.monotonic() + 60
            while time.monotonic() < end and not warmed():
                for path in ("/", "/_dash-layout", "/_dash-dependencies"):
                    try:
                        codes[urllib.request.urlopen(base + path, timeout=30).status] += 1
                    except urllib.error.HTTPError as exc:
                        codes[exc.code] += 1

        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log_file.close()
    log = log_path.read_text()
    assert "warm-up: libraries loaded" in log, log[-2000:]
    assert set(codes) == {200} and codes[200] > 20, (codes, log[-3000:])
