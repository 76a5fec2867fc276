"""Colab's stack, checked here: does a student's one setup cell keep Colab's packages, and does the kit run on
them?

    .venv/bin/python benchmarks/colab_stack.py [--python python3.13] [--keep DIR]   # 5 to 20 minutes
                                                        # writes benchmarks/results/colab_stack.json

Colab's GPU runtime ships its own TensorFlow, Keras, numpy, pandas and matplotlib
(:data:`COLAB_PINS`, from googlecolab/backend-info) on Python 3.13. The notebooks' setup cell runs
``%pip install -r requirements.txt``; if that upgraded one of them, Colab would ask for a restart
(Keras) or break (TensorFlow). Four steps:

1. **Wheels for Colab's Python.** pip resolves ``requirements.txt`` with Colab's pins for CPython
   3.13 on Linux x86_64, wheels only (a dry run: it reads the indexes, installs nothing). Every
   package must have a wheel and the pins must stand. ``tests/test_colab_stack.py`` runs this step in CI.
2. **The install, as Colab does it.** A throwaway venv on this machine's Python gets Colab's
   pins (and nbclient + ipykernel, Colab's Jupyter), then ``pip install -r requirements.txt`` on
   top; the check fails if pip changed a pinned package, and lists every other package it changed.
3. **The notebooks on that stack.** Demos 1, 2 and 3 and the homework notebook run top to bottom in
   their tiny configuration (``ATTENTION_LAB_TINY=1``, as ``tests/test_notebooks.py`` runs them) in
   that venv, on a copy of the kit at HEAD (uncommitted changes are not measured), draw their attention
   explorers and beam search views (counted), and export their bundles there (demo 3 compares variants:
   nothing to hand in); every variant of lab 2 (``--attention ...``) and the homework model are
   built, run, viewed with their attention, decoded both ways, saved and loaded there too.
4. **Graded by the kit's grader.** This script's own interpreter (the kit's ``.venv``, with the
   grader's Keras floor) grades those bundles against throwaway hidden sets: saved under Colab's
   Keras, loaded under the grader's.

Steps 2 and 3 run on this interpreter's Python, or on ``--python`` (Colab's 3.13 where this
machine has it); the venv's Python is recorded. Step 1 checks 3.13's wheels either way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[1]
# Colab's GPU runtime, 2026-08-19 (googlecolab/backend-info): what it ships, and what a student's install must
# keep.
COLAB_PYTHON = "3.13"
COLAB_PINS = {
    "tensorflow": "2.20.0",
    "keras": "3.13.2",
    "numpy": "2.1.3",
    "pandas": "2.2.3",
    "matplotlib": "3.10.0",
}
COLAB_JUPYTER = ("nbclient", "ipykernel")  # Colab has its own; here they execute the notebooks
# Linux x86_64 wheel tags that Colab's glibc (Ubuntu 22.04, 2.35) accepts, newest last.
PLATFORMS = (
    "linux_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_34_x86_64",
    "manylinux_2_35_x86_64",
)
# name: (notebook, task, the bundle the notebook exports itself; the demos export none, so a cell is added
# that does)
NOTEBOOKS = {
    "demo1": ("demos/demo1_date_generation.ipynb", "date-generation", None),
    "demo2": ("demos/demo2_date_translation.ipynb", "date-translation", None),
    "homework": ("homework/hw3_1_thai_name_transliteration.ipynb", "name-transliteration", "submission.zip"),
    "demo3": ("demos/demo3_attention_variants.ipynb", None, None),  # compares variants: nothing to hand in
}
HIDDEN_ROWS = 500  # per throwaway hidden set: the bundles are tiny models


def pins() -> list[str]:
    return [f"{name}=={version}" for name, version in COLAB_PINS.items()]


def resolve_for_colab(
    requirements: Path = ROOT / "requirements.txt", python: str = sys.executable, timeout: int = 300
) -> dict:
    """Step 1: pip's resolution of ``requirements`` with Colab's pins, for CPython 3.13 on Linux x86_64,
    wheels only.

    Returns ``{"ok", "error", "packages": {name: version}, "wheels": {name: wheel file}, "pins_kept"}``.
    ``ok`` is False when pip finds no solution (a requirement that needs another version of a pin,
    or a package without a 3.13 wheel); ``error`` then holds pip's last lines.
    """
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [
            python,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            str(report),
            "--only-binary=:all:",
            "--python-version",
            COLAB_PYTHON,
            "--implementation",
            "cp",
            *[f"--platform={tag}" for tag in PLATFORMS],
            "-r",
            str(requirements),
            *pins(),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip() and "is ignored" not in line]
            return {
                "ok": False,
                "error": "\n".join(lines[-12:]),
                "packages": {},
                "wheels": {},
                "pins_kept": False,
            }
        installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    packages = {_name(item["metadata"]["name"]): item["metadata"]["version"] for item in installs}
    wheels = {
        _name(item["metadata"]["name"]): item["download_info"]["url"].rsplit("/", 1)[-1] for item in installs
    }
    kept = all(packages.get(name) == version for name, version in COLAB_PINS.items())
    return {
        "ok": kept and all(w.endswith(".whl") for w in wheels.values()),
        "error": "",
        "packages": packages,
        "wheels": wheels,
        "pins_kept": kept,
    }


def _name(name: str) -> str:
    return name.lower().replace("_", "-")


def _run(command: list, log: Path, **kwargs) -> subprocess.CompletedProcess:
    """Run ``command`` (niced: this machine's other work comes first), its output appended to ``log``."""
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"\n$ {' '.join(map(str, command))}\n")
        handle.flush()
        return subprocess.run(
            ["nice", "-n", "19", *map(str, command)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            text=True,
            **kwargs,
        )


def _installed(python: Path) -> dict[str, str]:
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {_name(p["name"]): p["version"] for p in json.loads(listed)}


def colab_venv(folder: Path, log: Path, base: str = sys.executable) -> tuple[Path, dict]:
    """Step 2: a venv (on the Python ``base``) with Colab's pins, then requirements.txt on top; its Python and
    what the install changed."""
    subprocess.run([base, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check"]
    started = time.perf_counter()
    if _run([*pip, *pins(), *COLAB_JUPYTER], log).returncode != 0:
        raise SystemExit(f"could not install Colab's pins into a venv; see {log}")
    colab_seconds = time.perf_counter() - started
    before = _installed(python)
    started = time.perf_counter()
    installed = _run([*pip, "-r", ROOT / "requirements.txt"], log).returncode == 0
    seconds = time.perf_counter() - started
    after = _installed(python)
    changed = {
        name: [version, after.get(name)] for name, version in before.items() if after.get(name) != version
    }
    return python, {
        "installed": installed,
        "colab_install_seconds": round(colab_seconds, 1),
        "requirements_install_seconds": round(seconds, 1),
        "pins": {name: after.get(name) for name in COLAB_PINS},
        "pins_changed": {name: change for name, change in changed.items() if name in COLAB_PINS},
        "other_changed": {name: change for name, change in changed.items() if name not in COLAB_PINS},
        "added": sorted(set(after) - set(before)),
    }


def kit_at_head(folder: Path) -> str:
    """A copy of the kit's committed tree (``git archive HEAD``) in ``folder``; returns the commit."""
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = folder.parent / "kit.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), "HEAD"], cwd=ROOT, check=True)
    folder.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    archive.unlink()
    return commit


# ---- run inside the Colab venv (this file, called with --inside) ----

EXPORT_CELL = """import json, sys
import keras, matplotlib, numpy, pandas, tensorflow
if {export}:
    from labs.common.submission import export
    export(run.model, run.vocabs, task=run.task, student_id="colab-stack", out={bundle!r}, device=run.device)
print("COLAB_STACK " + json.dumps({{"python": sys.version.split()[0], "tensorflow": tensorflow.__version__,
      "keras": keras.__version__, "numpy": numpy.__version__, "pandas": pandas.__version__,
      "matplotlib": matplotlib.__version__}}))"""


def run_notebook(path: Path, bundle: Path | None, exported: str | None) -> dict:
    """Execute one notebook (tiny), then a cell that reports the versions it ran on and exports its model to
    ``bundle`` (or takes the bundle the notebook ``exported`` itself, a file beside it; no bundle: none).
    Counts the attention explorers and beam search views it showed."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(
        nbformat.v4.new_code_cell(EXPORT_CELL.format(export=bundle and exported is None, bundle=str(bundle)))
    )
    started = time.perf_counter()
    try:
        NotebookClient(
            notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
        error = ""
    except Exception as failure:  # a cell's error: record it, go on with the next notebook
        error = f"{type(failure).__name__}: {str(failure).strip().splitlines()[-1][:300]}"
    seconds = time.perf_counter() - started
    printed = "\n".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    versions = next(
        (
            json.loads(line.split(" ", 1)[1])
            for line in printed.splitlines()
            if line.startswith("COLAB_STACK ")
        ),
        None,
    )
    if exported is not None and (path.parent / exported).is_file():
        shutil.move(path.parent / exported, bundle)
    shown = "".join(
        output.get("data", {}).get("text/html", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    return {
        "ran": not error,
        "error": error,
        "seconds": round(seconds, 1),
        "kernel_versions": versions,
        "bundle": bool(bundle) and bundle.is_file(),
        "views": {view: shown.count(f"<div class='{view}'>") for view in ("al-explorer", "al-beam")},
    }


def probe_models() -> dict:
    """Every lab 2 variant and the homework model on this Keras: build, run, attention view, decode both ways,
    save, load, the explorer's views (heads included)."""
    import keras
    import numpy as np

    from labs import tasks
    from labs.common.decoding import translate_texts
    from labs.common.explorer import attended, attention_explorer, beam_search_view
    from labs.common.pipeline import translation_arrays
    from labs.common.seq2seq import attention_model, stepper
    from labs.date_translation import model as lab2
    from labs.date_translation.config import ATTENTIONS, DateTranslationConfig
    from labs.date_translation.data import vocabularies as lab2_vocabularies
    from labs.name_transliteration import model as homework
    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.data import vocabularies as homework_vocabularies

    def probe(build, vocabs, texts, targets, steps) -> str:
        """ "ok", or the stage that failed and why."""
        stage = "build"
        try:
            keras.utils.set_random_seed(0)
            model = build()
            pairs = [{"source": s, "target": t} for s, t in zip(texts, targets)]
            source, target_in, _ = translation_arrays(pairs, vocabs)
            stage = "run"
            model([source, target_in])  # the layers have run: Keras 3.13's trap is set
            stage = "save and load"
            with tempfile.TemporaryDirectory() as folder:
                model.save(Path(folder) / "model.keras")
                loaded = keras.models.load_model(
                    Path(folder) / "model.keras", safe_mode=True
                )  # the homework's layer is registered
            for stage, subject in (("the model after running", model), ("the loaded model", loaded)):
                _, weights = attention_model(subject, steps=steps)([source, target_in])
                if not np.allclose(np.asarray(weights).sum(-1), 1.0, atol=1e-4):
                    return f"{stage}: attention weights do not sum to 1"
                step = translate_texts(texts, vocabs, stepper(subject, steps=steps), max_length=steps)
                rerun = stepper(subject, steps=steps, step_decoding=False)
                full = translate_texts(texts, vocabs, rerun, max_length=steps)
                if [t.output for t in step] != [t.output for t in full]:
                    return f"{stage}: the step decoder and the full re-run disagree"
                # the explorer's views (the notebooks show them): each head's weights average to the decoder's
                shown = attended(subject, vocabs, step[0], steps=steps)
                if shown.heads is not None and not np.allclose(
                    shown.heads.mean(0), step[0].attention, atol=1e-4
                ):
                    return f"{stage}: the explorer's heads do not average to the attention"
                views = (
                    attention_explorer(shown).html
                    + beam_search_view(subject, vocabs, texts[0], steps=steps).html
                )
                if "al-explorer" not in views or "al-hyp" not in views:
                    return f"{stage}: the explorer's views came out empty"
            return "ok"
        except Exception as failure:
            return f"{stage}: {type(failure).__name__}: {str(failure).strip().splitlines()[0][:200]}"

    results = {}
    vocabs = lab2_vocabularies()
    texts, targets = ["27 January 2018", "๒๗ ม.ค. ๖๑", "1/27/18"], ["2018-01-27"] * 3
    for attention in ATTENTIONS:
        if attention == "none":
            continue  # no weights to view; it decodes in the notebooks' baseline
        config = DateTranslationConfig.tiny(attention=attention)
        results[f"lab 2 --attention {attention}"] = probe(
            lambda: lab2.build_model(config, len(vocabs["source"]), len(vocabs["target"])),
            vocabs,
            texts,
            targets,
            tasks.get("date-translation").max_output_length,
        )
    names = homework_vocabularies()
    config = NameTransliterationConfig.tiny()
    results["homework (KeyValueAttention)"] = probe(
        lambda: homework.build_model(config, len(names["source"]), len(names["target"])),
        names,
        ["สมชาย", "ใจดี"],
        ["somchai", "jaidee"],
        tasks.get("name-transliteration").max_output_length,
    )
    return results


def inside(kit: Path, bundles: Path, out: Path) -> None:
    """What runs in the Colab venv, in the kit's copy: the notebooks, then the model probes; results to
    ``out``."""
    os.environ.update(ATTENTION_LAB_TINY="1", MPLBACKEND="Agg")
    sys.path.insert(0, str(kit))
    os.chdir(kit)
    notebooks = {
        name: run_notebook(kit / path, bundles / f"{name}.zip" if task else None, exported)
        for name, (path, task, exported) in NOTEBOOKS.items()
    }
    out.write_text(json.dumps({"notebooks": notebooks, "models": probe_models()}, indent=2), encoding="utf-8")


# ---- back in the kit's own environment ----


def grade_bundles(bundles: Path, scratch: Path) -> dict:
    """Step 4: each bundle graded by this interpreter's grader against a throwaway hidden set."""
    import keras

    from autograder.batch import grade_folder
    from autograder.hidden import make_hidden_set
    from autograder.keras_floor import check_keras
    from autograder.rubric import load_rubric

    check_keras()
    secret = scratch / "secret.txt"
    secret.write_text(os.urandom(16).hex())
    grades = {"grader_keras": keras.__version__}
    for name, (_, task, _) in NOTEBOOKS.items():
        bundle = bundles / f"{name}.zip"
        if task is None:
            continue  # a notebook with nothing to hand in
        if not bundle.is_file():
            grades[name] = {"status": "no bundle", "score": 0.0, "max_score": None, "message": ""}
            continue
        folder = scratch / "grading" / name
        (folder / "submissions").mkdir(parents=True)
        shutil.copy(bundle, folder / "submissions" / bundle.name)
        make_hidden_set(task, secret, folder / "hidden", n=HIDDEN_ROWS)
        [record] = grade_folder(
            folder / "submissions", load_rubric(task=task), folder / "hidden", folder / "out", progress=False
        )
        grades[name] = {
            "task": task,
            "status": record["status"],
            "score": record["score"],
            "max_score": record["max_score"],
            "message": record.get("message", ""),
        }
    return grades


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the Python to build the Colab venv on (default: this one; Colab's is 3.13)",
    )
    parser.add_argument(
        "--keep", default=None, help="keep the venv, the kit's copy and the bundles in this new folder"
    )
    parser.add_argument("--inside", nargs=3, metavar=("KIT", "BUNDLES", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        inside(*map(Path, args.inside))
        return
    sys.path.insert(0, str(ROOT))  # the grader: this checkout's, in this interpreter (not in the Colab venv)
    from results_file import write_results

    started = time.perf_counter()
    print(
        f"1. resolving requirements.txt with Colab's pins for CPython {COLAB_PYTHON}, Linux x86_64, wheels "
        f"only ..."
    )
    wheels = resolve_for_colab()
    print(
        f"   {'ok' if wheels['ok'] else 'FAILED'}: {len(wheels['packages'])} packages"
        + (f"\n{wheels['error']}" if wheels["error"] else "")
    )

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="colab-stack-"))
    work.mkdir(parents=True, exist_ok=True)
    log = work / "pip.log"
    try:
        print(f"2. a venv with Colab's pins, then requirements.txt on top (log: {log}) ...")
        python, install = colab_venv(work / "venv", log, args.python)
        venv_python = subprocess.run(
            [python, "-c", "import platform; print(platform.python_version())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        print(
            f"   pinned packages changed: {install['pins_changed'] or 'none'}; others changed: "
            f"{install['other_changed'] or 'none'}"
        )
        print("3. the notebooks (tiny) and every model in that venv ...")
        kit, bundles = work / "kit", work / "bundles"
        commit = kit_at_head(kit)
        bundles.mkdir()
        inside_out = work / "inside.json"
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        env.update(PATH=f"{python.parent}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(kit))
        ran = _run(
            [python, Path(__file__).resolve(), "--inside", kit, bundles, inside_out],
            work / "inside.log",
            env=env,
            cwd=kit,
            timeout=3600,
        )
        inside_result = (
            json.loads(inside_out.read_text(encoding="utf-8"))
            if inside_out.is_file()
            else {
                "notebooks": {},
                "models": {},
                "error": f"exit status {ran.returncode}; see {work / 'inside.log'}",
            }
        )
        for name, result in inside_result["notebooks"].items():
            print(
                f"   {name}: {'ran' if result['ran'] else 'FAILED ' + result['error']} in "
                f"{result['seconds']:.0f} s"
            )
        for name, verdict in inside_result["models"].items():
            print(f"   {name}: {verdict}")
        print(f"4. grading the bundles with this environment's grader ({sys.executable}) ...")
        grades = grade_bundles(bundles, work)
        for name in (name for name, (_, task, _) in NOTEBOOKS.items() if task):
            g = grades[name]
            print(f"   {name}: {g['status']} {g['score']:g} / {g['max_score']}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    checks = {
        "python_313_wheels_and_pins": wheels["ok"],
        "install_keeps_colab_pins": install["installed"] and not install["pins_changed"],
        "notebooks_ran_on_colab_pins": len(inside_result["notebooks"]) == len(NOTEBOOKS)
        and all(
            r["ran"]
            and r["kernel_versions"]
            and all(r["kernel_versions"][k] == v for k, v in COLAB_PINS.items())
            for r in inside_result["notebooks"].values()
        ),
        "models_on_colab_keras": bool(inside_result["models"])
        and all(v == "ok" for v in inside_result["models"].values()),
        "bundles_graded": all(
            grades[name]["status"] == "graded" for name, (_, t, _) in NOTEBOOKS.items() if t
        ),
        # the notebooks that explore attention drew their explorers (tests/test_notebooks.py counts them)
        "views_shown": all(
            n.get("views", {}).get("al-explorer", 0) >= (name != "demo1")
            for name, n in inside_result["notebooks"].items()
        ),
    }
    checks["passed"] = all(checks.values())
    report = {
        "colab_pins": COLAB_PINS,
        "python_313": wheels,
        "install": install,
        "venv_python": venv_python,
        "grader_python": platform.python_version(),
        "kit_commit": commit,
        "probes_explorer": True,  # probe_models draws each model's explorer and beam search view
        **inside_result,
        "grades": grades,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_results(
        "colab_stack",
        {"colab_python": COLAB_PYTHON, "hidden_rows": HIDDEN_ROWS, "tiny": True},
        report,
        checks,
        "CPU",
        command="python benchmarks/colab_stack.py"
        + (f" --python python{venv_python.rsplit('.', 1)[0]}" if args.python != sys.executable else ""),
    )
    print("passed" if checks["passed"] else f"FAILED: {', '.join(k for k, v in checks.items() if not v)}")
    if not checks["passed"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
