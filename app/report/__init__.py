"""The HTML report's sections, drawn from the same rows as the page.

* :mod:`app.report.diagnostics`: the Diagnostics part (appended by
  :func:`app.exports.html_report`);
* :mod:`app.report.groups`: the "Calibration by group" and "Calibration over
  time" sections.

The report sits in the layout layer: it turns the compute modules' rows
(:mod:`app.diagnostics`) and the figures (:mod:`app.figures`) into HTML, and
imports no callback.
"""
