"""Calibration for whom, and since when: slices and time windows.

- :mod:`~calibration_core.slices.groups`: groups of rows from the file's other
  columns (:func:`group_index`), small groups flagged, too many refused.
- :mod:`~calibration_core.slices.times`: the time column and windows over it.
- :mod:`~calibration_core.slices.grouped`: every group's metrics in one grouped
  pass over the binning engine, and bootstrap intervals within groups.
- :mod:`~calibration_core.slices.homogeneity`: the test of "the same calibration
  in every group".
- :mod:`~calibration_core.slices.report`: :func:`slice_report`, the per-group table.
- :mod:`~calibration_core.slices.reference`: the reference period chosen by the
  user (the first K windows, windows A to B, or dates START:END).
- :mod:`~calibration_core.slices.drift`: :func:`drift_report`, windows against a
  reference period.
- :mod:`~calibration_core.slices.maps`: :func:`group_maps`, one global map vs one
  map per group, held out.
"""

from .drift import DriftReport, drift_report
from .grouped import GROUP_METRICS, GroupedPass, grouped_bootstrap, row_values
from .groups import MAX_GROUPS, MIN_GROUP_ROWS, GroupIndex, group_candidates, group_index
from .homogeneity import HomogeneityResult, homogeneity_test
from .maps import DEFAULT_GROUP_MAPS, GroupMaps, group_maps
from .reference import ReferencePeriod, parse_reference, reference_rows
from .report import SliceReport, slice_report, worst_group
from .times import (
    MAX_WINDOWS,
    TIME_CANDIDATES,
    find_time_column,
    parse_window,
    time_values,
    time_windows,
    window_index,
)

__all__ = [
    "DEFAULT_GROUP_MAPS",
    "GROUP_METRICS",
    "MAX_GROUPS",
    "MAX_WINDOWS",
    "MIN_GROUP_ROWS",
    "TIME_CANDIDATES",
    "DriftReport",
    "GroupIndex",
    "GroupMaps",
    "GroupedPass",
    "HomogeneityResult",
    "ReferencePeriod",
    "SliceReport",
    "drift_report",
    "find_time_column",
    "group_candidates",
    "group_index",
    "group_maps",
    "grouped_bootstrap",
    "homogeneity_test",
    "parse_reference",
    "parse_window",
    "reference_rows",
    "row_values",
    "slice_report",
    "time_values",
    "time_windows",
    "window_index",
    "worst_group",
]
