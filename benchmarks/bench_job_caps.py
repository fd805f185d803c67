"""Peak memory of the job workers when one session starts four heavy fits (issue 13).

The stack of ``tests/hosting/test_jobs.py`` (``redis-server``, one Celery job
worker with ``JOB_WORKERS=4`` so that the pool does not limit anything, one
gunicorn server), started from this checkout with the helpers of
``tests/hosting/conftest.py``. One session uploads CIFAR-100 (DenseNet, 10,000
x 100, from ``/work/shared/realdata`` or ``--npz``) and starts, from four tabs
at once, four Dirichlet fits (5, 4 and 3 folds, and the train/test split: four
different jobs). The resident memory of all pool processes is summed every
0.2 s until every tab has its answer.

    python benchmarks/bench_job_caps.py [--npz PATH]

Prints that sum before the fits (idle pool) and its peak, how many fits ran,
how many jobs were running or queued in Celery at once at most (the tasks of
the job book's records; ``MAX_JOBS_PER_SESSION``, default 2, bounds it), how
many waited for a slot (their page said so), how many were refused, and the
wall time.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
from celery import Celery

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.jobs import JobBook  # noqa: E402
from tests.hosting.conftest import (  # noqa: E402
    CeleryWorker,
    DashTab,
    Fit,
    Gunicorn,
    RedisServer,
    fit_state,
    prewarm_demo,
)

NPZ = Path("/work/shared/realdata/densenet-bc-100-cifar-100.npz")
#: (held-out mode, folds): four different Dirichlet jobs of the same model.
SCHEMES = (("folds", 5), ("folds", 4), ("folds", 3), ("split", 5))
STATUS = "fit-status.children"


def cifar_csv(path: Path) -> bytes:
    """The predictions of ``path`` (``predictions``, ``ground_truth``) as a CSV."""
    data = np.load(path)
    probs, labels = data["predictions"].astype(np.float64), data["ground_truth"]
    header = ",".join([*(f"p_{j}" for j in range(probs.shape[1])), "label"])
    out = io.StringIO()
    np.savetxt(out, np.column_stack([probs, labels]), delimiter=",", fmt="%.6g", header=header)
    text = out.getvalue().replace("# ", "", 1)
    return text.encode()


def pool_rss(worker: CeleryWorker) -> int:
    """Resident bytes of the job worker's pool processes."""
    total = 0
    for child in psutil.Process(worker.proc.pid).children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def start_fit(tab: DashTab, handle: str, mode: str, folds: int) -> Fit:
    fit = Fit(tab)
    values = {
        "model-select.value": [handle],
        "maps.value": ["dirichlet"],
        "heldout.value": mode,
        "folds.value": folds,
    }
    tab.values.update(values)
    return fit.start(handle, maps=("dirichlet",))


def run(npz: Path) -> dict:
    cache_dir = Path(tempfile.mkdtemp(prefix="bench-job-caps-"))
    prewarm_demo(cache_dir)
    services = []
    try:
        redis_server = RedisServer(cache_dir / "redis")
        services.append(redis_server)
        worker = CeleryWorker(cache_dir, redis_server.url, job_workers=4)
        services.append(worker)
        web = Gunicorn(cache_dir, workers=2, threads=4, env={"REDIS_URL": redis_server.url})
        services.append(web)
        worker.wait_ready()
        web.wait_ready()
        first = DashTab(web.url, timeout=600).load()
        status, body = first.upload("cifar100.csv", cifar_csv(npz))
        assert status == 200 and not body["errors"], body
        handle = body["models"][0]["handle"]
        tabs = [first]
        for _ in range(3):
            tab = DashTab(web.url, timeout=600)
            tab.set_cookie(first.cookie())
            tabs.append(tab.load())
        idle = pool_rss(worker)
        peak, answers, stop = 0, [None] * 4, threading.Event()
        book, at_once, waited = JobBook(cache_dir / "job-book"), 0, set()
        tasks = Celery(broker=redis_server.url, backend=redis_server.url)

        def sample():
            nonlocal peak, at_once
            while not stop.is_set():
                peak = max(peak, pool_rss(worker))
                ids = [r["process"] for r in book.records().values() if r["process"]]
                states = [tasks.AsyncResult(task).state for task in ids]
                at_once = max(at_once, sum(1 for s in states if s in ("PENDING", "STARTED")))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample)
        sampler.start()
        start = time.perf_counter()

        def one(i: int) -> None:
            mode, folds = SCHEMES[i]
            fit = start_fit(tabs[i], handle, mode, folds)
            while True:  # Fit.result, noting whether the page said the job waits
                status, answer = fit.poll()
                if status == 204 or "response" in answer:
                    break
                if answer.get("progress", {}).get(STATUS, "").startswith("waiting"):
                    waited.add(i)
                time.sleep(0.5)
            answers[i] = fit_state(answer)
            done = round(time.perf_counter() - start, 1)
            summary = answers[i].get("error") or answers[i].get("summary")
            print(f"tab {i} ({mode}, {folds}) answered at {done} s: {summary}", file=sys.stderr)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - start
        stop.set()
        sampler.join()
        refused = [a["error"] for a in answers if a and a.get("error")]
        return {
            "idle_pool_rss_mb": round(idle / 2**20),
            "peak_pool_rss_mb": round(peak / 2**20),
            "fitted": sum(1 for a in answers if a and a.get("fitted")),
            "submitted_at_once": at_once,
            "waited": len(waited),
            "refused": len(refused),
            "messages": refused,
            "seconds": round(seconds, 1),
        }
    finally:
        for service in reversed(services):
            service.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npz", type=Path, default=NPZ)
    print(run(parser.parse_args().npz))


if __name__ == "__main__":
    main()
