"""Every component id of the dashboard, in one place.

These ids are a stable interface: callbacks, the upload script in
``assets/upload.js`` and the browser tests all refer to them. Rename only
together with ``docs/dashboard.md``.
"""

from __future__ import annotations

# -- data and upload ---------------------------------------------------------
UPLOAD_ZONE = "upload-zone"  # drop target (a focusable div; Enter/Space opens the picker)
UPLOAD_INPUT = "upload-input"  # the <input type=file> created by assets/upload.js
UPLOAD_STATUS = "upload-status"  # progress text while uploading (set by the script)
UPLOAD_RESULT = "upload-result"  # dcc.Store: the JSON answer of POST /api/upload
UPLOAD_MESSAGE = "upload-message"  # loader errors / "loaded ..." next to the upload
MODELS_STORE = "models-store"  # dcc.Store: opaque handles + names of usable models

# -- controls ----------------------------------------------------------------
MODEL_SELECT = "model-select"
NOTION = "notion"
CLASS_SELECT = "class-select"
CLASS_FIELD = "class-field"  # wrapper shown only for the one-vs-rest notion
SCHEME = "scheme"
N_BINS = "n-bins"
BAND = "band"
BAND_LEVEL = "band-level"
MAPS = "maps"
HELDOUT = "heldout"  # "folds" | "split"
FOLDS = "folds"
TEST_FRACTION = "test-fraction"
FOLDS_FIELD = "folds-field"
SPLIT_FIELD = "split-field"

# -- fitting (background callback) -----------------------------------------------
FIT_STATE = "fit-state"  # dcc.Store: summary of the last fit (triggers re-render)
FIT_PROGRESS = "fit-progress"  # html.Progress
FIT_STATUS = "fit-status"  # text next to the progress bar
FIT_CANCEL = "fit-cancel"  # button
FIT_START = "fit-start"  # button: fit what is missing (e.g. after a cancel)
FIT_SUMMARY = "fit-summary"  # outcome of the last fit (shown when idle)

# -- results -----------------------------------------------------------------
MESSAGE = "message"  # readable errors of the view (never a traceback)
VIEW_TITLE = "view-title"
RELIABILITY_GRID = "reliability-grid"  # container of one dcc.Graph per model
GRAPH_TYPE = "reliability-graph"  # pattern id {"type": GRAPH_TYPE, "index": i}
METRICS_GRID = "metrics-grid"  # dash-ag-grid
METRICS_CAPTION = "metrics-caption"

# -- exports -----------------------------------------------------------------
FIGURE_FORMAT = "figure-format"  # "png" | "svg" for the modebar camera button
EXPORT_METRICS_CSV = "export-metrics-csv"
EXPORT_METRICS_JSON = "export-metrics-json"
EXPORT_PARAMS_JSON = "export-params-json"
EXPORT_CALIBRATED_CSV = "export-calibrated-csv"
EXPORT_REPORT_HTML = "export-report-html"
DOWNLOAD = "download"  # dcc.Download shared by the small exports
DOWNLOAD_URL = "download-url"  # dcc.Store: URL of a streamed export, opened by the browser
EXPORT_MESSAGE = "export-message"
