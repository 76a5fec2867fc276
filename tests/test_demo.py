"""`make demo` end to end, in its tiny configuration: data, three models, bundles, grading, the report."""

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from labs.common.files import read_csv
from tests.conftest import REPO_ROOT, run_cli


@pytest.fixture
def out_in_the_kit():
    """A demo folder inside the kit's runs/, where `make demo` writes (runs/demo): the grader there refuses a
    kit that holds a hidden set or a secret, so the demo must keep them elsewhere."""
    out = REPO_ROOT / "runs" / f"test-demo-{os.getpid()}"
    yield out
    shutil.rmtree(out, ignore_errors=True)


def test_tiny_demo_writes_the_report_and_grades_all_three_models(out_in_the_kit, tmp_path):
    out = out_in_the_kit
    before = set(Path(tempfile.gettempdir()).glob("attention-lab-demo-grading-*"))
    result = run_cli("demo", "--tiny", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert not [p for p in out.rglob("manifest.json") if "hidden-set" in p.read_text(encoding="utf-8")]
    assert (
        not list(out.rglob("secret*"))
        and set(Path(tempfile.gettempdir()).glob("attention-lab-demo-grading-*")) == before
    )  # the secret and hidden sets lived outside, and are gone
    for step in ("[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]", "Done in"):
        assert step in result.stdout
    report = (out / "report.md").read_text(encoding="utf-8")
    for title in ("Lab 1: date generation", "Lab 2: date translation", "Homework 3.1"):
        assert f"## {title}" in report
    assert report.count("status graded") == 3
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["tiny"] is True and summary["seconds"] > 0
    assert list(summary["labs"]) == ["date-generation", "date-translation", "name-transliteration"]
    for task, lab in summary["labs"].items():
        gradebook = read_csv(out / "grading" / task / "grades" / "gradebook.csv")
        assert lab["status"] == "graded" and lab["training_seconds"] > 0
        assert [(float(row["score"]), row["student"]) for row in gradebook] == [
            (lab["score"], "reference"),
            (lab["score"], "reference-copy"),
        ]
        assert lab["flagged_pairs"] == [["reference", "reference-copy"]]
        results = json.loads(
            (out / "grading" / task / "grades" / "results" / "reference.json").read_text(encoding="utf-8")
        )
        assert results["tests"][0]["score"] == 10  # the reference architecture earns its points
        assert (out / lab["class_report"]).is_file() and lab["class_report"] in report
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") >= 7  # 3 training curves and 4 heatmaps
    # lab 2 and the homework: an explorer per heatmap and a beam search view; their assets once, the font inside
    assert html.count("<div class='al-explorer'>") == 4 and html.count("<div class='al-beam'>") == 2
    assert html.count("<script>") == 1 and html.count("@font-face") <= 1
    # the samples' Thai (in <code>, monospace) is written in the font the page carries, not left to the system
    assert "code{font-family:AttentionLabThai,monospace}" in html
    assert "http://" not in html and "https://" not in html  # offline: nothing to fetch
    assert (
        "@media print{.live>p,.live .al-explorer{display:none}}" in html
        and html.count("<figure class='still'>") == 4
    )
    (tmp_path / "notes.txt").write_text("a folder of the user's own")
    again = run_cli("demo", "--tiny", "--out", str(tmp_path))  # not empty, not a demo folder
    assert again.returncode == 2 and "was not written by a demo" in again.stderr
