"""The class report (``GRADES/class-report.html``): one self-contained page an instructor opens in any
browser.

The browser tests open it in headless Chromium: on CI (``CI`` set) they must run; on a laptop
without the browser they skip and say so.
"""

import html
import json
import os
import re
import shutil
import stat
import subprocess

import pytest

from autograder.class_report import write_class_report
from autograder.rubric import load_rubric
from labs import tasks

HOSTILE = "<script>alert(1)</script>"
THAI = "สมชาย ใจดี"
THRESHOLDS = {"weight_similarity": 0.5, "shared_mistakes_z": 8.0}
NOTES = ["custom_layers.py uses os (line 4): worth a read", f"meta.json names student '\u202e{HOSTILE}'"]
STATUSES = ["graded"] * 9 + ["timeout", "load-failed", "malformed", "timeout"]


def fabricated_class(rubric) -> list[dict]:
    """Thirteen records in the grader's shape for ``rubric``: nine graded, four not, one with a hostile bundle
    name."""
    records = []
    for k, status in enumerate(STATUSES):
        graded = status == "graded"
        lines = [
            {
                "name": "architecture",
                "label": "required architecture",
                "value": 50_000.0,
                "points": rubric.architecture_points,
                "max_points": rubric.architecture_points,
            }
        ]
        for m, metric in enumerate(rubric.metrics):
            cuts = [t for t, _ in metric.thresholds]
            low, high = min(cuts), max(cuts)
            value = low + (high - low) * ((k * (3 + m)) % 10) / 9 if graded else None
            lines.append(
                {
                    "name": metric.name,
                    "label": metric.label,
                    "value": value,
                    "points": metric.points_for(value) if graded else 0.0,
                    "max_points": metric.points,
                }
            )
        records.append(
            {
                "student": f"s{k:03d}",
                "bundle": HOSTILE + ".zip" if k == 2 else f"s{k:03d}.zip",
                "task": rubric.task,
                "status": status,
                "message": "" if graded else f"{status}: {HOSTILE}",
                "score": sum(line["points"] for line in lines) if graded else 0.0,
                "max_score": rubric.max_score,
                "lines": lines,
                "metrics": {line["name"]: line["value"] for line in lines[1:]} if graded else {},
                "sandbox_seconds": None if status == "malformed" else 2.0 + (5 * k % 13) * 1.5,
                "peak_memory_mb": None if status == "malformed" else 300 + (7 * k % 13) * 20,
                "bundle_bytes": None if status == "malformed" else 400_000 + (3 * k % 13) * 37_000,
                "notes": NOTES if k == 3 else [],
                "lms": {"lms": "canvas", "name": THAI.replace(" ", "")} if k == 3 else {},
            }
        )
    return records


def fabricated_pairs(flag: bool = True) -> list[dict]:
    """Pairs as model similarity writes them: one copied pair (flagged, with Thai examples) when ``flag``."""
    pairs = []
    for k in range(12):
        pairs.append(
            {
                "student_a": f"s{k:03d}",
                "student_b": f"s{k + 1:03d}",
                "architecture": "same" if k % 3 else "different",
                "identical_weights": False,
                "weight_similarity": (k % 5) / 40 - 0.05 if k % 3 else None,
                "matrices_compared": 6 if k % 3 else 0,
                "shared_mistakes": k % 4,
                "expected_shared_mistakes": 1.5,
                "shared_mistakes_z": (k % 7) / 3 - 1,
                "flagged": False,
                "why": "",
                "examples": [],
            }
        )
    if flag:
        pairs.append(
            {
                "student_a": "s000",
                "student_b": "s005",
                "architecture": "same",
                "identical_weights": True,
                "weight_similarity": 1.0,
                "matrices_compared": 6,
                "shared_mistakes": 41,
                "expected_shared_mistakes": 2.2,
                "shared_mistakes_z": float("inf"),
                "flagged": True,
                "why": f"identical weights; 41 identical wrong answers {HOSTILE}",
                "examples": [
                    {"source": THAI, "output": "somchay chaidi"},
                    {"source": "ก" * 3, "output": HOSTILE},
                ],
            }
        )
    return pairs


@pytest.fixture(scope="module")
def homework():
    return load_rubric(task="name-transliteration")


@pytest.fixture(scope="module")
def report(tmp_path_factory, homework):
    out = tmp_path_factory.mktemp("grades")
    return write_class_report(fabricated_class(homework), homework, out, fabricated_pairs(), THRESHOLDS)


def test_the_report_is_one_file_with_nothing_outside_it(report):
    assert report.name == "class-report.html" and report.is_file()
    # its shared wrong answers show hidden inputs: the instructor's alone, whatever the grades folder's mode
    assert stat.S_IMODE(report.stat().st_mode) == 0o600
    page = report.read_text(encoding="utf-8")
    for external in ('src="http', "src='http", "url(http", "<script", "<link", "<iframe", "@import"):
        assert external not in page.lower()
    images = re.findall(r"<img [^>]*src='([^']*)'", page)
    assert len(images) >= 5 and all(src.startswith("data:image/png;base64,") for src in images)
    assert page.count("@font-face") == 1 and "data:font/ttf;base64," in page


def test_the_report_stays_small(report):
    assert report.stat().st_size < 600_000  # thirteen students' plots and one weight of one Thai font


def test_it_shows_the_class_at_a_glance(report, homework):
    page = report.read_text(encoding="utf-8")
    assert html.escape(homework.title) in page and "13 submissions, 9 graded" in page
    for heading in (
        "Scores",
        "Rubric metrics",
        "Statuses",
        "Slowest and largest bundles",
        "Model similarity",
    ):
        assert f"<h2>{heading}</h2>" in page
    assert all(metric.name in page for metric in homework.metrics)
    assert re.search(r"<td>timeout</td><td class='n'>2</td>", page)
    assert "Mean <b>" in page and "median <b>" in page


def test_text_from_students_is_escaped(report):
    page = report.read_text(encoding="utf-8")
    assert HOSTILE not in page
    assert html.escape(HOSTILE) in page


def test_the_instructors_notes_are_listed_with_their_student_and_escaped(report, tmp_path, homework):
    page = report.read_text(encoding="utf-8")
    section = page[page.index("<h2>Notes for the instructor</h2>") :]
    section = section[: section.index("<h2>", 5)]
    assert (
        "1 submission with something to read" in section and "<td>s003 (สมชายใจดี)</td>" in section
    )  # LMS name
    assert html.escape(NOTES[0]) in section
    assert "&lt;U+202E&gt;" + html.escape(HOSTILE) in section and "\u202e" not in page
    quiet = [dict(record, notes=[]) for record in fabricated_class(homework)]
    page = write_class_report(quiet, homework, tmp_path, [], THRESHOLDS).read_text(encoding="utf-8")
    assert "Notes for the instructor" not in page


def test_flagged_pairs_are_shown_with_why_and_their_shared_mistakes(report):
    page = report.read_text(encoding="utf-8")
    assert "13 pairs of models compared; <b>1 flagged</b>" in page
    assert "s000<br>s005" in page and "identical weights; 41 identical wrong answers" in page
    assert THAI in page and "somchay chaidi" in page
    assert "No flagged pair" not in page


def test_a_class_without_flagged_pairs_is_told_so(tmp_path, homework):
    page = write_class_report(
        fabricated_class(homework), homework, tmp_path, fabricated_pairs(flag=False), THRESHOLDS
    ).read_text(encoding="utf-8")
    assert "No flagged pair" in page and "<b>0 flagged</b>" in page


def test_the_scatter_is_drawn_only_for_a_task_that_names_two_metrics(tmp_path, homework):
    assert tasks.get("name-transliteration").class_scatter == ("accuracy_seen", "accuracy_unseen")
    homework_page = write_class_report(fabricated_class(homework), homework, tmp_path, [], THRESHOLDS)
    assert "id='per-student'" in homework_page.read_text(encoding="utf-8")
    lab2 = load_rubric(task="date-translation")
    assert tasks.get("date-translation").class_scatter is None
    lab2_page = write_class_report(fabricated_class(lab2), lab2, tmp_path, [], THRESHOLDS)
    assert "id='per-student'" not in lab2_page.read_text(encoding="utf-8")


def test_students_at_the_same_point_of_the_scatter_share_one_label(tmp_path, homework, monkeypatch):
    from matplotlib.axes import Axes

    labels, annotate = [], Axes.annotate
    monkeypatch.setattr(
        Axes,
        "annotate",
        lambda self, text, *args, **kwargs: labels.append(text) or annotate(self, text, *args, **kwargs),
    )
    records = fabricated_class(homework)
    copy = {**next(r for r in records if r["status"] == "graded"), "student": "s000-copy"}
    write_class_report([*records, copy], homework, tmp_path, [], THRESHOLDS)
    assert "s000, s000-copy" in labels and "s000" not in labels and "s000-copy" not in labels


def test_every_class_scatter_names_metrics_of_its_task():
    for task in tasks.all_tasks():
        if task.class_scatter:
            assert len(task.class_scatter) == 2 and set(task.class_scatter) <= set(task.metric_names), (
                task.name
            )


def test_the_same_batch_gives_the_same_bytes(tmp_path, homework, report):
    again = write_class_report(fabricated_class(homework), homework, tmp_path, fabricated_pairs(), THRESHOLDS)
    assert again.read_bytes() == report.read_bytes()


def test_an_empty_batch_still_gives_a_page(tmp_path, homework):
    page = write_class_report([], homework, tmp_path, [], THRESHOLDS).read_text(encoding="utf-8")
    assert "0 submissions" in page and "No submission was graded" in page and "No flagged pair" in page


# --- in a real browser -----------------------------------------------------------------------------


def chromium() -> str:
    """The Chromium binary; the test fails on CI without one, and skips elsewhere."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(
            "CI must open the class report in a browser, and no chromium was found: "
            "`apt-get install chromium` (make test does it when run as root)"
        )
    pytest.skip(
        "no chromium on this machine, so the class report is not opened in a browser "
        "(sudo apt install chromium to run this test)"
    )


def run_chromium(tmp_path, *args: str) -> str:
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_chromium_renders_the_report(tmp_path, report):
    from PIL import Image

    picture = tmp_path / "class-report.png"
    run_chromium(tmp_path, f"--screenshot={picture}", "--window-size=1200,4000", report.as_uri())
    assert picture.is_file()
    gray = Image.open(picture).convert("L")
    dark = sum(gray.histogram()[:200])  # pixels of text, bars and plots, not the white page
    assert gray.size == (1200, 4000) and dark > 0.02 * gray.size[0] * gray.size[1]
    if os.environ.get("CLASS_REPORT_PNG"):  # to look at it: CLASS_REPORT_PNG=/tmp/class-report.png pytest ...
        shutil.copy(picture, os.environ["CLASS_REPORT_PNG"])


# Runs in the page once its fonts are loaded: every image decoded, and each Thai character of the
# page drawn with the page's font in other pixels than a character no font has (the .notdef box).
CHECK = """<script>
document.fonts.ready.then(async () => {
  const family = getComputedStyle(document.body).fontFamily;
  const thai = [...new Set([...document.body.innerText].filter(c => c >= '\\u0e00' && c <= '\\u0e7f'))];
  await document.fonts.load('40px ' + family, thai.join(''));
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 80;
  const context = canvas.getContext('2d', {willReadFrequently: true});
  const pixels = c => {
    context.clearRect(0, 0, 80, 80);
    context.font = '40px ' + family;
    context.fillText(c, 20, 55);
    return context.getImageData(0, 0, 80, 80).data.join(',');
  };
  const box = pixels('\\u0378');
  const verdict = {family, thai: thai.join(''), images: document.images.length,
                   broken: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt),
                   boxes: thai.filter(c => pixels(c) === box), latin_is_box: pixels('A') === box};
  const out = document.createElement('pre');
  out.id = 'verdict';
  out.textContent = JSON.stringify(verdict);
  document.body.appendChild(out);
});
</script>"""


def test_in_chromium_no_image_is_broken_and_thai_shows_as_letters(tmp_path, report):
    copy = tmp_path / "class-report.html"
    copy.write_text(
        report.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), encoding="utf-8"
    )
    dom = run_chromium(
        tmp_path, "--virtual-time-budget=10000", "--allow-file-access-from-files", "--dump-dom", copy.as_uri()
    )
    found = re.search(r"<pre id=\"verdict\">(.*?)</pre>", dom, re.S)
    assert found, "the page's check wrote no verdict: " + dom[-500:]
    verdict = json.loads(html.unescape(found.group(1)))
    assert verdict["images"] >= 5 and verdict["broken"] == []
    assert not verdict["latin_is_box"]  # the comparison can tell a letter from the box
    assert set(THAI.replace(" ", "")) <= set(verdict["thai"])
    assert verdict["boxes"] == [], f"Thai characters drawn as boxes with font-family {verdict['family']}"
