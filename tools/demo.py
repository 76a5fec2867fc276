"""``make demo``: the whole kit, end to end, in one command.

1. Build the public datasets and check them byte for byte against the shipped ones.
2. Train the three reference models in a demo configuration (on the GPU when there is one).
3. Export each as a submission bundle, as a student would.
4. Grade the bundles with the autograder against freshly drawn hidden sets (a new secret each run,
   kept with the hidden sets in a temporary folder outside the kit, as the README asks of an
   instructor: the grader refuses to run while the kit's folder holds them), each beside a copy of itself
   under another id (``reference-copy``), so that the class report
   (``grading/TASK/grades/class-report.html``) shows a pair that model similarity flags.
5. Write ``runs/demo/report.html`` and ``report.md``: metrics per lab, samples, attention heatmaps,
   training curves and the gradebook; the page (one file, offline) also has attention explorers and a
   beam search view (:mod:`labs.common.explorer`), and prints the still heatmaps in their place; and
   ``summary.json``, the times and grades for scripts.

The demo configurations are smaller than the defaults (so that all of it fits in 15 minutes on a 2-core CPU);
the figures the README reports come from the benchmarks' default configurations."""

from __future__ import annotations

import filecmp
import html
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from labs import tasks
from labs.common.errors import InputError
from labs.common.files import write_json, write_text
from labs.common.paths import DATASETS_DIR, REPO_ROOT

DEMO_DIR = REPO_ROOT / "runs" / "demo"
JOBS = min(2, os.cpu_count() or 1)  # bundles graded at once (the grader's children run on the CPU)


@dataclass
class LabResult:
    task: str
    title: str
    seconds: float
    lines: list[str]  # metrics, one per line
    images: dict[str, Path] = field(default_factory=dict)  # caption -> PNG
    samples: list[str] = field(default_factory=list)
    views: list[str] = field(default_factory=list)  # the attention explorers and a beam search view (HTML)


def _datasets(out: Path, log) -> None:
    from tools.public_datasets import build

    (out / "datasets").mkdir(parents=True, exist_ok=True)
    written = build(out / "datasets", log=lambda line: log("  " + line))
    different = [
        p
        for p in written
        if not filecmp.cmp(p, DATASETS_DIR / p.relative_to(out / "datasets"), shallow=False)
    ]
    log(
        f"  {len(written)} dataset files built; "
        + (
            f"{len(different)} differ from the shipped ones (another babel "
            "version?); the shipped files stay the reference"
            if different
            else "all byte-identical to the shipped ones"
        )
    )


def _lab(task: tasks.Task, out: Path, tiny: bool):
    """Train ``task``'s reference model in the demo configuration and show what its ``showcase`` shows."""
    import matplotlib.pyplot as plt

    from labs.common.plots import plot_attention

    config = task.config.tiny() if tiny else task.config.demo()
    run = task.train(config, out_dir=out / task.name, verbose=2)
    shown = task.showcase(run, tiny)
    images = {"training curve": out / task.name / "training_curve.png"}
    for i, translation in enumerate(shown.translations, start=1):
        path = out / task.name / f"attention-{i}.png"
        plt.close(plot_attention(translation.source, translation.output, translation.attention, path=path))
        images[f"attention: {translation.source} → {translation.output}"] = path
    samples = shown.samples + [f"{t.source} → {t.output}" for t in shown.translations]
    return LabResult(
        task.name, task.title, run.seconds, shown.lines, images, samples, _views(task, run, shown)
    ), run


def _views(task: tasks.Task, run, shown) -> list[str]:
    """A translation lab's views for the report: an attention explorer per example, beam search on one."""
    from labs.common.explorer import attended, attention_explorer, beam_search_view

    steps = task.max_output_length
    views = [
        attention_explorer(attended(run.model, run.vocabs, t, steps=steps)).body
        for t in shown.translations
        if t.attention is not None
    ]
    if shown.translations:
        views.append(beam_search_view(run.model, run.vocabs, shown.translations[0].source, steps=steps).body)
    return views


def _grade(task: str, run, out: Path, secret: Path, tiny: bool) -> dict:
    """Grade the reference bundle and a copy of it under another id: the reference's record, the flagged
    pairs. The hidden set is drawn beside ``secret``, outside the kit."""
    from autograder.batch import grade_folder
    from autograder.hidden import make_hidden_set
    from autograder.rubric import load_rubric
    from labs.common.files import read_csv
    from labs.common.submission import export

    folder = out / "grading" / task
    bundle = export(
        run.model, run.vocabs, task=task, student_id="reference", out=folder / "submissions" / "reference.zip"
    )
    shutil.copyfile(
        bundle, folder / "submissions" / "reference-copy.zip"
    )  # a student who hands in a friend's model
    hidden = secret.parent / task
    make_hidden_set(task, secret, hidden, n=200 if tiny else None)
    records = grade_folder(  # both bundles at once, each on its share of the cores, as the README grades
        folder / "submissions", load_rubric(task=task), hidden, folder / "grades", progress=False, jobs=JOBS
    )
    flagged = [row for row in read_csv(folder / "grades" / "similarity.csv") if row["flagged"] == "yes"]
    return {
        "record": next(r for r in records if r["student"] == "reference"),
        "flagged": flagged,
        "class_report": folder / "grades" / "class-report.html",
    }


def _image_tag(path: Path) -> str:
    from labs.common.plots import png_img

    return png_img(path.read_bytes(), path.name)


def _write_report(
    out: Path, labs: list[LabResult], grades: dict[str, dict], seconds: float, device: str
) -> None:
    from labs.common.explorer import FONT_FAMILY, assets

    md = [
        "# Attention Lab demo",
        "",
        f"Ran on the {device} in {seconds / 60:.1f} minutes (demo configurations).",
        "",
    ]
    page = [
        f"<h1>Attention Lab demo</h1><p>Ran on the {html.escape(device)} in {seconds / 60:.1f} minutes "
        "(demo configurations).</p>"
    ]
    for lab in labs:
        md += [f"## {lab.title}", "", f"Trained in {lab.seconds:.0f} s.", ""] + [
            f"- {line.strip()}" for line in lab.lines
        ]
        page.append(
            f"<h2>{html.escape(lab.title)}</h2><p>Trained in {lab.seconds:.0f} s.</p><ul>"
            + "".join(f"<li>{html.escape(line.strip())}</li>" for line in lab.lines)
            + "</ul>"
        )
        if lab.samples:
            md += ["", "Samples: " + ", ".join(f"`{s}`" for s in lab.samples)]
            page.append(
                "<p>Samples: " + ", ".join(f"<code>{html.escape(s)}</code>" for s in lab.samples) + "</p>"
            )
        for caption, path in lab.images.items():
            md += ["", f"![{caption}]({path.relative_to(out).as_posix()})"]
            still = " class='still'" if caption.startswith("attention:") and lab.views else ""
            page.append(
                f"<figure{still}>{_image_tag(path)}<figcaption>{html.escape(caption)}</figcaption></figure>"
            )
        if lab.views:
            page.append(
                "<div class='live'><p>Point at (or tap) a character to see the attention behind it; beam "
                "search, step by step (printed, the page shows the still heatmaps instead).</p>"
                + "".join(lab.views)
                + "</div>"
            )
        if lab.task in grades:
            record, report = (
                grades[lab.task]["record"],
                grades[lab.task]["class_report"].relative_to(out).as_posix(),
            )
            line = (
                f"Autograder (hidden set of {record['hidden_set']['size']:,}): {record['score']:g} / "
                f"{record['max_score']:g}, status {record['status']}"
            )
            details = "; ".join(f"{l['label']}: {l['points']:g}/{l['max_points']:g}" for l in record["lines"])
            similar = "; ".join(
                f"{p['student_a']} and {p['student_b']}: {p['why']}" for p in grades[lab.task]["flagged"]
            )
            similar = f"Model similarity flags {similar}." if similar else "Model similarity flags no pair."
            md += [
                "",
                f"**{line}** ({details}). Gradebook: `grading/{lab.task}/grades/gradebook.csv`; class "
                f"report: "
                f"[{report}]({report}). {similar}",
                "",
            ]
            page.append(
                f"<p><strong>{html.escape(line)}</strong> ({html.escape(details)})</p><p>Class report: "
                f"<a href='{html.escape(report)}'>{html.escape(report)}</a>. {html.escape(similar)}</p>"
            )
    write_text(out / "report.md", "\n".join(md) + "\n")
    write_text(
        out / "report.html",
        "<!doctype html><html><head><meta charset='utf-8'><title>Attention Lab demo</title>"
        # the Thai font the views carry (assets) writes the report's Thai too (samples of lab 2)
        f"<style>body{{font-family:{FONT_FAMILY},sans-serif;max-width:60em;margin:2em auto}}"
        f"code{{font-family:{FONT_FAMILY},monospace}}"
        "img{max-width:100%}"
        # on screen the explorers, on paper the still heatmaps (and the beam search, a table)
        "@media screen{figure.still{display:none}}"
        "@media print{.live>p,.live .al-explorer{display:none}}</style>"
        "</head><body>"
        + "".join(page)
        + (assets() if any(lab.views for lab in labs) else "")
        + "</body></html>\n",
    )


def run(tiny: bool = False, out: Path = DEMO_DIR, log=print) -> Path:
    """Run the demo into ``out`` (replaced); returns the report's path."""
    from labs.common.training import device_description

    started = time.perf_counter()
    marker = out / ".attention-lab-demo"
    if out.exists() and any(out.iterdir()):
        if not marker.is_file():
            raise InputError(f"{str(out)!r} is not empty and was not written by a demo; choose another --out")
        shutil.rmtree(out)  # the previous demo's folder
    out.mkdir(parents=True, exist_ok=True)
    marker.write_text("written by `python -m labs demo`; the next demo replaces this folder\n")
    device = device_description()
    log(f"Attention Lab demo on the {device}{' (tiny configuration)' if tiny else ''}; writing {out}")
    every = tasks.all_tasks()
    steps = len(every) + 2
    log(f"[1/{steps}] building the public datasets")
    _datasets(out, log)
    labs, runs = [], {}
    for step, task in enumerate(every, start=2):
        log(f"[{step}/{steps}] {task.title}: training and evaluating ...")
        result, runs[task.name] = _lab(task, out, tiny)
        labs.append(result)
        log(f"  trained in {result.seconds:.0f} s; " + result.lines[0].strip())
    log(f"[{steps}/{steps}] exporting the models as bundles and grading them against fresh hidden sets")
    with tempfile.TemporaryDirectory(prefix="attention-lab-demo-grading-") as private:  # outside the kit
        secret = Path(private) / "secret.txt"
        secret.write_text(secrets.token_hex(32))
        grades = {task: _grade(task, run, out, secret, tiny) for task, run in runs.items()}
    for task, graded in grades.items():
        record = graded["record"]
        log(
            f"  {task}: {record['score']:g} / {record['max_score']:g} ({record['status']}); model similarity "
            f"flags "
            + (", ".join(f"{p['student_a']} and {p['student_b']}" for p in graded["flagged"]) or "no pair")
            + f"; class report: {graded['class_report']}"
        )
    seconds = time.perf_counter() - started
    _write_report(out, labs, grades, seconds, device)
    summary = {
        lab.task: {
            "training_seconds": round(lab.seconds, 1),
            "metric": lab.lines[0].strip(),
            **{key: grades[lab.task]["record"][key] for key in ("score", "max_score", "status")},
            "hidden_set_metrics": grades[lab.task]["record"]["metrics"],
            "flagged_pairs": [[p["student_a"], p["student_b"]] for p in grades[lab.task]["flagged"]],
            "class_report": grades[lab.task]["class_report"].relative_to(out).as_posix(),
        }
        for lab in labs
    }
    write_json(
        out / "summary.json", {"seconds": round(seconds, 1), "device": device, "tiny": tiny, "labs": summary}
    )
    log(f"Done in {seconds / 60:.1f} minutes. Report: {out / 'report.html'} (and report.md)")
    return out / "report.html"
