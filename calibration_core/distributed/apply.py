"""Apply a fitted map to a whole dataset: calibrated Parquet, file by file, on Dask.

Each input file is one task running the core's streaming writer
(:func:`~calibration_core.deploy.files.apply_map_to_file`: batches of rows,
the same output columns and kept columns as ``calibration-dashboard apply``),
so memory per worker stays bounded by a batch and files are written in
parallel. Output files keep their input names, in ``out_dir``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..deploy import DeployableMap
from ..deploy.files import apply_map_to_file
from ..errors import CalibrationInputError
from .engine import require_dask
from .pieces import find_pieces

__all__ = ["apply_map_to_dataset", "dataset_deployable"]


def dataset_deployable(fitted, model: str, class_names, n_rows: int | None = None) -> DeployableMap:
    """Wrap a map fitted on a dataset (e.g. ``fit_temperature_on_dataset``) as deployable.

    Parameters
    ----------
    fitted : CalibrationMap
        Its ``input`` (``"probs"`` or ``"logits"``) is what it reads when applied.
    model : str
    class_names : sequence of str
        The K classes in column order.
    n_rows : int, optional
        Rows it was fitted on.

    Returns
    -------
    DeployableMap
        Without a held-out estimate (``held_out`` None): nothing was cross-fitted.
    """
    return DeployableMap(
        map=fitted,
        model=model,
        input=getattr(fitted, "input", "probs"),
        class_names=tuple(class_names),
        n_rows=n_rows,
        held_out=None,
        library_version=__version__,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def apply_map_to_dataset(
    deployable: DeployableMap, source, out_dir, *, client: Any = None
) -> dict[str, int]:
    """Calibrate every file of a Parquet dataset into ``out_dir``, one task per file.

    Parameters
    ----------
    deployable : DeployableMap
    source : str or list
        A Parquet file, folder, glob or list of files.
    out_dir : str or os.PathLike
        Created if needed; must not be the folder of an input file.
    client : distributed.Client, optional

    Returns
    -------
    dict of str to int
        Output file to rows written, in input order.
    """
    dask = require_dask()
    paths = list(dict.fromkeys(piece.path for piece in find_pieces(source)))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    targets = [out / Path(p).name for p in paths]
    for path, target in zip(paths, targets, strict=True):
        if target.resolve() == Path(path).resolve():
            raise CalibrationInputError(
                f"the output folder {str(out)!r} holds the input {Path(path).name!r}; write "
                "the calibrated files to another folder."
            )
    task = dask.delayed(apply_map_to_file, pure=False)
    parts = [task(deployable, p, str(t)) for p, t in zip(paths, targets, strict=True)]
    rows = dask.compute(*parts) if client is None else client.gather(client.compute(parts))
    return {str(t): int(n) for t, n in zip(targets, rows, strict=True)}
