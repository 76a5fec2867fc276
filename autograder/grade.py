"""Grade bundles: validate, run in the sandbox, score with the rubric; one bundle or a whole folder.

Every bundle ends with a status and a message, whatever it holds:

    graded            scored on the hidden set
    malformed         not a bundle (missing files, bad JSON, not a Keras 3 model, ...)
    unsafe            path traversal, links, zip bombs
    too-large         over the rubric's size limit
    wrong-task        meta.json names another task
    disallowed        the model config names a class or module outside the allow-list
    load-failed       Keras could not load it (or its custom_layers.py failed)
    wrong-signature   it does not take the task's inputs or give its outputs
    nan-output        it outputs NaN or infinite probabilities
    timeout           over the rubric's time limit
    out-of-memory     over the rubric's memory limit
    crashed, error    anything else, with the last line of the error

A bundle that cannot be run still gets the architecture points its config earns (partial credit).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.allowlist import check_config
from autograder.bundle import BundleError, open_bundle
from autograder.rubric import Rubric
from autograder.sandbox import isolation_available, run_child
from autograder.scoring import architecture_line, compute_metrics, metric_lines

MAX_OUTPUT_LENGTH = {"date-translation": 11, "name-transliteration": 64}
EXAMPLES = 4   # public dev examples shown in each student's feedback


@dataclass
class HiddenSet:
    folder: Path
    inputs: list[dict]
    targets: list[dict]
    manifest: dict


def student_id_for(path: Path) -> str:
    """A safe, readable id from a bundle's file or folder name (never from inside the bundle)."""
    name = path.name[:-4] if path.name.lower().endswith(".zip") else path.name
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).strip("._")[:64] or "student"


def bundle_digest(path: Path) -> str:
    """SHA-256 of a zip, or of a folder's bundle files (names and contents): what "the same bundle" means."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file() and not p.is_symlink())
    for file in files:
        digest.update(file.name.encode() + b"\0")
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def find_bundle(entry: Path) -> Path | None:
    """The bundle inside one student's entry: the entry itself, or (Gradescope's export layout) the
    one zip or bundle folder inside the student's submission folder."""
    if entry.is_file() or entry.is_symlink() or (entry / "model.keras").exists():
        return entry
    inner = [p for p in entry.iterdir() if not p.name.startswith(".")] if entry.is_dir() else []
    zips = [p for p in inner if p.suffix.lower() == ".zip" and p.is_file()]
    folders = [p for p in inner if p.is_dir() and (p / "model.keras").exists()]
    if len(zips) + len(folders) == 1:
        return (zips + folders)[0]
    return entry if inner else None


def _job(rubric: Rubric, hidden: HiddenSet, examples: list[str], allow_custom: bool) -> dict:
    task, grading = rubric.task, rubric.grading
    job = {"task": task, "allow_custom_layers": allow_custom}
    if task == "date-generation":
        return {**job, "samples": int(grading.get("samples", 2000)), "seed": 0, "max_length": 14,
                "score_texts": [row["source"] for row in hidden.inputs[:int(grading.get("score_texts", 2000))]]}
    return {**job, "sources": [row["source"] for row in hidden.inputs], "beam": int(grading.get("beam", 1)),
            "batch_size": int(grading.get("batch_size", 2000)), "max_length": MAX_OUTPUT_LENGTH[task],
            "examples": examples}


def _outputs_fit(task: str, data: dict, hidden: HiddenSet) -> bool:
    """The child's JSON has the shape the scorer reads (a hostile child could send anything)."""
    def strings(values):
        return isinstance(values, list) and all(isinstance(v, str) for v in values)

    if task == "date-generation":
        return strings(data.get("samples")) and isinstance(data.get("next_token_probabilities"), list)
    outputs = data.get("outputs")
    return isinstance(outputs, list) and len(outputs) == len(hidden.inputs) and all(strings(o) for o in outputs)


def grade_bundle(path: Path, rubric: Rubric, hidden: HiddenSet, *, examples: list[dict] = (),
                 hide: list[Path] = ()) -> dict:
    """Grade one bundle; never raises for anything the bundle holds. Returns the full result record."""
    record = {"student": student_id_for(path), "bundle": path.name, "task": rubric.task,
              "bundle_sha256": bundle_digest(path) if path.exists() else "", "status": "graded", "message": "",
              "hidden_set": {"size": hidden.manifest.get("size"), "sha256": hidden.manifest.get("sha256", {}),
                             "secret_fingerprint": hidden.manifest.get("secret_fingerprint")},
              "rubric": rubric.path, "isolation": isolation_available(), "metrics": {}, "examples": [],
              "sandbox_seconds": None}
    classes, parameters, metrics = set(), None, None
    with tempfile.TemporaryDirectory(prefix="attention-lab-bundle-") as work:
        try:
            bundle = open_bundle(path, Path(work), max_bytes=int(rubric.bundle_mb * 1_000_000))
            if bundle.meta.get("task") != rubric.task:
                raise BundleError("wrong-task", f"meta.json says task {bundle.meta.get('task')!r}; this assignment "
                                                f"is {rubric.task!r}")
            allowed_custom = bool(rubric.custom_layers) and bundle.has_custom_layers
            verdict = check_config(bundle.model_config, allowed_custom=rubric.custom_layers,
                                   custom_layers_present=allowed_custom)
            classes = verdict.classes
            if not verdict.allowed:
                raise BundleError("disallowed", verdict.message)
            files = {name: bundle.folder / name for name in ("model.keras", "vocab.json")}
            if allowed_custom:
                files["custom_layers.py"] = bundle.folder / "custom_layers.py"
            job = _job(rubric, hidden, [e["source"] for e in examples], allowed_custom)
            outcome = run_child(files, job, rubric.limits, hide=list(hide))
            record["sandbox_seconds"] = round(outcome.seconds, 2)
            if outcome.status != "ok":
                raise BundleError(outcome.status, outcome.message)
            if not _outputs_fit(rubric.task, outcome.data, hidden):
                raise BundleError("error", "the grading process returned outputs of the wrong shape")
            parameters = outcome.data.get("parameters")
            record["child_seconds"] = outcome.data.get("seconds")   # the child's own load and predict time
            metrics = compute_metrics(rubric.task, outcome.data, hidden.targets)
            record["examples"] = _with_expected(outcome.data.get("examples", []), examples)
        except BundleError as error:
            record["status"], record["message"] = error.status, error.message
    lines = [architecture_line(rubric, classes, parameters if isinstance(parameters, int) else None),
             *metric_lines(rubric, metrics)]
    record["metrics"] = metrics or {}
    record["parameters"] = parameters
    record["lines"] = [line.to_dict() for line in lines]
    record["score"] = round(sum(line.points for line in lines), 2)
    record["max_score"] = rubric.max_score
    return record


def missing_bundle(name: str, rubric: Rubric, hidden: HiddenSet, message: str) -> dict:
    """The record of a submission that holds no bundle at all: malformed, scored 0."""
    record = grade_bundle(Path("/nonexistent") / name, rubric, hidden)   # refused before anything runs
    record.update(status="malformed", message=message, bundle=name, bundle_sha256="")
    return record


def _with_expected(returned: list, examples: list[dict]) -> list[dict]:
    """The child's example outputs beside the expected ones (which never went into the sandbox)."""
    merged = []
    for item, example in zip(returned if isinstance(returned, list) else [], examples):
        if isinstance(item, dict) and isinstance(item.get("output"), str):
            merged.append({"source": example["source"], "expected": example["target"],
                           "accepted": example.get("accepted", [example["target"]]), "output": item["output"],
                           "attention": item.get("attention")})
    return merged


def public_examples(task: str, n: int = EXAMPLES) -> list[dict]:
    """A few rows of the public dev split, shown (with heatmaps) in every student's feedback."""
    if task == "date-generation":
        return []
    from labs.common.files import read_csv
    from labs.common.paths import DATASETS_DIR

    folder = "date-pairs" if task == "date-translation" else "thai-names"
    rows = read_csv(DATASETS_DIR / folder / "dev.csv")
    picked = rows[:n] if task == "date-translation" else \
        [r for r in rows if r["stratum"] == "seen"][:n // 2] + [r for r in rows if r["stratum"] == "unseen"][:n - n // 2]
    return [{"source": r["source"], "target": r["target"],
             "accepted": [r["target"], *[a for a in r.get("alternatives", "").split("|") if a]]} for r in picked]


def cached_result(results_dir: Path, student: str, digest: str, hidden: HiddenSet, rubric_digest: str) -> dict | None:
    """A previous result for the same bundle, hidden set and rubric, if there is one (for resuming)."""
    path = results_dir / f"{student}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8")).get("extra_data", {}).get("attention_lab", {})
    except (OSError, ValueError, AttributeError):
        return None
    same = (record.get("bundle_sha256") == digest and record.get("hidden_set", {}).get("sha256") ==
            hidden.manifest.get("sha256") and record.get("rubric_sha256") == rubric_digest)
    return record if same else None
