"""The "Over time" card of the Diagnostics section (issue 19): calibration_core.slices' numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.callbacks.groups.time import POINTS_NOTE, run_time_job, time_panel, window_panel
from app.groups.tables import ABOVE_REFERENCE
from app.session import new_session_id
from app.settings import RawSettings, SettingsError
from calibration_core import Binning, load_predictions
from calibration_core.slices import drift_report, time_windows

from .diagnostics_helpers import R, diag_context

DAYS, DRIFT_FROM = 10, 7  # days 8-10 (2023-11-22 on) are miscalibrated


def drift_frame(n: int = 4000, seed: int = 1) -> pd.DataFrame:
    """Calibrated predictions whose accuracy drops by 0.25 from the 8th day."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1, n)
    t = 1_700_006_400 + np.sort(rng.integers(0, DAYS * 86400, n))
    truth = conf - 0.25 * ((t - 1_700_006_400) // 86400 >= DRIFT_FROM)
    correct = rng.random(n) < truth
    stamps = pd.to_datetime(t, unit="s").strftime("%Y-%m-%dT%H:%M:%SZ")
    return pd.DataFrame({"site": rng.choice(["a", "b"], n), "timestamp": stamps, "p_a": conf,
                         "p_b": 1 - conf, "label": np.where(correct, "a", "b")})  # fmt: skip


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    context = diag_context(tmp_path_factory.mktemp("time"))
    yield context
    context.store.close()


@pytest.fixture(scope="module")
def sid():
    return new_session_id()


def upload(ctx, sid, frame: pd.DataFrame, tmp_path, name="drift.csv"):
    """Load the frame as the loader does and store it for the session: (info, loaded)."""
    path = tmp_path / name
    frame.to_csv(path, index=False)
    (pred,) = load_predictions(path)
    (info,) = ctx.store.add_models(sid, [pred], source=name)
    return info, pred


RAW = RawSettings(None, [])


def panel(ctx, sid, handle, column=None, window="1d", rows=None, reference=3, click=None):
    time = controls(window, reference, column, rows)
    return time_panel(ctx, sid, handle, RAW, time, R, click, None)


def controls(window="1d", reference=3, column=None, rows=None) -> dict:
    """The card's controls as the callbacks get them."""
    return {"column": column, "window": window, "rows": rows, "reference": reference}


def test_time_panel_numbers_are_the_cores_and_the_drift_is_highlighted(ctx, sid, tmp_path):
    info, pred = upload(ctx, sid, drift_frame(), tmp_path)
    _, windows = time_windows(pred, "1d")
    # At once: point estimates of every window, nothing flagged, no table yet.
    options, messages, fig, style, table = panel(ctx, sid, info.handle)
    assert options == ["site", "timestamp"] and style == {} and table == []
    assert any(m.children == POINTS_NOTE for m in messages)
    points = drift_report(pred, windows, reference=3, binning=Binning(), n_resamples=0).to_dict()
    ece = fig["data"][0]
    assert list(ece["x"]) == [w["window"] for w in points["windows"]]
    np.testing.assert_allclose(ece["y"], [w["ece"] for w in points["windows"]], rtol=1e-12)
    assert "error_y" not in ece
    # The background job stores the intervals; the panel then shows the core's numbers.
    calls = []
    state = run_time_job(ctx, sid, info.handle, RAW, controls(), R, calls.append)
    assert state["error"] is None and calls
    core = drift_report(pred, windows, reference=3, binning=Binning(), n_resamples=R, level=0.95,
                        seed=0).to_dict()  # fmt: skip
    _, messages, fig, _, table = panel(ctx, sid, info.handle)
    assert not any(m.children == POINTS_NOTE for m in messages)
    for trace, name in zip(fig["data"], ("ece", "accuracy", "confidence"), strict=True):
        rows = core["windows"]
        np.testing.assert_allclose(trace["y"], [w[name] for w in rows], rtol=1e-12)
        upper = np.array([w[f"{name}_upper"] - w[name] for w in rows])
        np.testing.assert_allclose(trace["error_y"]["array"], upper, rtol=1e-9, atol=1e-15)
    ref = core["reference"]
    band = fig["layout"]["shapes"][0]
    assert (band["y0"], band["y1"]) == (ref["ece_lower"], ref["ece_upper"])
    # The drifted days, and only they, are flagged: vermillion points, highlighted rows.
    flagged = [w["window"] for w in core["windows"] if w["flagged"]]
    assert flagged == ["2023-11-22", "2023-11-23", "2023-11-24"]
    colours = fig["data"][0]["marker"]["color"]
    assert [c == "#D55E00" for c in colours] == [w["flagged"] for w in core["windows"]]
    rows = table.children[0].children.children[1].children  # table-wrap > table > tbody
    marked = [r.children[0].children for r in rows if r.className == "highlight"]
    assert marked == flagged
    assert all(r.children[-1].children == ABOVE_REFERENCE for r in rows if r.className)


def test_clicking_a_window_shows_its_reliability_diagram(ctx, sid, tmp_path):
    info, pred = upload(ctx, sid, drift_frame(), tmp_path, "click.csv")
    args = (ctx, sid, info.handle, RAW, controls())
    fig, style = window_panel(*args, None)
    assert style == {"display": "none"}
    fig, style = window_panel(*args, {"points": [{"x": "2023-11-23", "customdata": [8, 1]}]})
    assert style == {}
    _, windows = time_windows(pred, "1d")
    g = windows.labels.index("2023-11-23")
    stats = pred.subset(np.flatnonzero(windows.codes == g)).statistics(Binning())
    points = [t for t in fig["data"] if t.get("legendgroup") == "curve"]
    assert len(points) == 1  # one panel: the clicked window
    np.testing.assert_allclose(points[0]["y"], stats.frequency[stats.count > 0])
    core = drift_report(pred, windows, reference=3, n_resamples=0).to_dict()["windows"][g]
    assert f"ECE {core['ece']:.4f}" in [a["text"] for a in fig["layout"]["annotations"]]
    # The chart outlines the clicked window.
    *_, chart, _, _ = panel(ctx, sid, info.handle, click={"points": [{"x": "2023-11-23"}]})
    widths = chart["data"][0]["marker"]["line"]["width"]
    assert widths[g] == 3 and sum(w == 3 for w in widths) == 1


def subtitle(fig) -> str:
    """The time chart's subtitle, on one line."""
    return fig["layout"]["title"]["subtitle"]["text"].replace("<br>", " ")


def test_unparsable_timestamps_are_reported_with_their_rows(ctx, sid, tmp_path):
    frame = drift_frame(400)
    frame.loc[[4, 8], "timestamp"] = ["yesterday", "not a time"]
    info, _ = upload(ctx, sid, frame, tmp_path, "bad.csv")
    options, messages, _, style, table = panel(ctx, sid, info.handle)
    assert options == ["site", "timestamp"] and style == {"display": "none"} and table == []
    text = messages.children
    assert "'yesterday'" in text and "rows 5, 9" in text and "ISO 8601" in text


def test_without_a_time_column_the_windows_are_rows(ctx, sid, tmp_path):
    frame = drift_frame(1000).drop(columns="timestamp")
    info, _ = upload(ctx, sid, frame, tmp_path, "rows.csv")
    _, messages, fig, _, _ = panel(ctx, sid, info.handle, window="1w", reference=2)
    assert "no time column" in messages[0].children
    assert list(fig["data"][0]["x"])[:2] == ["rows 1-100", "rows 101-200"]
    _, _, fig, _, _ = panel(ctx, sid, info.handle, window="rows", rows=250, reference=1)
    assert list(fig["data"][0]["x"]) == [f"rows {i + 1}-{i + 250}" for i in range(0, 1000, 250)]
    # A reference as long as the data: the core's message, not a traceback.
    _, messages, _, style, _ = panel(ctx, sid, info.handle, window="rows", rows=250, reference=4)
    assert style == {"display": "none"}
    assert "covers all 4 windows" in messages.children
    # Windows of rows take a window range (dates would need a time column).
    _, _, fig, _, _ = panel(ctx, sid, info.handle, window="rows", rows=250, reference="2:3")
    assert "reference: windows 2 to 3" in subtitle(fig)
    _, messages, *_ = panel(ctx, sid, info.handle, window="rows", rows=250,
                            reference="2023-11-15:2023-11-16")  # fmt: skip
    assert "give window numbers instead" in messages.children


def test_a_reference_period_in_dates_gives_the_cores_numbers(ctx, sid, tmp_path):
    info, pred = upload(ctx, sid, drift_frame(), tmp_path, "dates.csv")
    period = "2023-11-15:2023-11-17"
    run_time_job(ctx, sid, info.handle, RAW, controls(reference=period), R, lambda _: None)
    _, _, fig, _, table = panel(ctx, sid, info.handle, reference=period)
    assert "reference: 2023-11-15 to 2023-11-17" in subtitle(fig)
    _, windows = time_windows(pred, "1d")
    core = drift_report(pred, windows, reference=period, binning=Binning(), n_resamples=R)
    same = drift_report(pred, windows, reference=3, binning=Binning(), n_resamples=R)
    assert core.to_dict()["windows"] == same.to_dict()["windows"]
    assert "reference (2023-11-15 to 2023-11-17)" in str(table)
    assert core.flagged.any()
    # Problems with the period are the card's message, nothing drawn.
    for bad, words in [("2023-11-18:2023-11-16", "ends before it starts"),
                       ("2024-05-01:2024-06-01", "lies outside the data"),
                       ("soon", "is not understood")]:  # fmt: skip
        _, messages, _, style, _ = panel(ctx, sid, info.handle, reference=bad)
        assert style == {"display": "none"} and words in str(messages), bad


def test_the_page_report_shows_the_card_with_its_last_settings(ctx, tmp_path):
    from app import ids
    from app.services.report import small_export

    sid = new_session_id()
    info, pred = upload(ctx, sid, drift_frame(), tmp_path, "report.csv")
    raw = RawSettings([info.handle], [])
    before = small_export(ctx, sid, ids.EXPORT_REPORT_HTML, raw)["content"]
    assert "<h3>Over time</h3>" not in before  # the card was never opened
    panel(ctx, sid, info.handle)  # remembers day windows, 3 reference days
    points = small_export(ctx, sid, ids.EXPORT_REPORT_HTML, raw)["content"]
    assert "<h3>Over time</h3>" in points and "Intervals not computed" in points
    run_time_job(ctx, sid, info.handle, RAW, controls(), R, lambda _: None)
    report = small_export(ctx, sid, ids.EXPORT_REPORT_HTML, raw)["content"]
    section = report[report.index("<h3>Over time</h3>") :]
    assert "Intervals not computed" not in section
    _, windows = time_windows(pred, "1d")
    core = drift_report(pred, windows, reference=3, binning=Binning(), n_resamples=R).to_dict()
    for w in core["windows"]:
        row = f'<tr class="highlight"><td>{w["window"]}</td>'
        assert (row in section) == w["flagged"], w["window"]
        assert f"{w['ece']:.4f}<br>[{w['ece_lower']:.4f},\u00a0{w['ece_upper']:.4f}]" in section


def test_the_windows_bootstrap_is_capped_whatever_the_section_asks():
    """1,000 resamples per window would outlast the job limit on a million rows."""
    from app.groups.time import TIME_MAX_RESAMPLES, time_resamples

    assert TIME_MAX_RESAMPLES == 200
    assert [time_resamples(r) for r in (200, 1000, 5000)] == [200, 200, 200]
    with pytest.raises(SettingsError):
        time_resamples(7)


def test_times_of_several_zones_are_noted_on_the_card(ctx, sid, tmp_path):
    """Text times of a Parquet file in several zones: converted to UTC, and the card says so."""
    frame = drift_frame(400)
    frame.loc[::2, "timestamp"] = frame.loc[::2, "timestamp"].str.replace("Z", "+00:00")
    frame.loc[1::4, "timestamp"] = (
        pd.to_datetime(frame.loc[1::4, "timestamp"]) + pd.Timedelta(hours=2)
    ).dt.strftime("%Y-%m-%dT%H:%M:%S+02:00")
    path = tmp_path / "zones.parquet"
    frame.to_parquet(path, index=False)
    (pred,) = load_predictions(path)
    (info,) = ctx.store.add_models(sid, [pred], source=path.name)
    _, messages, fig, _, _ = panel(ctx, sid, info.handle)
    texts = " ".join(m.children for m in messages)
    notice = "times in 2 time zones (+02:00, Z) were converted to UTC."
    assert f"time column 'timestamp' of 'zones': {notice}" in texts, texts
    assert fig["data"]
