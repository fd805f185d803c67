"""Under the drop zone: which columns a file needs, the example file, and wrong file types.

Issue 15, item 11: the page never said which columns a file needs, and a ``.txt``
upload ended in "no label column". These tests download the example through the
page's own link, upload it back, and upload a ``.txt`` (whose content is even a
valid CSV) to see it refused by type.
"""

from __future__ import annotations

import pytest

from app.layout.page import EXAMPLE_FILE

from .conftest import REPO

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    expect = None

pytestmark = pytest.mark.browser


def test_conventions_and_example_download_then_upload(page, ui, screenshot, tmp_path):
    ui.open()
    conventions = page.locator("#upload-conventions")
    summary = conventions.locator("summary")
    # Closed at first: one line under the drop zone, so the controls do not move down.
    expect(conventions).not_to_have_attribute("open", "")
    expect(summary).to_have_text("Which columns? · example file")
    assert conventions.bounding_box()["height"] < 2.5 * summary.bounding_box()["height"]
    link = page.locator("#example-download")
    expect(link).to_be_hidden()

    summary.click()
    expect(conventions).to_have_attribute("open", "")
    for words in ("label", "p_<class>", "logit_<class>", "score", "model", "Parquet", "NPZ"):
        expect(conventions.locator("ul")).to_contain_text(words)
    expect(link).to_be_visible()
    screenshot("conventions-open")

    with page.expect_download() as info:
        link.click()
    download = info.value
    assert download.suggested_filename == EXAMPLE_FILE
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    assert saved.read_bytes() == (REPO / "assets" / EXAMPLE_FILE).read_bytes()

    ui.upload(saved)
    expect(ui.upload_lines("ok")).to_have_text(f"{EXAMPLE_FILE}: loaded sharp, cautious.")
    expect(ui.upload_lines("error")).to_have_count(0)
    expect(ui.model_checkbox("sharp (24 × 3)")).to_be_attached()
    expect(ui.model_checkbox("cautious (24 × 3)")).to_be_attached()
    ui.wait_fit_idle()


def test_a_txt_file_is_an_unsupported_file_type(page, ui, screenshot, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("label,p_a,p_b\na,0.5,0.5\nb,0.25,0.75\n")
    ui.open()
    ui.upload(notes)
    error = ui.upload_lines("error")
    expect(error).to_have_count(1)
    expect(error).to_contain_text("notes.txt")
    expect(error).to_contain_text(
        "unsupported file type '.txt'; upload CSV, TSV (optionally .gz), Parquet or NPZ"
    )
    expect(error).not_to_contain_text("label column")
    expect(ui.upload_lines("ok")).to_have_count(0)
    expect(page.locator("#model-select")).not_to_contain_text("notes")
    screenshot("upload-unsupported-type")
