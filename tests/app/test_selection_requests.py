"""What a model-selection change costs in server requests, from the page's callback graph.

The page waits for every request a change sets off, and the server answers
one request at a time (``serve``: ``threaded=False``), so each request
counts. Issue 15 asks for a selection change drawn in <= 0.5 s; on three
CIFAR-100 models the page waited on seven requests in two rounds (the class
picker, the fit planner, the deployable map's and the Diagnostics section's
model pickers; then the view, the page address and the line next to the Fit
button). These tests pin the three left (BENCHMARKS.md, issue 15), reading
the callbacks as the browser does (``/_dash-dependencies``) and following
them as Dash's renderer does: a callback runs when one of its inputs
changed, and after every callback that writes one of its inputs.
"""

from __future__ import annotations

from app import ids
from app.factory import create_app

from .conftest import make_config

#: A selection change with every selected map fitted, the Diagnostics section closed and
#: no group column chosen: the planner asks for no fit, the section's gates write nothing
#: while it is closed, the group picker's value stays empty and the "Per group" gate
#: (in the browser) writes nothing without a group column.
UNCHANGED = {
    f"{ids.FIT_REQUEST}.data",
    f"{ids.DIAG_VIEW_GATE}.data",
    f"{ids.DIAG_FIT_GATE}.data",
    f"{ids.GROUP_SELECT}.value",
    f"{ids.GROUP_GATE}.data",
    f"{ids.GROUP_REQUEST}.data",
}


def dependencies(tmp_path) -> list[dict]:
    """The page's callbacks, as ``/_dash-dependencies`` gives them to the browser."""
    client = create_app(make_config(tmp_path)).server.test_client()
    response = client.get("/_dash-dependencies")
    assert response.status_code == 200
    return response.get_json()


def writes(dep: dict) -> set[str]:
    """``"id.property"`` of each output of a callback (without Dash's ``@…`` suffix)."""
    parts = dep["output"].strip(".").split("...")
    return {part.partition("@")[0] for part in parts}


def reads(dep: dict) -> set[str]:
    """``"id.property"`` of each input of a callback."""
    return {f"{i['id']}.{i['property']}" for i in dep["inputs"]}


def on_server(dep: dict) -> bool:
    return not dep.get("clientside_function")


def set_off(deps: list[dict], changed: str, unchanged: set[str]) -> list[dict]:
    """The callbacks a change of ``changed`` sets off, each output counted as changed
    except ``unchanged``."""
    props, fired = {changed}, []
    while True:
        new = [d for d in deps if d not in fired and reads(d) & props]
        if not new:
            return fired
        fired += new
        props |= set().union(*(writes(d) for d in new)) - unchanged


def round_trips(fired: list[dict]) -> int:
    """Server requests one after the other on the longest chain of ``fired`` callbacks."""
    depth: dict[int, int] = {}

    def of(i: int) -> int:
        if i not in depth:
            before = [j for j, d in enumerate(fired) if j != i and writes(d) & reads(fired[i])]
            depth[i] = int(on_server(fired[i])) + max(map(of, before), default=0)
        return depth[i]

    return max(map(of, range(len(fired))), default=0)


def test_a_model_selection_change_sets_off_three_requests_in_two_rounds(tmp_path):
    deps = dependencies(tmp_path)
    fired = set_off(deps, f"{ids.MODEL_SELECT}.value", UNCHANGED)
    requests = [d for d in fired if on_server(d)]
    found = {
        "class picker": f"{ids.CLASS_SELECT}.value",
        "fit planner": f"{ids.FIT_STATE}.data",
        "view": f"{ids.METRICS_GRID}.rowData",
    }
    assert {name for name, prop in found.items() for d in requests if prop in writes(d)} == set(
        found
    )
    assert len(requests) == 3, [d["output"] for d in requests]
    assert round_trips(fired) == 2


def test_what_follows_the_selection_rides_on_the_requests_the_view_waits_for(tmp_path):
    deps = dependencies(tmp_path)
    writer = {prop: d for d in deps for prop in writes(d)}
    # The pickers that follow the selection come with the class picker's answer ...
    picker = writer[f"{ids.CLASS_SELECT}.value"]
    for prop in (
        f"{ids.DEPLOY_MODEL}.value",
        f"{ids.DIAG_MODEL}.value",
        f"{ids.GROUP_SELECT}.options",
    ):
        assert writer[prop] is picker, prop
    # ... the page address with the view's (the group column, the minimum group size and
    # the "Over time" card's controls, which do not change the view, write it from a
    # callback of their own) ...
    url = f"{ids.PAGE_URL}.search"
    view = writer[f"{ids.METRICS_GRID}.rowData"]
    address_writers = [d for d in deps if url in writes(d)]
    assert any(d is view for d in address_writers)
    (time_address,) = [d for d in address_writers if d is not view]
    side = reads(time_address) - {f"{ids.GROUP_SELECT}.value", f"{ids.GROUP_MIN_ROWS}.value"}
    assert all(prop.startswith("time-") for prop in side), side
    # ... and the line next to the Fit button with the view, whose panels it speaks of
    # (one fit status, issue 28), in the same request.
    assert writer[f"{ids.FIT_SUMMARY}.children"] is view
    # The deployable map's map picker follows the maps alone.
    assert reads(writer[f"{ids.DEPLOY_MAP}.value"]) == {f"{ids.MAPS}.value"}


def test_the_chain_follower_counts_what_dash_would_run():
    """The helpers themselves, on a made-up graph: a -> b (server) -> c (browser) -> d."""
    deps = [
        {"output": "b.data", "inputs": [{"id": "a", "property": "value"}]},
        {
            "output": "c.data",
            "inputs": [{"id": "b", "property": "data"}],
            "clientside_function": {"namespace": "x", "function_name": "y"},
        },
        {"output": "..d.children...e.x@123..", "inputs": [{"id": "c", "property": "data"}]},
        {"output": "f.children", "inputs": [{"id": "z", "property": "value"}]},
    ]
    fired = set_off(deps, "a.value", set())
    assert [d["output"] for d in fired] == ["b.data", "c.data", "..d.children...e.x@123.."]
    assert writes(fired[2]) == {"d.children", "e.x"}
    assert round_trips(fired) == 2  # b, then d: c runs in the browser
    assert [d["output"] for d in set_off(deps, "a.value", {"b.data"})] == ["b.data"]


def test_the_per_group_section_is_gated_in_the_browser(tmp_path):
    """Without a group column no request leaves the page for the "Per group" section."""
    from app.callbacks.controls import GROUP_FIELDS

    deps = dependencies(tmp_path)
    (gate,) = [d for d in deps if f"{ids.GROUP_GATE}.data" in writes(d)]
    assert not on_server(gate) and writes(gate) >= {f"{ids.GROUP_REQUEST}.data"}
    assert [i["id"] for i in gate["inputs"]][-1] == ids.GROUP_SELECT  # the JS reads it last
    assert GROUP_FIELDS[-1] == "group"
    for dep in deps:
        if on_server(dep) and reads(dep) & {f"{ids.GROUP_GATE}.data", f"{ids.GROUP_REQUEST}.data"}:
            allowed = {f"{ids.GROUP_GATE}.data", f"{ids.GROUP_REQUEST}.data",
                       f"{ids.GROUP_DONE}.data", f"{ids.GROUP_MAPS_DONE}.data"}  # fmt: skip
            assert reads(dep) <= allowed, dep["output"]
