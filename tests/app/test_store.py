"""The disk-backed store: parsed once, shared by workers, isolated per session, bounded."""

from __future__ import annotations

import time
from dataclasses import asdict

import numpy as np
import pytest

from app.session import new_session_id
from app.settings import HeldOut
from app.store.data_store import DEMO_PREFIX, DataStore
from app.store.disk import DataUnavailable
from app.store.records import NOTEBOOK_SOURCE, FitRecord
from calibration_core import Predictions


def _pred(n=300, k=3, seed=0, name="model") -> Predictions:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    return Predictions.from_probs(p, rng.integers(0, k, n), name=name)


def test_a_score_input_stays_one_through_the_disk_store_and_renaming(tmp_path):
    rng = np.random.default_rng(1)
    score = Predictions.from_scores(rng.uniform(size=50), rng.integers(0, 2, 50), name="m")
    sid = new_session_id()
    store = DataStore(tmp_path)
    first, second = store.add_models(sid, [score, score], source="s.csv")  # "m", "m (2)"
    other_worker = DataStore(tmp_path)  # same directory, empty memory: read from disk
    assert other_worker.predictions(first.handle).score_column
    assert other_worker.predictions(second.handle).score_column
    (probs,) = store.add_models(sid, [_pred(k=2)], source="p.csv")
    assert not other_worker.predictions(probs.handle).score_column


def test_demo_models_are_listed_for_everyone(tmp_path):
    store = DataStore(tmp_path)
    demo = store.demo_models()
    assert len(demo) == 8 and all(m.handle.startswith(DEMO_PREFIX) for m in demo)
    assert store.session_models(None) == demo
    assert store.resolve(new_session_id(), demo[0].handle) == demo[0]
    np.testing.assert_array_equal(
        store.predictions(demo[5].handle).labels, store.predictions(demo[5].handle).labels
    )


def test_shared_models_replace_the_demo_for_everyone_and_stay_off_the_disk(tmp_path):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=50)
    mine = Predictions.from_probs(probs, rng.integers(0, 3, 50), name="notebook model")
    store = DataStore(tmp_path, shared=[mine])
    (info,) = store.session_models(new_session_id())
    assert (info.name, info.source) == ("notebook model", NOTEBOOK_SOURCE)
    assert store.resolve(None, info.handle) == info
    np.testing.assert_array_equal(store.predictions(info.handle).probs, probs)
    assert not [key for key in store.cache.iterkeys() if str(key).startswith("demo:")]


def test_uploads_are_isolated_between_sessions(tmp_path):
    store = DataStore(tmp_path)
    alice, bob = new_session_id(), new_session_id()
    (info,) = store.add_models(alice, [_pred(name="alice-model")], source="a.csv")
    assert info.handle in {m.handle for m in store.session_models(alice)}
    assert info.handle not in {m.handle for m in store.session_models(bob)}
    assert store.uploaded_models(bob) == []
    with pytest.raises(DataUnavailable, match="expired, please upload again"):
        store.resolve(bob, info.handle)
    with pytest.raises(DataUnavailable):
        store.resolve(None, info.handle)


def test_parsed_once_and_shared_with_another_worker(tmp_path):
    pred = _pred(n=500, k=4, seed=3)
    sid = new_session_id()
    (info,) = DataStore(tmp_path).add_models(sid, [pred], source="x.csv")
    other_worker = DataStore(tmp_path)  # same directory, empty memory
    assert other_worker.resolve(sid, info.handle).n_classes == 4
    loaded = other_worker.predictions(info.handle)
    np.testing.assert_array_equal(loaded.probs, pred.probs)
    np.testing.assert_array_equal(loaded.labels, pred.labels)
    assert not loaded.probs.flags.writeable
    # The load-time sorted scores travel with the data: no re-sorting in the new worker.
    assert ("confidence", None) in loaded._sorted and ("class", 3) in loaded._sorted


def test_duplicate_names_get_a_suffix_and_the_quota_holds(tmp_path):
    store = DataStore(tmp_path, max_models_per_session=3)
    sid = new_session_id()
    names = [i.name for i in store.add_models(sid, [_pred(name="m"), _pred(name="m")], "a.csv")]
    assert names == ["m", "m (2)"]
    assert (
        store.add_models(sid, [_pred(name="digits · MLP")], "b.csv")[0].name == "digits · MLP (2)"
    )
    with pytest.raises(DataUnavailable, match="at most 3"):
        store.add_models(sid, [_pred(name="one more")], "c.csv")
    assert len(store.uploaded_models(sid)) == 3  # nothing lost


def test_sessions_expire(tmp_path, wall_clock):
    ttl = 600  # long: nothing expires while the test runs, however slow the machine
    store = DataStore(tmp_path, ttl_seconds=ttl)
    sid = new_session_id()
    (info,) = store.add_models(sid, [_pred()], "a.csv")
    wall_clock.advance(ttl / 2)
    assert store.uploaded_models(sid) == [info]  # still there (and its TTL starts again)
    wall_clock.advance(ttl + 1)  # an idle TTL later
    assert store.uploaded_models(sid) == []
    with pytest.raises(DataUnavailable, match="expired"):
        store.resolve(sid, info.handle)


def test_fit_records_round_trip_and_need_their_predictions(tmp_path):
    store = DataStore(tmp_path)
    heldout = HeldOut("folds", folds=3)
    variant = DataStore.variant_handle("up-abc", "temperature", heldout)
    assert variant == DataStore.variant_handle("up-abc", "temperature", heldout)
    assert variant != DataStore.variant_handle("up-abc", "temperature", HeldOut("folds", folds=4))
    record = FitRecord(
        "temperature",
        heldout.key,
        variant,
        fit_seconds=0.5,
        converged=True,
        params=[{"state": {"t": 1.5}}],
        n_scored=300,
    )
    calibrated = _pred(seed=9)
    store.put_fit("up-abc", record, calibrated)
    # The parameters are read only when asked for (a view reads every selected map's record).
    assert store.get_fit("up-abc", "temperature", heldout, params=True) == record
    assert store.get_fit("up-abc", "temperature", heldout) == FitRecord(
        **{**asdict(record), "params": []}
    )
    assert store.get_fit("up-abc", "isotonic", heldout) is None
    np.testing.assert_array_equal(DataStore(tmp_path).predictions(variant).probs, calibrated.probs)
    # If the calibrated predictions were evicted, the fit counts as missing (refit), not broken.
    fresh = DataStore(tmp_path)
    fresh.cache.delete(f"pred:{variant}")
    assert fresh.get_fit("up-abc", "temperature", heldout) is None


def test_memory_cache_is_bounded_and_disk_serves_the_rest(tmp_path):
    store = DataStore(tmp_path, memory_bytes=200_000)
    sid = new_session_id()
    infos = store.add_models(sid, [_pred(n=2000, seed=s, name=f"m{s}") for s in range(4)], "a.csv")
    assert store._memory._bytes <= 200_000
    for info, seed in zip(infos, range(4), strict=True):
        np.testing.assert_array_equal(
            store.predictions(info.handle).probs, _pred(n=2000, seed=seed).probs
        )


def test_memo_caches_by_key(tmp_path):
    store = DataStore(tmp_path)
    calls = []
    assert store.memo(("k", 1), lambda: calls.append(1) or 42) == 42
    assert store.memo(("k", 1), lambda: calls.append(1) or 43) == 42
    assert calls == [1]


def test_forked_background_jobs_do_not_inherit_held_locks(tmp_path):
    import os

    store = DataStore(tmp_path)
    store._memory._lock.acquire()  # as if another worker thread held it at fork time
    try:
        pid = os.fork()
        if pid == 0:  # the background job
            try:
                store._memory.get("anything")
                store.memo(("k",), lambda: 1)
            finally:
                os._exit(0)
        # A deadlocked child must fail the test, not hang it; a healthy one ends at once,
        # so the deadline is only a generous safety net for a busy machine.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked job deadlocked on a lock held at fork time")
    finally:
        store._memory._lock.release()
    assert os.waitstatus_to_exitcode(status) == 0


def test_prebuilt_demo_is_read_not_trained_again(tmp_path, monkeypatch):
    import app.store.data_store as store_module
    from app.demo_cache import prebuild_demo
    from app.store.data_store import DataStore

    assert prebuild_demo(tmp_path) == 8

    def trained_again(*_args):
        raise AssertionError("the demo was trained again")

    monkeypatch.setattr(store_module, "demo_predictions", trained_again)
    store = DataStore(tmp_path / "store")
    try:
        names = [m.name for m in store.demo_models()]
    finally:
        store.close()
    assert len(names) == 8 and "digits · random forest" in names
    monkeypatch.delenv("CACHE_DIR", raising=False)
    with pytest.raises(SystemExit, match="set CACHE_DIR"):
        prebuild_demo()


def _files(root) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("k", [2, 50, 1000])
def test_a_model_takes_a_bounded_number_of_files_whatever_its_classes(tmp_path, k):
    """Sorted scores of every class are stacked: 24,000 classes once made 48,006 files."""
    store = DataStore(tmp_path)
    sid = new_session_id()
    before = _files(tmp_path)
    pred = _pred(n=60, k=k, seed=k)
    (info,) = store.add_models(sid, [pred], source="many.npz")
    # probs, labels, the two stacked sorted-score arrays, and at most the record and the
    # session's list (when too large for diskcache's database).
    assert _files(tmp_path) - before <= 6
    other_worker = DataStore(tmp_path)
    loaded = other_worker.predictions(info.handle)
    assert len(loaded._sorted) == k + 1  # confidence and every class, no re-sorting
    for key in [("confidence", None), ("class", 0), ("class", k - 1)]:
        mine, theirs = pred.sorted_scores(*key), loaded._sorted[key]
        np.testing.assert_array_equal(theirs.scores, mine.scores)
        np.testing.assert_array_equal(theirs._cum, mine._cum)


def test_concurrent_uploads_from_several_workers_keep_the_bound(tmp_path):
    # Eight "workers" (each its own DataStore on the same directory, as gunicorn workers
    # are) upload at once into a store with room for about half of them: the admission
    # lock makes each see the others' writes, so the bound holds and the rest are refused.
    # (Without the lock this overshoots in about one run of four; the lock itself is
    # checked deterministically below.)
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from app.store.budget import StoreFull
    from app.store.records import warm

    bound = 16 << 20
    DataStore(tmp_path, size_limit_bytes=bound).demo_models()  # the demo, stored first
    # Sorted scores built beforehand: all eight reach the admission at the same moment.
    preds = [warm(_pred(n=20_000, seed=s, name=f"m{s}")) for s in range(8)]
    barrier = Barrier(len(preds))

    def upload(pred):
        store = DataStore(tmp_path, size_limit_bytes=bound)
        barrier.wait()
        try:
            store.add_models(new_session_id(), [pred], "a.csv")
            return "stored"
        except StoreFull as exc:
            assert "server is full right now" in str(exc)
            return "refused"

    with ThreadPoolExecutor(len(preds)) as pool:
        outcomes = list(pool.map(upload, preds))
    assert outcomes.count("stored") >= 1 and outcomes.count("refused") >= 1, outcomes
    store = DataStore(tmp_path, size_limit_bytes=bound)
    on_disk = sum(f.stat().st_size for f in store.directory.rglob("*") if f.is_file())
    assert on_disk <= bound * 0.8, on_disk


def test_the_admission_lock_excludes_other_workers_and_threads(tmp_path):
    # While one store holds the lock, another handle on it (another worker, or another
    # thread of this one) cannot take it: checked without waiting, with LOCK_NB.
    import fcntl
    import os

    from app.store.budget import LOCK_FILE

    holder = DataStore(tmp_path).budget
    lock_path = DataStore(tmp_path).budget.directory / LOCK_FILE

    def can_take() -> bool:
        fd = os.open(lock_path, os.O_RDONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    with holder.locked():
        assert not can_take()
    assert can_take()
