"""The "Per group" section through Dash's callback protocol (a DashTab on Flask's test client).

The section's numbers must be :mod:`calibration_core.slices`' on the same
data; the group picker offers the file's other columns but not ``model`` and
not ids; more than 1,000 groups is a note asking for a coarser column, with
nothing drawn; the background job adds the intervals and the test.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

from app.callbacks.controls import GROUP_FIELDS, SETTING_PROPS
from app.callbacks.groups.columns import run_group_job, run_group_maps_job
from app.config import AppConfig
from app.factory import create_app
from calibration_core import Binning
from calibration_core.io import load_predictions
from calibration_core.slices import group_index, group_maps, slice_report

SECTION = "group-section.style"
GROUP = "group-select.value"
GATE = "group-gate.data"
N_ROWS = 3000


def planted_csv(n: int = N_ROWS, seed: int = 1) -> bytes:
    """Five sites of about 590 rows, one of 60 ("island"), and "west" overconfident.

    West's probabilities are its logits times 3 through the softmax (labels
    drawn from the untouched ones), so its ECE is several times the others'.
    Also an ``id`` column (one value per row: not offered) and a ``batch``
    column of 2,000 values (offered to no one: more than a tenth of the rows).
    """
    rng = np.random.default_rng(seed)
    sites = np.array(["north", "south", "east", "west", "central"])[rng.integers(0, 5, n)]
    sites[:60] = "island"
    z = rng.normal(size=(n, 3)) * 1.5
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    bad = sites == "west"
    sharp = np.exp(z[bad] * 3)
    p[bad] = sharp / sharp.sum(axis=1, keepdims=True)
    lines = ["id,site,batch,p_a,p_b,p_c,label"]
    for i in range(n):
        lines.append(f"{i},{sites[i]},b{i % 2000},{p[i, 0]:.6f},{p[i, 1]:.6f},{p[i, 2]:.6f},"
                     f"{'abc'[y[i]]}")  # fmt: skip
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    config = AppConfig(
        cache_dir=tmp_path_factory.mktemp("groups"),
        secret_key="per-group-secret-0123456789abcdef",
        max_upload_mb=20,
    )
    return create_app(config)


@pytest.fixture(scope="module")
def content():
    return planted_csv()


@pytest.fixture
def tab(app, dash_tab, content):
    tab = dash_tab(flask_client=app.server.test_client()).load()
    status, body = tab.upload("sites.csv", content)
    assert status == 200 and body["errors"] == [], body
    tab.handle = body["models"][0]["handle"]
    tab.values["model-select.value"] = [tab.handle]
    return tab


def _gate(tab, group, **settings) -> dict:
    """What the browser-side gate writes (``calibration.groupGate``) for the page's values
    with these changed: the values of the settings the section follows, in order."""
    tab.values.update({GROUP: group, **settings})
    props = [SETTING_PROPS[name] for name in GROUP_FIELDS]
    return {"values": [tab.values.get(f"{cid}.{prop}") for cid, prop in props]}


def _section(tab, group, **settings) -> dict:
    gate = _gate(tab, group, **settings)
    return tab.call(SECTION, [GATE], {GATE: gate})


def _text(node) -> str:
    """The text of a Dash component tree (JSON), in document order."""
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return " ".join(_text(n) for n in node)
    if isinstance(node, dict):
        return _text(node.get("props", {}).get("children"))
    return "" if node is None else str(node)


def _table(out: dict) -> list[list[str]]:
    """The per-group table's body rows as cell texts."""
    rows = []

    def walk(node):
        if isinstance(node, list):
            for n in node:
                walk(n)
        elif isinstance(node, dict):
            if node.get("type") == "Tr" and node["props"].get("children"):
                cells = node["props"]["children"]
                if cells and cells[0].get("type") == "Td":
                    rows.append([_text(c) for c in cells])
            walk(node.get("props", {}).get("children"))

    walk(out["group-table.children"])
    return rows


def test_picker_offers_the_other_columns_but_not_ids(tab):
    out = tab.call("group-select.options", ["model-select.value"], {})
    assert [o["value"] for o in out["group-select.options"]] == ["site"]


def test_group_table_equals_the_core(tab, content):
    out = _section(tab, "site", **{"n-bins.value": 10})
    assert out[SECTION] == {}
    (pred,) = load_predictions(io.BytesIO(content), file_name="sites.csv")
    core = slice_report(pred, group_index(pred, ["site"]), binning=Binning("width", 10),
                        n_resamples=0, test_resamples=0)  # fmt: skip
    rows = _table(out)
    assert rows[0][:2] == ["all rows", f"{N_ROWS:,}"]
    assert float(rows[0][4].split()[0]) == pytest.approx(core.whole["ece"], abs=5e-5)
    by_label = {row[0]: row for row in rows[1:]}
    assert set(by_label) == set(core.groups.labels)
    columns = {"accuracy": 3, "ece": 4, "mce": 5, "brier_score": 6, "log_loss": 7}
    for g, label in enumerate(core.groups.labels):
        row = by_label[label]
        assert row[1] == f"{int(core.groups.sizes[g]):,}"
        for name, j in columns.items():
            assert float(row[j].split()[0]) == pytest.approx(core.metrics[name][g], abs=5e-5)
    # West is the planted group, found as the worst; the island (60 rows) is small, not judged.
    assert core.groups.labels[core.worst] == "site=west"
    assert rows[1][0] == "site=west" and rows[1][2] == "worst"
    assert by_label["site=island"][2] == "small: not judged"
    summary = _text(out["group-summary.children"])
    gap = core.metrics["ece"][core.worst] - core.whole["ece"]
    assert f"Worst group: site=west, ECE {core.metrics['ece'][core.worst]:.4f}" in summary
    assert f"{gap:+.4f} against all rows" in summary
    # The figure: one small panel per group, the worst first, with the count.
    figure = out["group-graph.children"][0]["props"]["figure"]
    titles = [a["text"] for a in figure["layout"]["annotations"] if a.get("yanchor") == "bottom"]
    assert len(titles) == 6 and titles[0] == "west · worst"
    assert titles[-1] == "island · small, n=60"  # judged groups first, by ECE
    assert "showing all 6 groups" in json.dumps(figure["layout"]["title"])
    # The intervals are asked of the background job: the gate's values, the group last.
    request = _gate(tab, "site")
    assert request["values"][-1] == "site" and GROUP_FIELDS[-1] == "group"


def test_intervals_and_test_follow_from_the_job(app, tab, content):
    """The job (its plain body here) stores the intervals; the section then shows them."""
    out = _section(tab, "site")
    assert "being computed in the background" in _text(out["group-table.children"])
    request = _gate(tab, "site")
    ctx = app.server.extensions["calibration_dashboard"]
    cookie = f"calibration_session={tab.cookie()}"
    with app.server.test_request_context("/", headers={"Cookie": cookie}):
        state = run_group_job(ctx, ctx.session_id(), request)
    assert state["error"] is None
    assert state["settings"] == dict(zip(GROUP_FIELDS, request["values"], strict=True))
    out = tab.call(SECTION, ["group-done.data"], {"group-done.data": state, GATE: request})
    (pred,) = load_predictions(io.BytesIO(content), file_name="sites.csv")
    core = slice_report(pred, group_index(pred, ["site"]), n_resamples=200, seed=0)
    rows = {row[0]: row for row in _table(out)}
    g = core.groups.labels.index("site=west")
    lo, hi = core.intervals["ece"].lower[g], core.intervals["ece"].upper[g]
    assert rows["site=west"][4] == f"{core.metrics['ece'][g]:.4f}\n[{lo:.4f}, {hi:.4f}]"
    summary = _text(out["group-summary.children"])
    assert f"p = {core.homogeneity.p_value:.3g}: the groups differ" in summary


def test_more_than_1000_groups_asks_for_a_coarser_column(app, dash_tab):
    n = 3000
    rows = ["city,p_a,p_b,label"] + [f"c{i % 1500},0.3,0.7,{'ab'[i % 2]}" for i in range(n)]
    tab = dash_tab(flask_client=app.server.test_client()).load()
    _, body = tab.upload("cities.csv", ("\n".join(rows) + "\n").encode())
    tab.values["model-select.value"] = [body["models"][0]["handle"]]
    assert (
        tab.call("group-select.options", ["model-select.value"], {})["group-select.options"] == []
    )  # 1,500 values for 3,000 rows: not offered
    out = _section(tab, "city")  # e.g. from an address
    text = _text(out["group-summary.children"])
    assert "1,500 groups" in text and "pick a coarser column" in text
    assert out["group-graph.children"] == [] and out["group-table.children"] == []
    out = _section(tab, "nowhere")
    assert re.search(
        r"no column 'nowhere'.*other columns are 'city'", _text(out["group-summary.children"])
    )


def _maps_rows(out: dict) -> list[list[str]]:
    """The maps table's body rows as cell texts."""
    return _table({"group-table.children": out["group-maps.children"]})


@pytest.mark.parametrize(
    ("notion", "class_value", "class_index", "name"),
    [("confidence", None, None, "confidence"), ("class", "b", 1, "class b")],
)
def test_maps_per_group_equal_the_core(app, tab, content, notion, class_value, class_index, name):
    """The maps job (its plain body) stores the core's comparison on the view's notion; the
    section shows it under that notion's name."""
    settings = {"n-bins.value": 10, "notion.value": notion, "class-select.value": class_value}
    out = _section(tab, "site", **settings)
    assert "being compared in the background" in _text(out["group-maps.children"])
    assert _maps_rows(out) == []
    request = _gate(tab, "site", **settings)
    ctx = app.server.extensions["calibration_dashboard"]
    cookie = f"calibration_session={tab.cookie()}"
    with app.server.test_request_context("/", headers={"Cookie": cookie}):
        state = run_group_maps_job(ctx, ctx.session_id(), request)
    assert state["error"] is None
    inputs = {"group-maps-done.data": state, GATE: request}
    out = tab.call(SECTION, ["group-maps-done.data"], inputs)
    (pred,) = load_predictions(io.BytesIO(content), file_name="sites.csv")
    core = group_maps(pred, group_index(pred, ["site"]), notion=notion, class_index=class_index,
                      folds=5, seed=0, binning=Binning("width", 10))  # fmt: skip
    assert core.maps == ("temperature", "isotonic")
    shown = _text(out["group-maps.children"])
    assert f"ECE ({name}) uncalibrated" in shown and f"Held-out {name} ECE" in shown
    rows = {row[0]: row for row in _maps_rows(out)}
    assert set(rows) == set(core.groups.labels)
    better = {"group": "per-group map", "global": "global map"}
    for r in core.table:
        row = rows[r["group"]]
        j = 3 + 3 * core.maps.index(r["map"])
        assert row[1] == f"{int(core.groups.sizes[core.groups.labels.index(r['group'])]):,}"
        assert float(row[2]) == pytest.approx(r["ece_uncalibrated"], abs=5e-5)
        assert float(row[j]) == pytest.approx(r["ece_global"], abs=5e-5)
        if r["small"]:  # the island: no map of its own, not judged
            assert row[j + 1] == "n/a" and row[j + 2] == "small: not judged"
        else:
            assert float(row[j + 1]) == pytest.approx(r["ece_group"], abs=5e-5)
            assert row[j + 2] == better[r["better"]]
    # West (sharpened logits) is what one global map cannot fix: its own temperature is better.
    west = next(r for r in core.table if r["group"] == "site=west" and r["map"] == "temperature")
    assert west["better"] == "group" and west["ece_group"] < west["ece_global"]
    assert "Does one global map calibrate every group? temperature: a map per group is better" in (
        _text(out["group-maps.children"])
    )


def _report(tab) -> str:
    """The page's HTML report (the "report-html" export) for the tab's current values."""
    clicks = "export-report-html.n_clicks"
    return tab.call("download.data", [clicks], {clicks: 1})["download.data"]["content"]


def test_the_page_report_has_the_per_group_section(app, tab, content):
    """Without a group column no section; with one, the page's numbers, then its jobs'."""
    tab.values[GROUP] = None
    assert "Calibration by group" not in _report(tab)
    request = _gate(tab, "site")
    before = _report(tab)
    (pred,) = load_predictions(io.BytesIO(content), file_name="sites.csv")
    groups = group_index(pred, ["site"])
    core = slice_report(pred, groups, n_resamples=200, seed=0)
    g = core.groups.labels.index("site=west")
    assert before.count("Calibration by group ·") == 1
    assert f"Worst group: site=west, ECE {core.metrics['ece'][g]:.4f}" in before
    assert "being computed in the background" in before  # point estimates only
    assert "still being compared when this report was made" in before
    ctx = app.server.extensions["calibration_dashboard"]
    cookie = f"calibration_session={tab.cookie()}"
    with app.server.test_request_context("/", headers={"Cookie": cookie}):
        run_group_job(ctx, ctx.session_id(), request)
        run_group_maps_job(ctx, ctx.session_id(), request)
    after = _report(tab)
    lo, hi = core.intervals["ece"].lower[g], core.intervals["ece"].upper[g]
    assert f"<td>{core.metrics['ece'][g]:.4f}<br>[{lo:.4f}, {hi:.4f}]</td>" in after
    assert f"p = {core.homogeneity.p_value:.3g}: the groups differ" in after
    maps = group_maps(pred, groups, folds=5, seed=0, binning=Binning())
    west = [r for r in maps.table if r["group"] == "site=west"]
    cells = [f"{west[0]['ece_uncalibrated']:.4f}"]
    for r in west:
        cells += [f"{r['ece_global']:.4f}", f"{r['ece_group']:.4f}", "per-group map"]
    assert (
        "<tr><td>site=west</td><td>"
        + "</td><td>".join([f"{int(groups.sizes[g]):,}", *cells])
        + "</td></tr>"
        in after
    )
    assert "still being compared" not in after


def test_the_minimum_group_size_is_a_validated_control(tab):
    """50 rows judges the island (60 rows); a bad size is a note, the picker keeps its column."""
    from app.layout.groups import MIN_GROUP_ROWS as SHOWN
    from calibration_core.slices import MIN_GROUP_ROWS

    assert SHOWN == MIN_GROUP_ROWS  # the placeholder the page shows is the core's default
    out = _section(tab, "site", **{"group-min-rows.value": 50})
    rows = {row[0]: row for row in _table(out)}
    assert rows["site=island"][2] == ""  # judged now
    assert "groups under 50 rows" in _text(out["group-table.children"])
    assert "have fewer than" not in _text(out["group-summary.children"])
    for bad in (1, 2.5, "many"):
        out = _section(tab, "site", **{"group-min-rows.value": bad})
        text = _text(out["group-summary.children"])
        assert "minimum group size must be a whole number from 2 to 1,000,000" in text
        assert out["group-table.children"] == [] and out[SECTION] == {}
    out = _section(tab, "site", **{"group-min-rows.value": None})
    assert {row[0]: row for row in _table(out)}["site=island"][2] == "small: not judged"
