"""Row sums and the label column in a real browser: the switch and the picker by the drop zone.

Issue 15, item 3: a CSV written with ``df.round(4)`` was refused, and the
message told the user to pass ``renormalize=True`` / ``label_column=...``,
which exist only in Python. Now rounded rows load with a notice, rows far
from summing to 1 ask for the "renormalise rows" switch, and a file without
a recognisable label column shows a picker of its columns.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser


def _probabilities(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=2.0, size=(n, k))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return p, rng.integers(0, k, n)


def _write(path, probs, labels, label_name="label"):
    frame = pd.DataFrame(probs, columns=[f"p_{j}" for j in range(probs.shape[1])])
    frame.insert(0, label_name, labels)
    frame.to_csv(path, index=False)
    return path


def test_rounded_file_loads_with_a_notice(page, ui, screenshot, tmp_path):
    ui.open()
    probs, labels = _probabilities(400, 10, seed=3)
    path = _write(tmp_path / "rounded.csv", np.round(probs, 4), labels)
    ui.upload(path)
    expect(ui.upload_lines("ok")).to_have_text("rounded.csv: loaded rounded.")
    notice = ui.upload_lines("notice")
    expect(notice).to_contain_text(re.compile(r"rounded\.csv: \d+ probability row\(s\)"))
    expect(notice).to_contain_text("as if rounded when saved")
    expect(ui.upload_lines("error")).to_have_count(0)
    screenshot("rounded-file-notice")
    ui.wait_fit_idle()


def test_unnormalised_rows_ask_for_the_switch(page, ui, screenshot, tmp_path):
    ui.open()
    probs, labels = _probabilities(300, 4, seed=4)
    path = _write(tmp_path / "scores.csv", probs * 1.5, labels)  # sums 1.5, values <= 1.5
    ui.upload(path)
    error = ui.upload_lines("error")
    expect(error).to_contain_text("tick 'renormalise rows'")
    expect(error).not_to_contain_text("renormalize=True")
    expect(error).not_to_contain_text("--renormalize")
    screenshot("unnormalised-rows-refused")
    switch = page.locator("#upload-renormalize").get_by_label(re.compile("renormalise rows"))
    switch.check()
    ui.upload(path)
    expect(ui.upload_lines("ok")).to_have_text("scores.csv: loaded scores.")
    expect(ui.upload_lines("notice")).to_contain_text("300 probability row(s)")
    expect(ui.upload_lines("error")).to_have_count(0)
    screenshot("unnormalised-rows-renormalised")
    ui.wait_fit_idle()


def test_label_column_picker_sends_the_file_again(page, ui, screenshot, tmp_path):
    ui.open()
    probs, labels = _probabilities(200, 3, seed=5)
    path = _write(tmp_path / "truth.csv", probs, labels, label_name="truth")
    field = page.locator("#upload-label-field")
    expect(field).to_be_hidden()
    ui.upload(path)
    expect(ui.upload_lines("error")).to_contain_text("pick the label column")
    expect(ui.upload_lines("error")).not_to_contain_text("label_column=")
    expect(field).to_be_visible()
    screenshot("label-column-picker")
    page.get_by_label("Label column").select_option("truth")
    expect(ui.upload_lines("ok")).to_have_text("truth.csv: loaded truth.")
    expect(field).to_be_hidden()
    ui.wait_fit_idle()
