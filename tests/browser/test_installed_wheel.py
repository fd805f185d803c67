"""The dashboard as users install it: the built wheel, outside the source tree.

An editable install or a checkout finds ``assets/`` and the demo's outputs in the
source tree, which hides a wheel that lacks them (the page then loads without its
scripts). So this module builds the sdist and, from it, the wheel
(``python -m build --no-isolation``), checks that both carry every module and
every file the app serves, installs the wheel with ``--no-deps`` into a fresh
virtualenv that borrows the test environment's locked dependencies (a ``.pth``
line naming their site-packages: nothing is downloaded again, and the
editable install's import hook, a ``.pth`` file of that folder, is not run),
starts ``calibration-dashboard serve`` from a folder outside the repository and
checks in headless Chromium that the demo's diagrams are drawn, the console
stays clean and every script, stylesheet and font the page uses answers 200.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.layout.page import EXAMPLE_FILE

from .conftest import (
    APP_ENV_VARS,
    REPO,
    TIMEOUT_MS,
    VIEWPORT,
    Server,
    free_port,
    start_server,
    wait_until_healthy,
)
from .dashboard_page import Dashboard, PageWatch

#: Builds the sdist and the wheel and a virtualenv: slow even where no browser is used.
pytestmark = pytest.mark.slow

#: The top-level source folders and where the wheel installs them.
PACKAGED_TREES = {"app": "app", "calibration_core": "calibration_core", "assets": "app/assets"}
#: Resources the page cannot work without; each must answer 200.
STATIC_TYPES = ("script", "stylesheet", "font")


def _source_files() -> set[str]:
    """Every file the wheel must carry, as its path inside the wheel."""
    wanted = set()
    for source, installed in PACKAGED_TREES.items():
        for path in (REPO / source).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                wanted.add(f"{installed}/{path.relative_to(REPO / source).as_posix()}")
    return wanted


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel built from it, in a temporary folder."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel installed and the test environment's dependencies."""
    root = tmp_path_factory.mktemp("wheel-venv")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    borrowed = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "locked_test_dependencies.pth").write_text("\n".join(sorted(borrowed)) + "\n")
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(dist["wheel"])],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return venv


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without the app's settings and without ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k not in (*APP_ENV_VARS, "PYTHONPATH")}
    env.update(extra)
    return env


def test_wheel_and_sdist_carry_every_module_and_asset(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
    missing = _source_files() - names
    assert not missing, f"the wheel lacks {sorted(missing)}"
    with tarfile.open(dist["sdist"]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    for source in PACKAGED_TREES:
        files = {
            p.relative_to(REPO).as_posix()
            for p in (REPO / source).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        }
        assert files <= members, f"the sdist lacks {sorted(files - members)}"


def test_installed_package_runs_from_the_virtualenv(venv, tmp_path):
    """Imports, the assets folder and the version all come from the installed wheel."""
    script = (
        "import app, calibration_core, app.factory as f\n"
        "print(app.__file__); print(calibration_core.__file__); print(f.ASSETS_DIR)\n"
        "print(calibration_core.__version__)"
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    for path in out[:3]:
        assert path.startswith(str(venv)), out
    assert Path(out[2], "upload.js").is_file() and Path(out[2], "vendor").is_dir()
    assert Path(out[2], EXAMPLE_FILE).read_bytes() == (REPO / "assets" / EXAMPLE_FILE).read_bytes()
    from importlib.metadata import version

    assert out[3] == version("calibration-dashboard") != "0+unknown"
    cli = subprocess.run(
        [str(venv / "bin" / "calibration-dashboard"), "--version"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert cli.stdout.strip() == f"calibration-dashboard {out[3]}"


@pytest.fixture(scope="module")
def installed_server(venv, tmp_path_factory) -> Iterator[Server]:
    """``calibration-dashboard serve`` of the installed wheel, started outside the repository."""
    cwd = tmp_path_factory.mktemp("wheel-serve")
    port = free_port()
    srv = start_server(
        [str(venv / "bin" / "calibration-dashboard"), "serve", "--port", str(port)],
        f"http://127.0.0.1:{port}",
        cwd=cwd,
        env=_clean_env(CACHE_DIR=str(cwd / "cache"), PYTHONUNBUFFERED="1"),
        log_path=cwd / "serve.log",
    )
    try:
        wait_until_healthy(srv)
    except RuntimeError as exc:
        srv.stop()
        pytest.fail(f"the installed dashboard did not start: {exc}\n{srv.log_since()[-3000:]}")
    yield srv
    srv.stop()


def test_installed_dashboard_draws_the_demo_with_every_static_file(browser, installed_server):
    context = browser.new_context(viewport=VIEWPORT, base_url=installed_server.url)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    watch = PageWatch()
    watch.attach(page)
    statuses: dict[str, int] = {}
    page.on(
        "response",
        lambda r: (
            statuses.__setitem__(r.url, r.status)
            if r.request.resource_type in STATIC_TYPES
            else None
        ),
    )
    try:
        Dashboard(page, watch).open()
        assert page.locator(".js-plotly-plot .main-svg").count() > 0
        # Also what the page only names (preload/prefetch links fetched later).
        referenced = page.eval_on_selector_all(
            "script[src], link[rel=stylesheet], link[rel=preload], link[rel=prefetch]",
            "els => els.map(e => e.src || e.href)",
        )
        for url in referenced:
            statuses.setdefault(url, page.request.get(url).status)
        assert any("/assets/upload.js" in u for u in statuses), sorted(statuses)
        assert any("plotly-basic.min.js" in u for u in statuses), sorted(statuses)
        bad = {u: s for u, s in statuses.items() if s != 200}
        assert not bad, f"static files that did not answer 200: {bad}"
        # The example file the conventions under the drop zone link to.
        example = page.request.get(page.get_attribute("#example-download", "href"))
        assert example.status == 200 and example.headers["content-type"].startswith("text/csv")
        assert example.body() == (REPO / "assets" / EXAMPLE_FILE).read_bytes()
        watch.assert_clean()
    finally:
        context.close()
