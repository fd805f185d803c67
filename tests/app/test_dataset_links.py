"""DATASETS_DIR offers only regular files and folders inside it, after resolving links.

Issue 31, item 5: links to /etc/passwd, /proc/self/environ, a folder outside and
a loop back to the folder itself were offered as datasets. No cluster is needed:
the list and :meth:`Datasets.resolve` read the directory only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from app.datasets import Datasets, scan_datasets
from calibration_core import CalibrationInputError


def parquet(path: Path) -> Path:
    pq.write_table(pa.table({"p_a": [0.2, 0.7], "p_b": [0.8, 0.3], "label": ["a", "b"]}), path)
    return path


@pytest.fixture
def roots(tmp_path) -> tuple[Path, Path]:
    """``(DATASETS_DIR, a folder outside it)``, with one good file and one good folder."""
    root, outside = tmp_path / "datasets", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    parquet(root / "good.parquet")
    (root / "folder").mkdir()
    parquet(root / "folder" / "part-0.parquet")
    parquet(outside / "secret.parquet")
    return root, outside


def datasets(root: Path, tmp_path: Path) -> Datasets:
    return Datasets(root, "tcp://127.0.0.1:1", tmp_path / "cache", ttl_seconds=60)


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("passwd.parquet", "/etc/passwd"),
        ("environ.parquet", "/proc/self/environ"),
        ("outside_file.parquet", "OUTSIDE/secret.parquet"),
        ("outside_folder", "OUTSIDE"),
        ("itself", "ROOT"),
        ("loop.parquet", "LOOP"),
        ("broken.parquet", "ROOT/missing.parquet"),
    ],
)
def test_links_leading_outside_are_neither_listed_nor_resolved(roots, tmp_path, name, target):
    root, outside = roots
    link = root / name
    target = target.replace("OUTSIDE", str(outside)).replace("ROOT", str(root))
    os.symlink(str(link) if target == "LOOP" else target, link)
    assert scan_datasets(root) == {"folder": root / "folder", "good": root / "good.parquet"}
    shown = name.removesuffix(".parquet")
    with pytest.raises(CalibrationInputError, match=r"not offer|no dataset"):
        datasets(root, tmp_path).resolve(shown)


def test_a_link_outside_says_why_it_is_refused(roots, tmp_path):
    root, outside = roots
    os.symlink(outside, root / "mounted")
    with pytest.raises(CalibrationInputError, match=r"outside DATASETS_DIR.*mount"):
        datasets(root, tmp_path).resolve("mounted")


def test_a_folder_with_a_file_linked_outside_is_refused(roots):
    root, outside = roots
    os.symlink(outside / "secret.parquet", root / "folder" / "part-1.parquet")
    assert "folder" not in scan_datasets(root)


def test_links_inside_are_followed(roots, tmp_path):
    root, _ = roots
    os.symlink(root / "good.parquet", root / "alias.parquet")
    os.symlink(root / "folder", root / "same_folder")
    found = scan_datasets(root)
    assert found["alias"] == found["good"] == (root / "good.parquet").resolve()
    assert datasets(root, tmp_path).resolve("same_folder") == (root / "folder").resolve()


def test_a_fifo_is_not_a_dataset(roots, tmp_path):
    root, _ = roots
    os.mkfifo(root / "pipe.parquet")
    assert "pipe" not in scan_datasets(root)  # and listing did not block on the FIFO
    with pytest.raises(CalibrationInputError, match="FIFO"):
        datasets(root, tmp_path).resolve("pipe")


def test_a_datasets_dir_behind_a_link_still_works(roots, tmp_path):
    root, _ = roots
    os.symlink(root, tmp_path / "via_link")
    assert set(scan_datasets(tmp_path / "via_link")) == {"folder", "good"}
