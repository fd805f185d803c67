"""Calibration by groups of rows: per column value ("Per group"), per time window ("Over time").

One feature, two groupings, computed by :mod:`calibration_core.slices`:

* :mod:`app.groups.columns`: the page's "Per group" section (the groups of one
  column of the first selected model: table, worst group, intervals, maps);
* :mod:`app.groups.time`: the "Over time" card (windows of a time column
  against a reference period);
* :mod:`app.groups.tables`: both as text tables, shared by page and report;
* :mod:`app.groups.dataset`: both on a server-side dataset (a cluster job).

Computations and view-models only: the figures are :mod:`app.figures.groups`,
the page's parts :mod:`app.layout.groups` and :mod:`app.layout.dataset_groups`
(the "Over time" card sits in :mod:`app.layout.diagnostics`), the report's
sections :mod:`app.report.groups`, the callbacks :mod:`app.callbacks.groups`.
A package per layer rather than one package holding all layers keeps the
layers' import order (compute -> figures -> layout -> callbacks) acyclic.
"""
