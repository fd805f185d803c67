"""A background job's controls, the same on every card and section that starts one."""

from __future__ import annotations

from dash import html


def job_controls(
    run_text: str, run_id: str, cancel_id: str, progress_id: str, status_id: str, *extra
) -> html.Div:
    """``extra`` inputs, then the run and cancel buttons, the progress bar and the status.

    The ids are those :func:`app.jobs.register_job`'s callbacks write: Cancel
    starts disabled, the progress bar idle and the status empty.
    """
    return html.Div(
        [
            *extra,
            html.Button(run_text, id=run_id, className="button", n_clicks=0),
            html.Button(
                "Cancel", id=cancel_id, className="button secondary", n_clicks=0, disabled=True
            ),
            html.Progress(id=progress_id, value="0", max="1", className="progress idle"),
            html.Span(id=status_id, className="diag-status", role="status"),
        ],
        className="diag-controls",
    )
