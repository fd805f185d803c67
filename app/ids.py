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
UPLOAD_RENORMALIZE = "upload-renormalize"  # "renormalise rows" switch, read by upload.js
UPLOAD_LABEL_FIELD = "upload-label-field"  # the label-column picker, shown when a file needs it
UPLOAD_LABEL_COLUMN = "upload-label-column"  # <select> of the refused file's columns
UPLOAD_CONVENTIONS = "upload-conventions"  # <details> under the drop zone: which columns
EXAMPLE_DOWNLOAD = "example-download"  # link to assets/example_predictions.csv
MODELS_STORE = "models-store"  # dcc.Store: opaque handles + names of usable models
ALL_BINARY_STORE = "all-binary-store"  # dcc.Store: whether the selection is all binary
PAGE_URL = "page-url"  # dcc.Location: the view's settings in the address (app/view_url.py)

# -- server-side datasets (only when DATASETS_DIR is set; app/datasets.py) ------
DATASET_SELECT = "dataset-select"  # dropdown of the server's dataset names
DATASET_RUN = "dataset-run"  # "Compute" (again): starts the cluster job of the picked dataset
DATASET_CANCEL = "dataset-cancel"
DATASET_PROGRESS = "dataset-progress"
DATASET_STATUS = "dataset-status"
DATASET_DONE = "dataset-done"  # dcc.Store: bumped when the cluster job ends ({nonce, error})
DATASET_VIEW = "dataset-view"  # the dataset's diagrams, metrics and notes
DATASET_MAPS = "dataset-maps"  # the maps' controls, shown once a dataset is picked
DATASET_MAPS_RUN = "dataset-maps-run"  # "Fit maps on a sample": the maps' cluster job
DATASET_MAPS_CANCEL = "dataset-maps-cancel"
DATASET_MAPS_PROGRESS = "dataset-maps-progress"
DATASET_MAPS_STATUS = "dataset-maps-status"
DATASET_MAPS_DONE = "dataset-maps-done"  # dcc.Store: bumped when the maps' job ends
DATASET_MAPS_VIEW = "dataset-maps-view"  # the maps' held-out table and diagrams
# "Per group" and "Over time" of a picked dataset (app/groups/dataset.py)
DATASET_SLICES = "dataset-slices"  # their controls and view, shown once a dataset is picked
DATASET_GROUP_SELECT = "dataset-group-select"  # column to group by (from the Parquet schema)
DATASET_GROUP_MIN_ROWS = "dataset-group-min-rows"
DATASET_TIME_COLUMN = "dataset-time-column"
DATASET_WINDOW = "dataset-window"  # day, week, month or every N rows (empty: no windows)
DATASET_WINDOW_ROWS = "dataset-window-rows"  # N of every N rows
DATASET_REFERENCE = "dataset-reference"
DATASET_SLICES_RUN = "dataset-slices-run"  # "Compute": their cluster job
DATASET_SLICES_CANCEL = "dataset-slices-cancel"
DATASET_SLICES_PROGRESS = "dataset-slices-progress"
DATASET_SLICES_STATUS = "dataset-slices-status"
DATASET_SLICES_DONE = "dataset-slices-done"  # dcc.Store: bumped when their job ends
DATASET_SLICES_REQUEST = "dataset-slices-request"  # dcc.Store: settings not kept yet: start it
DATASET_SLICES_VIEW = "dataset-slices-view"  # the groups' and windows' tables and figures

# -- controls ----------------------------------------------------------------
CONTROLS_DOCK = "controls-dock"  # the controls (upload, models, settings) and their toggle bar
CONTROLS_TOGGLE = "controls-toggle"  # below 1000 px: opens / closes the controls drawer
CONTROLS_DRAWER = "controls-drawer"  # the controls' panels (a drawer below 1000 px)
MODEL_SELECT = "model-select"
NOTION = "notion"
CLASS_SELECT = "class-select"
CLASS_FIELD = "class-field"  # wrapper shown only for the one-vs-rest notion
CLASS_AUTO = "class-auto"  # dcc.Store: the class the page picked itself (not the user)
SCHEME = "scheme"
N_BINS = "n-bins"
BAND = "band"
BAND_LEVEL = "band-level"
DIAGRAM_KIND = "diagram-kind"  # "binned" | "smooth" | "cumulative" (app.settings.DIAGRAM_KINDS)
MAPS = "maps"
HELDOUT = "heldout"  # "folds" | "split"
FOLDS = "folds"
TEST_FRACTION = "test-fraction"
FOLDS_FIELD = "folds-field"
SPLIT_FIELD = "split-field"

# -- fitting (background callback) -----------------------------------------------
FIT_STATE = "fit-state"  # dcc.Store: summary of the last fit (triggers re-render)
FIT_REQUEST = "fit-request"  # dcc.Store: the work the background fit should do
FIT_PROGRESS = "fit-progress"  # html.Progress
FIT_STATUS = "fit-status"  # text next to the progress bar
FIT_CANCEL = "fit-cancel"  # button
FIT_START = "fit-start"  # button: fit what is missing (e.g. after a cancel)
FIT_SUMMARY = "fit-summary"  # outcome of the last fit (shown when idle)

# -- results -----------------------------------------------------------------
MESSAGE = "message"  # readable errors of the view (never a traceback)
ADDRESS_NOTICE = "address-notice"  # what the page address asked for but could not be restored
VIEW_TITLE = "view-title"
RELIABILITY_GRID = "reliability-grid"  # container of the diagram slots (app.view_update)
GRAPH_SLOT = "graph-slot"  # id prefix of slot i ("graph-slot-0"): one dcc.Graph or nothing
GRAPH_TYPE = "reliability-graph"  # pattern id {"type": GRAPH_TYPE, "model": handle}
VIEW_KEYS = "view-keys"  # store: digests of what the view shows (app.view_update)
METRICS_GRID = "metrics-grid"  # dash-ag-grid
METRICS_CAPTION = "metrics-caption"
VERDICT = "verdict"  # one card per model: best map, runner-up, interval, recommendation

# -- per group (app/layout/groups.py, app/callbacks/groups/columns.py) -----------------
GROUP_SELECT = "group-select"  # dropdown: the column to group rows by (none by default)
GROUP_SECTION = "group-section"  # the "Per group" section (hidden without a group column)
GROUP_SUMMARY = "group-summary"  # worst group and gap, the homogeneity test, small groups
GROUP_TABLE = "group-table"  # the per-group metrics table
GROUP_GRAPH = "group-graph"  # container of the groups' reliability diagrams (small multiples)
GROUP_GATE = "group-gate"  # dcc.Store: the settings the section follows, written in the browser
GROUP_REQUEST = "group-request"  # dcc.Store: the view whose intervals the job should compute
GROUP_DONE = "group-done"  # dcc.Store: the job's {"nonce", "error"} record
GROUP_MIN_ROWS = "group-min-rows"  # number input: groups with fewer rows are not judged
GROUP_STATUS = "group-status"  # "computing intervals…" while the job runs
GROUP_MAPS = "group-maps"  # the global vs per-group maps: a line and the table per group
GROUP_MAPS_DONE = "group-maps-done"  # dcc.Store: the maps job's {"nonce", "error"} record
GROUP_MAPS_STATUS = "group-maps-status"  # "comparing maps…" while the maps job runs

# -- exports -----------------------------------------------------------------
FIGURE_FORMAT = "figure-format"  # "png" | "svg" for the modebar camera button
EXPORT_METRICS_CSV = "export-metrics-csv"
EXPORT_METRICS_JSON = "export-metrics-json"
EXPORT_PARAMS_JSON = "export-params-json"
EXPORT_CALIBRATED_CSV = "export-calibrated-csv"
EXPORT_REPORT_HTML = "export-report-html"
DEPLOY_MODEL = "deploy-model"  # dropdown: the model of the deployable map (first by default)
DEPLOY_MAP = "deploy-map"  # dropdown: "best" (the verdict's winner) or a selected map
EXPORT_DEPLOYABLE = "export-deployable"  # button: the deployable map JSON, refitted on all rows
DOWNLOAD = "download"  # dcc.Download shared by the small exports
DOWNLOAD_URL = "download-url"  # dcc.Store: URL of a streamed export, opened by the browser
EXPORT_MESSAGE = "export-message"

# -- diagnostics (app/layout/diagnostics.py, app/callbacks/diagnostics.py) ---
DIAG_SECTION = "diagnostics"  # the whole collapsible section below the metrics table
DIAG_TOGGLE = "diag-toggle"  # button: shows / hides the section body
DIAG_BODY = "diag-body"
DIAG_OPEN = "diag-open"  # dcc.Store: True while the body is shown (nothing computed before)
# dcc.Stores written in the browser only while the section is open: {"handle", "settings":
# {field: value}, "fit_state"}; the section's server callbacks take them as input (no request
# while closed).
DIAG_VIEW_GATE = "diag-view-gate"  # the model and the view's eight settings
DIAG_FIT_GATE = "diag-fit-gate"  # the model and the four fit settings
DIAG_MODEL = "diag-model"  # dropdown: one of the selected models
DIAG_RESAMPLES = "diag-resamples"  # dropdown: resamples of the test and the bootstrap
DIAG_CAPTION = "diag-caption"
DIAG_MESSAGE = "diag-message"
DIAG_SENSITIVITY = "diag-sensitivity"  # dcc.Graph: ECE against the number of bins
DIAG_ESTIMATORS = "diag-estimators"  # plug-in / adaptive / debiased table
DIAG_HL_GROUPS = "diag-hl-groups"
DIAG_HL = "diag-hl"
DIAG_MEASURE = "diag-measure"
DIAG_TEST_RUN = "diag-test-run"
DIAG_TEST_CANCEL = "diag-test-cancel"
DIAG_TEST_PROGRESS = "diag-test-progress"
DIAG_TEST_STATUS = "diag-test-status"
DIAG_TEST_DONE = "diag-test-done"  # dcc.Store: bumped when a background test run ends
DIAG_TEST_TABLE = "diag-test-table"
DIAG_TEST_GRAPH = "diag-test-graph"
DIAG_BOOT_LEVEL = "diag-boot-level"
DIAG_BOOT_RUN = "diag-boot-run"
DIAG_BOOT_CANCEL = "diag-boot-cancel"
DIAG_BOOT_PROGRESS = "diag-boot-progress"
DIAG_BOOT_STATUS = "diag-boot-status"
DIAG_BOOT_DONE = "diag-boot-done"
DIAG_BOOT_TABLE = "diag-boot-table"
DIAG_COST_FP = "diag-cost-fp"  # C(+|-)
DIAG_COST_FN = "diag-cost-fn"  # C(-|+)
DIAG_TRAIN_PRIOR = "diag-train-prior"
DIAG_DEPLOY_PRIOR = "diag-deploy-prior"
DIAG_DECISION = "diag-decision"
DIAG_COST_GRAPH = "diag-cost-graph"
DIAG_HUMAN = "diag-human"
DIAG_BEYOND_RUN = "diag-beyond-run"  # button: compute the "Beyond bins" measures
DIAG_BEYOND_CANCEL = "diag-beyond-cancel"
DIAG_BEYOND_PROGRESS = "diag-beyond-progress"
DIAG_BEYOND_STATUS = "diag-beyond-status"
DIAG_BEYOND_DONE = "diag-beyond-done"  # dcc.Store: bumped when the job ends
DIAG_BEYOND_TABLE = "diag-beyond-table"
MODEL_SEARCH = "model-search"  # filters the model list by name (selection kept)
MODEL_LIST_NOTE = "model-list-note"  # e.g. "at most 8 at a time: selected the first 8"
MODEL_GROUP_ALL = "model-group-all"  # pattern id type {"type", "group": source}: select a file
MODEL_GROUP_NONE = "model-group-none"  # pattern id type: deselect a file's models
SCORE_PARTS = "score-parts"  # checklist: show the Brier/log-loss calibration + refinement parts
TIME_COLUMN = "time-column"  # dropdown: the time column of the "Over time" panel (None: found)
TIME_WINDOW = "time-window"  # dropdown: day, week, month or every N rows
TIME_ROWS = "time-rows"  # number: N of "every N rows" (empty: a tenth of the rows)
TIME_REFERENCE = "time-reference"  # text: the reference period (K, A:B or START:END)
TIME_RUN = "time-run"  # button: compute the windows' intervals in the background
TIME_CANCEL = "time-cancel"
TIME_PROGRESS = "time-progress"
TIME_STATUS = "time-status"
TIME_DONE = "time-done"  # dcc.Store: bumped when the interval job ends
TIME_MESSAGE = "time-message"
TIME_GRAPH = "time-graph"  # the time chart; a click picks a window
TIME_TABLE = "time-table"
TIME_DIAGRAM = "time-diagram"  # reliability diagram of the clicked window
