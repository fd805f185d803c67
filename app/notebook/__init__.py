"""Calibration in a Jupyter notebook: the page's diagrams and the whole page, no file needed.

* :func:`reliability_diagram` and :class:`ReliabilityDisplay`
  (:mod:`app.notebook.diagrams`): the page's figure of one model as a Plotly
  figure, made by the page's own functions (same look, same numbers);
* :func:`show` and :func:`stop` (:mod:`app.notebook.server`): the whole
  dashboard in an IFrame, preloaded with in-memory models, on a server the
  kernel runs on a thread until ``stop()`` or its exit;
* models are given as ``(probs, labels)``, Predictions or fitted
  scikit-learn classifiers with ``(X, y)`` (:mod:`app.notebook.inputs`).

Example::

    from app.notebook import ReliabilityDisplay, reliability_diagram, show
    reliability_diagram(P, y, maps=["temperature", "isotonic"])
    ReliabilityDisplay.from_estimator(clf, X_test, y_test)
    dashboard = show({"forest": (P, y)})
"""

from .diagrams import ReliabilityDisplay, reliability_diagram
from .inputs import as_models, as_predictions, from_estimator
from .server import NotebookDashboard, show, stop

__all__ = [
    "NotebookDashboard",
    "ReliabilityDisplay",
    "as_models",
    "as_predictions",
    "from_estimator",
    "reliability_diagram",
    "show",
    "stop",
]
