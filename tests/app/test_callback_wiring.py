"""The named callback inputs and the failure replies, without a server."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from dash import Input, Output, State

from app.callback_failures import CallbackFailures, callback_key, request_entries
from app.callbacks.controls import (
    DIAGNOSTICS_FIELDS,
    FIT_FIELDS,
    SETTING_PROPS,
    setting_inputs,
    setting_states,
)
from app.settings import RawSettings


def test_the_controls_are_the_fields_of_raw_settings():
    assert tuple(SETTING_PROPS) == tuple(f.name for f in dataclasses.fields(RawSettings))
    assert set(FIT_FIELDS) <= set(DIAGNOSTICS_FIELDS) <= set(SETTING_PROPS)
    inputs, states = setting_inputs(FIT_FIELDS), setting_states()
    assert list(inputs) == list(FIT_FIELDS) and all(isinstance(i, Input) for i in inputs.values())
    assert list(states) == list(SETTING_PROPS)
    assert all(isinstance(s, State) for s in states.values())
    values = {name: f"value of {name}" for name in SETTING_PROPS}
    assert dataclasses.asdict(RawSettings(**values)) == values


def test_a_callback_is_known_by_its_outputs_and_arguments_whatever_their_grouping():
    output = [Output("a", "children"), Output("b", "data", allow_duplicate=True)]
    inputs = {"x": Input("x", "value"), "nested": {"y": Input("y", "value")}}
    state = {"z": State("z", "value")}
    key = callback_key(output, [inputs, state])
    # What a request carries: entries in Dash's order, "@..." stripped by the renderer.
    request_outputs = [{"id": "b", "property": "data"}, {"id": "a", "property": "children"}]
    arguments = {
        "x": {"id": "x", "property": "value", "value": 1},
        "nested": {"y": {"id": "y", "property": "value", "value": 2}},
        "z": {"id": "z", "property": "value", "value": 3},
    }
    assert key == (
        frozenset(f"{d['id']}.{d['property']}" for d in request_entries(request_outputs)),
        frozenset(f"{d['id']}.{d['property']}" for d in request_entries(arguments)),
    )
    assert callback_key(output, [Input("x", "value")]) != key


def test_a_callback_without_a_reply_fails_as_before(monkeypatch):
    import app.callback_failures as failures_module

    context = SimpleNamespace(
        using_args_grouping=False,
        outputs_list={"id": "a", "property": "children"},
        inputs_list=[{"id": "x", "property": "value"}],
        states_list=[],
    )
    monkeypatch.setattr(failures_module, "dash_ctx", context)
    failures = CallbackFailures()
    error = ValueError("boom")
    try:
        failures(error)
    except ValueError as raised:
        assert raised is error
    else:
        raise AssertionError("the error was swallowed")
    failures.reply(
        "probing",
        lambda rid: f"failed ({rid})",
        output=Output("a", "children"),
        inputs=Input("x", "value"),
    )
    answer = failures(error)
    assert answer.startswith("failed (") and len(answer) == len("failed ()") + 12
