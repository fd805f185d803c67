"""Diagnostics of one model and its fitted calibrators: how far to trust each number.

For the model picked in the Diagnostics section, every *calibrator* of the
view (the uncalibrated predictions first, then each selected map already in
the fit store; all scored on held-out rows, see :class:`app.settings.HeldOut`)
gets the diagnostics of these modules. Import names from the module that
defines them:

* :mod:`app.diagnostics.target`: the section's settings (choices, defaults,
  parsers, per-session memory), the target (model, view settings,
  calibrators) and the view's notion;
* :mod:`app.diagnostics.overview`: **ECE sensitivity** to the number of bins
  and scheme, and the **ECE estimators** (plug-in, adaptive, L2, debiased L2, ACE);
* :mod:`app.diagnostics.cards`: the **Hosmer-Lemeshow** test (held-out
  degrees of freedom), the **decision view** (binary problems) and
  **human-uncertainty calibration** (soft labels);
* :mod:`app.diagnostics.resampling`: the **resampling test** and the
  **bootstrap intervals**, run on demand in a background job and kept in the
  disk store, where the page and the HTML report read them.

These four are core calls only (no Dash, no Plotly), like :mod:`app.analysis`,
and so is the section's text tables (:mod:`app.diagnostics.tables`). Its page
section (:mod:`app.layout.diagnostics`), its figures (:mod:`app.figures.diagnostics`)
and its part of the HTML report (:mod:`app.report.diagnostics`) are built from
their rows in the later layers: this package imports none of them.
"""
