"""What the page shows when a callback fails unexpectedly: the app's ``Dash(on_error=...)``.

One :class:`CallbackFailures` per app is Dash's ``on_error`` handler for
every callback. A callback that can explain a failure in the page registers,
with :meth:`CallbackFailures.reply`, what its outputs become then; the handler
logs the exception and its traceback with the request id and answers with
those outputs, whose message carries the same id (the request's
``X-Request-ID``, :func:`app.request_errors.request_id`). For a background
callback Dash calls the handler in the request that collects the job's
result, with the job's traceback in the exception's text.

A callback is known by its outputs, inputs and states (Dash tells apart
callbacks that share an output, ``allow_duplicate``, by their inputs). A callback without a
reply fails as it would without the handler: the exception goes on to the
Flask error handler, which answers HTTP 500 with a request id and no detail.
Expected problems (a setting out of range, data that expired) are not
failures: callbacks turn those into messages themselves.

A background job can also stop without an answer: killed, over a server
limit, refused by a full waiting list (:mod:`app.jobs`). The job manager then answers, in
the poll, :meth:`CallbackFailures.stopped`: the callback's ``stopped`` reply
with the stated reason, where the result would have been.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dash import ctx as dash_ctx

from .request_errors import request_id

log = logging.getLogger("calibration_dashboard.callbacks")

CallbackKey = tuple[frozenset[str], frozenset[str]]


@dataclass(frozen=True)
class FailureReply:
    """What a callback answers when it fails.

    Attributes
    ----------
    what : str
        The failed operation, for the log line ("drawing the view").
    answer : callable(request id) -> outputs
        The callback's outputs, with a message that names the request id.
    stopped : callable(message) -> outputs, optional
        A background callback's outputs when its job stopped without a result,
        with a message that says why.
    """

    what: str
    answer: Callable[[str], Any]
    stopped: Callable[[str], Any] | None = None


def flat(grouping: Any) -> list:
    """The leaves of a dependency grouping (nested dicts, lists and tuples)."""
    if isinstance(grouping, dict):
        return [leaf for value in grouping.values() for leaf in flat(value)]
    if isinstance(grouping, (list, tuple)):
        return [leaf for value in grouping for leaf in flat(value)]
    return [grouping]


def prop_key(component_id: Any, prop: Any) -> str:
    """``"id.property"`` (without the ``@...`` Dash adds to duplicate outputs)."""
    return f"{component_id}.{str(prop).partition('@')[0]}"


def callback_key(output: Any, arguments: Any) -> CallbackKey:
    """A callback's key: its ``Output`` objects, and its ``Input`` and ``State`` objects."""
    return (
        frozenset(prop_key(o.component_id, o.component_property) for o in flat(output)),
        frozenset(prop_key(a.component_id, a.component_property) for a in flat(arguments)),
    )


def request_entries(entries: Any) -> list[dict]:
    """The ``{"id", "property", ...}`` entries of a callback request's dependencies.

    ``entries`` is one such dict, or a grouping of them (lists for
    pattern-matching ids, dicts for dict-based signatures).
    """
    if isinstance(entries, dict):
        if "id" in entries and "property" in entries:
            return [entries]
        entries = list(entries.values())
    return [e for item in entries or [] for e in request_entries(item)]


def running_callback_key() -> CallbackKey:
    """The key of the callback whose request is being handled (from Dash's context)."""
    if dash_ctx.using_args_grouping:
        arguments = dash_ctx.args_grouping
    else:
        arguments = [dash_ctx.inputs_list, dash_ctx.states_list]
    outputs, arguments = request_entries(dash_ctx.outputs_list), request_entries(arguments)
    return (
        frozenset(prop_key(d.get("id"), d.get("property")) for d in outputs),
        frozenset(prop_key(d.get("id"), d.get("property")) for d in arguments),
    )


class CallbackFailures:
    """Dash's ``on_error`` handler, with the replies of the callbacks that have one."""

    def __init__(self) -> None:
        self._replies: dict[CallbackKey, FailureReply] = {}

    def reply(
        self,
        what: str,
        answer: Callable[[str], Any],
        *,
        output: Any,
        inputs: Any,
        state: Any = (),
        stopped: Callable[[str], Any] | None = None,
    ) -> None:
        """When the callback of ``output``, ``inputs`` and ``state`` fails, answer ``answer(rid)``.

        The three are what the callback is registered with (``Output``,
        ``Input`` and ``State`` objects, in any grouping). ``stopped(message)``
        is what a background callback answers when its job stopped without a
        result (see :meth:`stopped`).
        """
        reply = FailureReply(what, answer, stopped)
        self._replies[callback_key(output, [inputs, state])] = reply

    def stopped(self, reason: str, *, started: bool = True) -> Any:
        """The running background callback's outputs when its job stopped for ``reason``.

        ``started``: False for a job that never started (refused, or dropped
        while it waited). Called by the job manager in the request that polls
        the job, or in the job itself (Dash gives it the request's callback
        context). A callback
        without a ``stopped`` reply gets Dash's error result instead, which
        goes to :meth:`__call__` (its ``answer``, or HTTP 500 without one).
        """
        reply = self._replies.get(running_callback_key())
        log.warning("a background job stopped (request id %s): %s", request_id(), reason)
        if reply is None or reply.stopped is None:
            return {"background_callback_error": {"msg": reason, "tb": ""}}
        how = "stopped" if started else "was not started"
        return reply.stopped(f"The {reply.what} job {how}: {reason}.")

    def __call__(self, error: Exception) -> Any:
        reply = self._replies.get(running_callback_key())
        if reply is None:
            raise error  # Flask's handler: HTTP 500 with a request id, no detail
        rid = request_id()
        log.error("%s failed (request id %s)", reply.what, rid, exc_info=error)
        return reply.answer(rid)
