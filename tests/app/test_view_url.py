"""The view in the page address (app/view_url.py): round trips, hostile addresses, the page."""

from __future__ import annotations

import random
import string
from dataclasses import replace

import pytest
from dash import no_update
from flask import Flask

from app import ids
from app.callbacks.view import address_search
from app.settings import (
    ALL_CLASSES,
    MAX_SELECTED_MODELS,
    SCORE_PARTS_ON,
    RawSettings,
    SettingsError,
)
from app.store.records import ModelInfo
from app.view_url import (
    MAX_FIELDS,
    MAX_QUERY_CHARS,
    NOTICE_PREFIX,
    decode_view,
    encode_view,
    page_query,
)

from .conftest import make_config


def info(handle: str, classes=("cat", "dog", "a&b=c, d"), name=None) -> ModelInfo:
    return ModelInfo(
        handle=handle,
        name=name or handle,
        n_samples=100,
        n_classes=len(classes),
        class_names=tuple(classes),
        source="test",
        has_logits=False,
    )


INFOS = [info("demo-0"), info("demo-1", ("no", "yes")), *(info(f"up-m{i}") for i in range(10))]
DEFAULT = RawSettings(handles=["demo-0"], maps=["temperature", "isotonic"])

VIEWS = [
    DEFAULT,
    RawSettings(handles=["demo-1", "up-m3"], maps=["platt", "dirichlet"], n_bins=7),
    RawSettings(handles=["up-m1"], notion="class", class_value="dog", scheme="frequency"),
    RawSettings(handles=["up-m1"], notion="class", class_value="a&b=c, d", band="none"),
    RawSettings(handles=["up-m2"], notion="class", class_value=ALL_CLASSES, band="jeffreys"),
    RawSettings(handles=["demo-1"], notion="binary", heldout="split", fraction=0.35, level=0.8),
    RawSettings(handles=[], maps=[], heldout="folds", folds=20, n_bins=100, level=0.99),
    RawSettings(handles=[f"up-m{i}" for i in range(MAX_SELECTED_MODELS)], band="consistency"),
    RawSettings(handles=["demo-0"], score_parts=[SCORE_PARTS_ON]),
]


@pytest.mark.parametrize("raw", VIEWS)
def test_a_view_survives_the_round_trip_through_the_address(raw):
    decoded, notices = decode_view(encode_view(raw), INFOS, DEFAULT)
    assert notices == []
    assert decoded.parse() == raw.parse()
    # Encoding again gives the same address: one text per view.
    assert encode_view(decoded) == encode_view(raw)


def test_the_address_is_compact_and_readable():
    raw = RawSettings(handles=["demo-0", "demo-1"], notion="class", class_value="dog")
    assert encode_view(replace(raw, maps=["isotonic", "temperature"])) == (
        "?models=demo-0,demo-1&maps=isotonic,temperature&notion=class&class=dog"
        "&bins=15&scheme=width&band=wilson&level=0.95&heldout=folds&folds=5"
    )
    split = encode_view(RawSettings(heldout="split", fraction=0.35, band="none"))
    assert split.endswith("&band=none&heldout=split&fraction=0.35")
    assert "level=" not in split and "folds=" not in split
    assert "class=" not in encode_view(RawSettings(class_value="dog"))  # only one vs rest
    assert "parts=" not in split  # only when the score parts are shown
    assert encode_view(RawSettings(score_parts=[SCORE_PARTS_ON])).endswith("&parts=1")
    # A class name is one value, whatever it holds; commas stay readable.
    odd = encode_view(RawSettings(notion="class", class_value="a&b=c, d"))
    assert "&class=a%26b%3Dc,%20d&" in odd


def test_an_invalid_setting_is_not_written_into_the_address():
    with pytest.raises(SettingsError):
        encode_view(RawSettings(n_bins=10**9))
    assert address_search(RawSettings(n_bins="many")) is no_update
    assert address_search(RawSettings(handles=["demo-0"])).startswith("?models=demo-0&")


def test_missing_parameters_keep_the_defaults():
    assert decode_view("", INFOS, DEFAULT) == (DEFAULT, [])
    assert decode_view(None, INFOS, DEFAULT) == (DEFAULT, [])
    raw, notices = decode_view("?bins=9&utm_source=mail", INFOS, DEFAULT)
    assert notices == []  # unknown parameters are ignored
    assert raw == replace(DEFAULT, n_bins=9)
    # An empty list is a choice: no model, no map.
    raw, notices = decode_view("models=&maps=", INFOS, DEFAULT)
    assert (raw.handles, raw.maps, notices) == ([], [], [])


def test_models_not_in_this_session_are_dropped_with_a_notice():
    raw, notices = decode_view("?models=up-other,demo-1,up-gone", INFOS, DEFAULT)
    assert raw.handles == ["demo-1"]
    assert notices == [NOTICE_PREFIX + "2 models not in this session."]
    many = ",".join(f"up-m{i}" for i in range(10))
    raw, notices = decode_view(f"models={many}", INFOS, DEFAULT)
    assert raw.handles == [f"up-m{i}" for i in range(MAX_SELECTED_MODELS)]
    assert "models after the first 8" in notices[0]


def test_each_bad_value_is_dropped_and_named_the_rest_restored():
    query = (
        "models=demo-0&maps=platt,evil&notion=class&class=horse&bins=500&scheme=width"
        "&band=wilson&level=0.97&heldout=split&folds=1&fraction=2"
    )
    raw, (notice,) = decode_view(query, INFOS, DEFAULT)
    assert raw.maps == ["platt"] and raw.notion == "class" and raw.heldout == "split"
    assert (raw.n_bins, raw.level, raw.folds, raw.fraction) == (15, 0.95, 5, 0.5)
    assert raw.class_value is None  # the page opens on its own choice, the worst class
    for part in (
        "unknown map 'evil'",
        "the number of bins must be from 2 to 100, got 500",
        "the band level must be one of 0.8, 0.9, 0.95, 0.99, got '0.97'",
        "the number of folds must be from 2 to 20, got 1",
        "the test fraction must be from 0.1 to 0.9, got 2.0",
        "class 'horse' is not a class of the selected models",
    ):
        assert part in notice
    raw.parse()  # what is restored is valid


@pytest.mark.parametrize(
    "query, what",
    [
        ("bins=abc", "bins must be a whole number, got 'abc'"),
        ("bins=-3", "bins must be a whole number"),
        ("bins=1e9", "bins must be a whole number"),
        ("bins=15.5", "bins must be a whole number"),
        ("bins=%C2%B9%C2%B2", "bins must be a whole number"),  # superscript digits
        ("bins=" + "9" * 400, "bins must be a whole number, got '99999999'"),
        ("level=nan", "level must be a number"),
        ("fraction=inf", "fraction must be a number"),
        ("notion=%3Cscript%3E", "the notion must be one of confidence, class, binary"),
        ("scheme=%00", "the binning scheme must be one of width, frequency"),
        ("band=" + "x" * 300, "the band must be one of"),
        ("heldout=both", "the held-out scheme must be one of folds, split"),
        ("maps=" + ",".join(["x"] * 50), "unknown map 'x'"),
        ("x=1&" * (MAX_FIELDS + 1), f"the address has more than {MAX_FIELDS} fields"),
        ("bins=7&class=" + "a" * MAX_QUERY_CHARS, f"longer than {MAX_QUERY_CHARS} characters"),
    ],
)
def test_a_hostile_address_gives_a_short_notice_never_an_error(query, what):
    raw, notices = decode_view(query, INFOS, DEFAULT)
    assert len(notices) == 1 and what in notices[0] and len(notices[0]) < 400
    raw.parse()
    assert raw.n_bins == 15  # nothing else taken from a refused or too-long address


def test_repeated_parameters_count_once_and_odd_encodings_are_read_safely():
    raw, notices = decode_view("bins=8&bins=9&models=demo-1&models=demo-0", INFOS, DEFAULT)
    assert (raw.n_bins, raw.handles, notices) == (8, ["demo-1"], [])
    raw, notices = decode_view("notion=class&class=%FF%FE&bins=%ZZ", INFOS, DEFAULT)
    assert raw.class_value is None and len(notices) == 1
    raw, notices = decode_view("?models=demo-1,demo-1,,&maps=,temperature,", INFOS, DEFAULT)
    assert (raw.handles, raw.maps, notices) == (["demo-1"], ["temperature"], [])


def test_random_addresses_never_break_the_page():
    rng = random.Random(15)
    alphabet = string.printable + "éß€\x00%&=,?#"
    keys = ["models", "maps", "notion", "class", "bins", "scheme", "band", "level", "heldout"]
    keys += ["folds", "fraction", "other"]
    for _ in range(2000):
        fields = [
            f"{rng.choice(keys)}={''.join(rng.choices(alphabet, k=rng.randint(0, 12)))}"
            for _ in range(rng.randint(0, 8))
        ]
        raw, notices = decode_view("&".join(fields), INFOS, DEFAULT)
        handles = raw.parse()[0]
        assert set(handles) <= {i.handle for i in INFOS} and len(notices) <= 1
        assert encode_view(raw).startswith("?models=")


def test_the_page_query_is_read_from_the_referer_of_the_layout_request():
    assert page_query() == ""  # outside a request: the server's set-up
    server = Flask(__name__)
    with server.test_request_context(headers={"Referer": "http://h/?bins=7&notion=class"}):
        assert page_query() == "bins=7&notion=class"
    with server.test_request_context(headers={"Referer": "http://[::1"}):
        assert page_query() == ""
    with server.test_request_context():
        assert page_query() == ""


def _find(node, component_id):
    if isinstance(node, dict):
        if node.get("props", {}).get("id") == component_id:
            return node["props"]
        children = node.get("props", {}).get("children")
        return _find(children, component_id) if children is not None else None
    if isinstance(node, list):
        for child in node:
            found = _find(child, component_id)
            if found is not None:
                return found
    return None


def test_the_page_opens_on_the_view_of_its_address(tmp_path):
    from app.factory import create_app

    client = create_app(make_config(tmp_path)).server.test_client()
    address = (
        "http://localhost/?models=demo-5,demo-6,up-x&maps=platt&notion=class&class=3"
        "&bins=9&scheme=frequency&band=none&heldout=split&fraction=0.3&level=2"
    )
    layout = client.get("/_dash-layout", headers={"Referer": address}).get_json()
    values = {
        key: _find(layout, key)["value"]
        for key in (ids.MODEL_SELECT, ids.MAPS, ids.NOTION, ids.CLASS_SELECT, ids.N_BINS)
    }
    assert values == {
        ids.MODEL_SELECT: ["demo-5", "demo-6"],
        ids.MAPS: ["platt"],
        ids.NOTION: "class",
        ids.CLASS_SELECT: "3",
        ids.N_BINS: 9,
    }
    assert _find(layout, ids.SCHEME)["value"] == "frequency"
    assert _find(layout, ids.HELDOUT)["value"] == "split"
    assert _find(layout, ids.TEST_FRACTION)["value"] == 0.3
    # The view is drawn for these settings, and the notice names what was dropped.
    slots = _find(layout, ids.RELIABILITY_GRID)["children"]
    assert sum(bool(slot["props"]["children"]) for slot in slots) == 2
    assert "class 3" in _find(layout, ids.VIEW_TITLE)["children"]
    (notice,) = [m["props"]["children"] for m in _find(layout, ids.ADDRESS_NOTICE)["children"]]
    assert notice.startswith(NOTICE_PREFIX)
    assert "1 model not in this session" in notice and "band level" in notice
    # Without an address (or with an empty one), the defaults.
    plain = client.get("/_dash-layout").get_json()
    assert _find(plain, ids.N_BINS)["value"] == 15
    assert _find(plain, ids.ADDRESS_NOTICE)["children"] == []
    assert _find(plain, ids.PAGE_URL) == {"id": ids.PAGE_URL, "refresh": False}


def test_one_class_vs_rest_without_a_valid_class_opens_on_the_worst_class(tmp_path):
    import numpy as np

    from app.factory import create_app
    from calibration_core import binary_ece
    from calibration_core.demo import demo_predictions

    pred = demo_predictions()[5]
    eces = [
        binary_ece(pred.probs[:, j], pred.labels == j, n_bins=15) for j in range(pred.n_classes)
    ]
    worst = pred.class_names[int(np.argmax(eces))]
    client = create_app(make_config(tmp_path)).server.test_client()
    for query in ("models=demo-5&notion=class", "models=demo-5&notion=class&class=horse"):
        layout = client.get("/_dash-layout", headers={"Referer": f"http://x/?{query}"}).get_json()
        assert _find(layout, ids.CLASS_SELECT)["value"] == worst
        # The page's own pick (it moves with the models), and the view drawn for it.
        assert _find(layout, ids.CLASS_AUTO)["data"] == worst
        assert f"class {worst}" in _find(layout, ids.VIEW_TITLE)["children"]


# ------------------------------------------------------------ the over-time card
def test_the_over_time_settings_round_trip_and_only_changes_are_written():
    from app.groups.time import TimeSettings
    from app.view_url import decode_time

    assert "time=" not in encode_view(RawSettings()) and "ref=" not in encode_view(RawSettings())
    time = TimeSettings(column="event time", window="rows", rows=250, reference="3")
    query = encode_view(RawSettings(), time)
    assert query.endswith("&time=event%20time&window=rows&rows=250&ref=3")
    assert decode_time(query) == (time, [])
    plain = decode_view(encode_view(RawSettings()), INFOS, DEFAULT)
    assert decode_view(query, INFOS, DEFAULT) == plain  # the view ignores them
    assert decode_time("?window=1d") == (TimeSettings(window="1d"), [])
    # The card's controls as a callback passes them; invalid ones are left out of the address.
    controls = {"column": None, "window": "1m", "rows": None, "reference": 2}
    assert address_search(RawSettings(), controls).endswith("&window=1m&ref=2")
    bad = address_search(RawSettings(), {**controls, "reference": 0})
    assert "ref=" not in bad and "window=" not in bad
    # A period in dates travels as written (its colon kept readable).
    dated = address_search(RawSettings(), {**controls, "reference": "2024-01-01:2024-01-31"})
    assert dated.endswith("&window=1m&ref=2024-01-01%3A2024-01-31")
    assert decode_time(dated)[0].reference == "2024-01-01:2024-01-31"
    reversed_ = address_search(RawSettings(), {**controls, "reference": "2024-02-01:2024-01-01"})
    assert "ref=" not in reversed_


def test_bad_over_time_parameters_keep_their_defaults_with_a_notice():
    from app.groups.time import TimeSettings
    from app.view_url import decode_time

    time, notices = decode_time("?window=fortnight&rows=-5&ref=2&time=" + "x" * 300)
    assert time == TimeSettings(reference="2")
    (notice,) = notices
    assert notice.startswith(NOTICE_PREFIX)
    assert "window must be one of" in notice and "rows per window" in notice
    assert "time column" in notice
    time, notices = decode_time("?ref=2024-03-01:2024-02-01")
    assert time == TimeSettings() and "ends before it starts" in notices[0]


def test_the_page_opens_the_over_time_card_on_its_address(tmp_path):
    from app.factory import create_app

    client = create_app(make_config(tmp_path)).server.test_client()
    address = "http://localhost/?models=demo-5&window=rows&rows=300&ref=2&time=timestamp"
    layout = client.get("/_dash-layout", headers={"Referer": address}).get_json()
    assert _find(layout, ids.TIME_WINDOW)["value"] == "rows"
    assert _find(layout, ids.TIME_ROWS)["value"] == 300
    assert _find(layout, ids.TIME_REFERENCE)["value"] == "2"
    assert _find(layout, ids.TIME_COLUMN)["value"] == "timestamp"
    assert _find(layout, ids.ADDRESS_NOTICE)["children"] == []


def test_the_group_column_goes_into_the_address_and_back():
    raw = RawSettings(handles=["up-m1"], group="hospital & site")
    query = encode_view(raw)
    assert query.endswith("&group=hospital%20%26%20site")
    assert "group=" not in encode_view(RawSettings(handles=["up-m1"]))  # none by default
    decoded, notices = decode_view(query, INFOS, DEFAULT)
    assert notices == [] and decoded.group == "hospital & site"
    assert encode_view(decoded) == query
    decoded, (notice,) = decode_view("?group=" + "x" * 300, INFOS, DEFAULT)
    assert decoded.group is None and "group column" in notice


def test_the_minimum_group_size_goes_into_the_address_and_back():
    raw = RawSettings(handles=["up-m1"], group="site", group_min_rows=50)
    query = encode_view(raw)
    assert query.endswith("&group=site&min_rows=50")
    assert "min_rows=" not in encode_view(replace(raw, group_min_rows=None))  # the default
    assert "min_rows=" not in encode_view(replace(raw, group=None))  # only with a group
    decoded, notices = decode_view(query, INFOS, DEFAULT)
    assert notices == [] and decoded.group_min_rows == 50
    for bad in ("1", "abc", "2000000", "-5"):
        decoded, (notice,) = decode_view(f"?group=site&min_rows={bad}", INFOS, DEFAULT)
        assert decoded.group_min_rows is None and decoded.group == "site"
        assert "minimum group size must be a whole number from 2 to 1,000,000" in notice
