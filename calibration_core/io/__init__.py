"""Loading predictions from files: CSV/TSV (also gzipped), Parquet and npz.

:func:`load_predictions` returns one :class:`~calibration_core.Predictions`
per model. Conventions are documented in :mod:`.columns` (tables),
:mod:`.npz` (archives), :mod:`.readers` (encodings) and :mod:`.source`
(format detection); row numbering in messages in :mod:`.checks`.
"""

from __future__ import annotations

from .chunks import iter_prediction_chunks
from .load import load_predictions, load_with_notices
from .source import SUPPORTED

__all__ = ["SUPPORTED", "iter_prediction_chunks", "load_predictions", "load_with_notices"]
