"""The page's layout: Dash components only, no callbacks.

* :mod:`app.layout.page`: the whole page (control sidebar and results);
* :mod:`app.layout.results`: the results column's parts that wait for the
  first diagram;
* :mod:`app.layout.diagnostics`: the Diagnostics section.
"""
