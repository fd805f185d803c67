"""The callbacks of calibration by groups: of a column's values and of time windows.

* :mod:`app.callbacks.groups.columns`: the group picker and the "Per group"
  section of the uploads;
* :mod:`app.callbacks.groups.time`: the "Over time" card of the Diagnostics
  section (windows of a time column against a reference period);
* :mod:`app.callbacks.groups.dataset`: both on a picked server-side dataset
  (a cluster job).

The numbers are :mod:`app.groups`'. :func:`app.callbacks.register_callbacks`
registers the first two; the dataset's callbacks are registered with the
dataset view's (:mod:`app.callbacks.datasets`), only when datasets are configured.
"""
