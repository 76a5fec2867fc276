"""``make demo``: the whole kit, end to end, in one command.

1. Build the public datasets and check them byte for byte against the shipped ones.
2. Train the three reference models in a demo configuration (on the GPU when there is one).
3. Export each as a submission bundle, as a student would.
4. Grade the bundles with the autograder against freshly drawn hidden sets (a new secret each run).
5. Write ``runs/demo/report.html`` and ``report.md``: metrics per lab, samples, attention heatmaps,
   training curves and the gradebook; and ``summary.json``, the times and grades for scripts.

The demo configurations are smaller than the defaults (so that all of it fits in 15 minutes on a
2-core CPU); the figures the README reports come from the benchmarks' default configurations.
"""

from __future__ import annotations

import base64
import filecmp
import html
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from labs.common.errors import InputError
from labs.common.files import read_csv, write_json, write_text
from labs.common.paths import DATASETS_DIR, REPO_ROOT

DEMO_DIR = REPO_ROOT / "runs" / "demo"
TASK_TITLES = {"date-generation": "Lab 1: date generation", "date-translation": "Lab 2: date translation with attention",
               "name-transliteration": "Homework 3.1: Thai names with key-value attention"}


@dataclass
class LabResult:
    task: str
    seconds: float
    lines: list[str]                                           # metrics, one per line
    images: dict[str, Path] = field(default_factory=dict)      # caption -> PNG
    samples: list[str] = field(default_factory=list)


def _configs(tiny: bool) -> dict:
    from labs.date_generation.config import DateGenerationConfig
    from labs.date_translation.config import DateTranslationConfig
    from labs.name_transliteration.config import NameTransliterationConfig

    if tiny:
        return {"date-generation": DateGenerationConfig.tiny(), "date-translation": DateTranslationConfig.tiny(),
                "name-transliteration": NameTransliterationConfig.tiny()}
    return {"date-generation": DateGenerationConfig(train_size=100_000, epochs=4),
            "date-translation": DateTranslationConfig(train_size=30_000, epochs=4),
            "name-transliteration": NameTransliterationConfig(train_size=40_000, epochs=4)}


def _datasets(out: Path, log) -> None:
    from labs.public_datasets import build

    (out / "datasets").mkdir(parents=True, exist_ok=True)
    written = build(out / "datasets", log=lambda line: log("  " + line))
    different = [p for p in written if not filecmp.cmp(p, DATASETS_DIR / p.relative_to(out / "datasets"), shallow=False)]
    log(f"  {len(written)} dataset files built; " + (f"{len(different)} differ from the shipped ones (another babel "
        "version?); the shipped files stay the reference" if different else "all byte-identical to the shipped ones"))


def _lab1(config, out: Path, tiny: bool) -> tuple[LabResult, object, dict]:
    from labs.date_generation.evaluate import evaluate
    from labs.date_generation.train import train

    run = train(config, out_dir=out / "date-generation", verbose=2)
    report = evaluate(run.model, run.vocab, config, n=2000, training_dates=[], held_out=2000)
    lines = [f"validity {report['validity']:.2%}, uniqueness {report['uniqueness']:.2%} (2,000 samples at t = 1.0)",
             f"held-out cross-entropy {report['heldout_bits_per_token']:.4f} bits/token "
             f"(bound {report['entropy_bound_bits_per_token']:.4f})"]
    result = LabResult("date-generation", run.seconds, lines, {"training curve": out / "date-generation" / "training_curve.png"},
                       report["examples"])
    return result, run.model, {"target": run.vocab}


def _heatmaps(results, folder: Path, prefix: str) -> dict[str, Path]:
    import matplotlib.pyplot as plt

    from labs.common.plots import plot_attention

    images = {}
    for i, result in enumerate(results):
        path = folder / f"{prefix}-{i + 1}.png"
        plt.close(plot_attention(result.source, result.output, result.attention, path=path))
        images[f"attention: {result.source} → {result.output}"] = path
    return images


def _lab2(config, out: Path, tiny: bool) -> tuple[LabResult, object, dict]:
    from labs.date_translation import evaluate
    from labs.date_translation.train import train
    from labs.date_translation.translate import translate

    run = train(config, out_dir=out / "date-translation", verbose=2)
    test = read_csv(DATASETS_DIR / "date-pairs" / "test.csv")[:200 if tiny else 2000]
    table = evaluate.results_table(test, [t.output for t in translate(run.model, run.vocabs, [r["source"] for r in test])])
    lines = evaluate.format_summary(evaluate.summary(table), "attention model").splitlines()
    examples = translate(run.model, run.vocabs, ["Saturday, 27 January 2018", "๒๗ ม.ค. ๒๕๖๑"])
    images = {"training curve": out / "date-translation" / "training_curve.png",
              **_heatmaps(examples, out / "date-translation", "attention")}
    samples = [f"{t.source} → {t.output}" for t in examples]
    return LabResult("date-translation", run.seconds, lines, images, samples), run.model, run.vocabs


def _homework(config, out: Path, tiny: bool) -> tuple[LabResult, object, dict]:
    from labs.name_transliteration import evaluate
    from labs.name_transliteration.train import train
    from labs.name_transliteration.transliterate import transliterate

    run = train(config, out_dir=out / "name-transliteration", verbose=2)
    test = read_csv(DATASETS_DIR / "thai-names" / "test.csv")
    test = test[:100] + test[-100:] if tiny else test   # both strata
    results = transliterate(run.model, run.vocabs, [r["source"] for r in test], beam=3)
    lines = evaluate.format_summary(evaluate.summary(evaluate.results_table(test, [r.alternatives for r in results]))).splitlines()
    examples = transliterate(run.model, run.vocabs, ["สมชาย ใจดี", "ปวีณา รัตนพงศ์"])
    images = {"training curve": out / "name-transliteration" / "training_curve.png",
              **_heatmaps(examples, out / "name-transliteration", "attention")}
    samples = [f"{t.source} → {t.output}" for t in examples]
    return LabResult("name-transliteration", run.seconds, lines, images, samples), run.model, run.vocabs


def _grade(task: str, model, vocabs: dict, out: Path, secret: Path, tiny: bool) -> list[dict]:
    from autograder.batch import grade_folder
    from autograder.hidden import make_hidden_set
    from autograder.rubric import load_rubric
    from labs.common.submission import export

    folder = out / "grading" / task
    export(model, vocabs, task=task, student_id="reference", out=folder / "submissions" / "reference.zip")
    make_hidden_set(task, secret, folder / "hidden", n=200 if tiny else None)
    return grade_folder(folder / "submissions", load_rubric(task=task), folder / "hidden", folder / "grades",
                        progress=False)


def _image_tag(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f"<img alt='{html.escape(path.name)}' src='data:image/png;base64,{data}'>"


def _write_report(out: Path, labs: list[LabResult], grades: dict[str, list[dict]], seconds: float, device: str) -> None:
    md = ["# Attention Lab demo", "", f"Ran on the {device} in {seconds / 60:.1f} minutes (demo configurations).", ""]
    page = [f"<h1>Attention Lab demo</h1><p>Ran on the {html.escape(device)} in {seconds / 60:.1f} minutes "
            "(demo configurations).</p>"]
    for lab in labs:
        md += [f"## {TASK_TITLES[lab.task]}", "", f"Trained in {lab.seconds:.0f} s.", ""] + [f"- {line.strip()}" for line in lab.lines]
        page.append(f"<h2>{html.escape(TASK_TITLES[lab.task])}</h2><p>Trained in {lab.seconds:.0f} s.</p><ul>"
                    + "".join(f"<li>{html.escape(line.strip())}</li>" for line in lab.lines) + "</ul>")
        if lab.samples:
            md += ["", "Samples: " + ", ".join(f"`{s}`" for s in lab.samples)]
            page.append("<p>Samples: " + ", ".join(f"<code>{html.escape(s)}</code>" for s in lab.samples) + "</p>")
        for caption, path in lab.images.items():
            md += ["", f"![{caption}]({path.relative_to(out).as_posix()})"]
            page.append(f"<figure>{_image_tag(path)}<figcaption>{html.escape(caption)}</figcaption></figure>")
        for record in grades.get(lab.task, []):
            line = (f"Autograder (hidden set of {record['hidden_set']['size']:,}): {record['score']:g} / "
                    f"{record['max_score']:g}, status {record['status']}")
            details = "; ".join(f"{l['label']}: {l['points']:g}/{l['max_points']:g}" for l in record["lines"])
            md += ["", f"**{line}** ({details}). Gradebook: `grading/{lab.task}/grades/gradebook.csv`", ""]
            page.append(f"<p><strong>{html.escape(line)}</strong> ({html.escape(details)})</p>")
    write_text(out / "report.md", "\n".join(md) + "\n")
    write_text(out / "report.html", "<!doctype html><html><head><meta charset='utf-8'><title>Attention Lab demo</title>"
               "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}img{max-width:100%}</style>"
               "</head><body>" + "".join(page) + "</body></html>\n")


def run(tiny: bool = False, out: Path = DEMO_DIR, log=print) -> Path:
    """Run the demo into ``out`` (replaced); returns the report's path."""
    from labs.common.training import device_description

    started = time.perf_counter()
    marker = out / ".attention-lab-demo"
    if out.exists() and any(out.iterdir()):
        if not marker.is_file():
            raise InputError(f"{str(out)!r} is not empty and was not written by a demo; choose another --out")
        shutil.rmtree(out)   # the previous demo's folder
    out.mkdir(parents=True, exist_ok=True)
    marker.write_text("written by `python -m labs demo`; the next demo replaces this folder\n")
    device = device_description()
    log(f"Attention Lab demo on the {device}{' (tiny configuration)' if tiny else ''}; writing {out}")
    log("[1/5] building the public datasets")
    _datasets(out, log)
    configs, labs, models = _configs(tiny), [], {}
    for step, (task, lab) in enumerate((("date-generation", _lab1), ("date-translation", _lab2),
                                        ("name-transliteration", _homework)), start=2):
        log(f"[{step}/5] {TASK_TITLES[task]}: training and evaluating ...")
        result, model, vocabs = lab(configs[task], out, tiny)
        labs.append(result)
        models[task] = (model, vocabs)
        log(f"  trained in {result.seconds:.0f} s; " + result.lines[0].strip())
    log("[5/5] exporting the three models as bundles and grading them against fresh hidden sets")
    secret = out / "grading" / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text(secrets.token_hex(32))
    grades = {task: _grade(task, model, vocabs, out, secret, tiny) for task, (model, vocabs) in models.items()}
    for task, records in grades.items():
        log(f"  {task}: {records[0]['score']:g} / {records[0]['max_score']:g} ({records[0]['status']})")
    seconds = time.perf_counter() - started
    _write_report(out, labs, grades, seconds, device)
    summary = {lab.task: {"training_seconds": round(lab.seconds, 1), "metric": lab.lines[0].strip(),
                          **{key: grades[lab.task][0][key] for key in ("score", "max_score", "status")}} for lab in labs}
    write_json(out / "summary.json", {"seconds": round(seconds, 1), "device": device, "tiny": tiny, "labs": summary})
    log(f"Done in {seconds / 60:.1f} minutes. Report: {out / 'report.html'} (and report.md)")
    return out / "report.html"
