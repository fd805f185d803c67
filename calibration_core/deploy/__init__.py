"""Deploy a calibration map: refit it on all rows, export it as JSON, load and apply it.

- :mod:`~calibration_core.deploy.document`: :func:`deployable_map` and the
  versioned document :class:`DeployableMap`.
- :mod:`~calibration_core.deploy.loader`: :func:`load_map` (a fitted map from
  a deployable document or a fold-map export entry).
- :mod:`~calibration_core.deploy.files`: :func:`apply_map_to_file`, which
  streams a predictions file through a map; its output layout
  (:func:`output_names`, :func:`output_arrays`) and CSV writer
  (:func:`text_writer`) also write the dashboard's calibrated export.
"""

from .document import (
    DEPLOY_FORMAT,
    DEPLOY_KIND,
    IDENTITY_WORDS,
    DeployableMap,
    best_map,
    deployable_map,
    recommended_map,
)
from .files import apply_map_to_file, output_arrays, output_names, text_writer
from .loader import load_deployable, load_map, map_byte_limit

__all__ = [
    "DEPLOY_FORMAT",
    "DEPLOY_KIND",
    "IDENTITY_WORDS",
    "DeployableMap",
    "apply_map_to_file",
    "best_map",
    "deployable_map",
    "load_deployable",
    "load_map",
    "map_byte_limit",
    "output_arrays",
    "output_names",
    "recommended_map",
    "text_writer",
]
