"""The calibrated export and the score parts on three CIFAR-100 models (issue 15, 12 and 13).

    python benchmarks/bench_outputs.py [--realdata /work/shared/realdata]

Loads DenseNet, WideResNet and LeNet-5 (10,000 x 100 each), fits temperature
scaling and isotonic regression (5 folds) as the page does, then prints:

* the calibrated export (:func:`app.callbacks.exports.export_stream`): its size
  (the zip, and the CSVs inside) and the time to write it all;
* :func:`app.callbacks.view.render` with the score-parts box off, ticked (first
  redraw of a binning: the parts are computed) and ticked again (cached).
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FILES = ("densenet-bc-100-cifar-100", "wideresnet-16-4-cifar-100", "lenet-5-cifar-100")
MAPS = ["temperature", "isotonic"]


def _context():
    from app.config import AppConfig
    from app.context import AppContext
    from app.session import SessionManager, new_session_id
    from app.store.data_store import DataStore

    tmp = Path(tempfile.mkdtemp(prefix="bench-outputs-"))
    config = AppConfig(cache_dir=tmp, secret_key="bench-secret-key-0123456789")
    store = DataStore(tmp / "store", memory_bytes=4 << 30, size_limit_bytes=16 << 30)
    return AppContext(config, store, SessionManager(config.secret_key, 3600)), new_session_id()


def load_models(ctx, sid, folder: Path) -> list[str]:
    """The three networks' predictions in the store; their handles."""
    from calibration_core import Predictions

    handles = []
    for name in FILES:
        data = np.load(folder / f"{name}.npz")
        pred = Predictions.from_probs(
            data["predictions"].astype(np.float64),
            data["ground_truth"],
            renormalize=True,
            name=name,
        )
        handles.append(ctx.store.add_models(sid, [pred], f"{name}.npz")[0].handle)
    return handles


def bench_export(ctx, sid, handles: list[str]) -> None:
    """Size and time of the calibrated export of the view."""
    from app.callbacks.exports import create_calibrated_export, export_stream
    from app.settings import RawSettings

    start = time.perf_counter()
    url = create_calibrated_export(ctx, sid, RawSettings(handles, MAPS, "folds", 5))
    name, _, chunks = export_stream(ctx, sid, url.rsplit("/", 1)[1])
    data = b"".join(chunks)
    seconds = time.perf_counter() - start
    inside = sum(i.file_size for i in zipfile.ZipFile(io.BytesIO(data)).infolist())
    print(
        f"calibrated export: {name.rsplit('.', 1)[1]} of {len(FILES) * len(MAPS)} files, "
        f"{len(data) / 1e6:.1f} MB ({inside / 1e6:.1f} MB of CSV) in {seconds:.2f} s"
    )


def bench_parts(ctx, sid, handles: list[str]) -> None:
    """render() with the score parts off, first shown for a binning, and cached."""
    from app.callbacks.view import render
    from app.settings import RawSettings

    def seconds(**kw) -> float:
        start = time.perf_counter()
        render(ctx, sid, RawSettings(handles, MAPS, "folds", 5, **kw))
        return time.perf_counter() - start

    seconds()
    for n_bins in (15, 20, 25):
        off = seconds(n_bins=n_bins)
        first = seconds(n_bins=n_bins, score_parts=["parts"])
        cached = seconds(n_bins=n_bins, score_parts=["parts"])
        print(
            f"render, {n_bins} bins: parts off {off:.3f} s, ticked {first:.3f} s "
            f"(first for this binning), {cached:.3f} s (cached)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--realdata", type=Path, default=Path("/work/shared/realdata"))
    args = parser.parse_args()
    from app.services.fit import run_fits

    ctx, sid = _context()
    handles = load_models(ctx, sid, args.realdata)
    run_fits(ctx, sid, handles, MAPS, "folds", 5, 0.5, lambda _: None)
    bench_export(ctx, sid, handles)
    bench_parts(ctx, sid, handles)


if __name__ == "__main__":
    main()
