"""Fill the README's results table from benchmarks/results/*.json, so that it reports only what was measured.

    python benchmarks/readme_table.py           # rewrites the block between the README's results markers

Each row names the benchmark's date, machine and the command that reproduces it. A benchmark
whose JSON is missing gets a row saying which command to run; a target its benchmark missed says so
(**missed**, with the check's name).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
START, END = "<!-- results:start -->", "<!-- results:end -->"
EXPERIMENTS = "<!-- experiments:start -->", "<!-- experiments:end -->"


def _load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def _lab1(r: dict) -> list[tuple[str, str, str]]:
    m = r["report"]
    return [
        ("lab 1: training time", f"{m['training_seconds']:.0f} s", "≤ 180 s"),
        (
            "lab 1: validity / uniqueness (10,000 samples, t = 1.0)",
            f"{_pct(m['validity'])} / {_pct(m['uniqueness'])}",
            "≥ 99.5 % / ≥ 95 %",
        ),
        (
            "lab 1: held-out cross-entropy vs. the entropy bound",
            f"{m['heldout_bits_per_token']:.4f} vs {m['entropy_bound_bits_per_token']:.4f} bits/token "
            f"({m['heldout_over_bound']:+.2%})",
            "within 5 %",
        ),
        (
            "lab 1: TV distance year / month / day (100,000 samples)",
            f"{m['tv_year_100k']:.3f} / {m['tv_month_100k']:.3f} / {m['tv_day_100k']:.3f} (a perfect "
            f"sampler: "
            f"{m['tv_year_100k_perfect_sampler']:.3f} / {m['tv_month_100k_perfect_sampler']:.3f} / "
            f"{m['tv_day_100k_perfect_sampler']:.3f})",
            "≤ 0.05",
        ),
    ]


def _epochs(config: dict) -> str:
    """``3 epochs of 60,000 pairs``: the budget a training time is for (defaults change)."""
    return f"{config['epochs']} epochs of {config['train_size']:,} pairs"


def _lab2(r: dict) -> list[tuple]:
    m = r["report"]
    d = m["decoding"]
    rows = [
        (
            "lab 2: training time, attention model",
            f"{m['attention']['training_seconds']:.0f} s ({_epochs(r['config'])})",
            "≤ 300 s",
            ("training_at_most_5_minutes",),
        ),
        (
            "lab 2: exact match, 10,000 held-out pairs, all 40 formats",
            f"{_pct(m['attention']['exact_match'])}; beam 4: {_pct(d['beam4_exact_match'])}",
            "≥ 99.9 %",
        ),
        (
            "lab 2: baseline without attention, same size and budget",
            f"{_pct(m['baseline']['exact_match'])} (attention {_pct(m['attention']['exact_match'])})",
            "reported",
        ),
        (
            "lab 2: both at 16 units (`DateTranslationConfig.small()`)",
            f"attention {_pct(m['small_attention']['exact_match'])}, baseline "
            f"{_pct(m['small_baseline']['exact_match'])}",
            "reported",
        ),
        (
            "decoding 10,000 inputs greedily: step decoder vs. full re-run per prefix",
            f"{d['step_greedy_seconds']:.2f} s vs {d['full_rerun_greedy_seconds']:.2f} s: "
            f"{d['speedup']:.1f}x, "
            f"identical outputs: {d['identical_outputs']}",
            "≥ 5x",
        ),
    ]
    if "full_rerun_beam4_seconds" in d:
        rows.append(
            (
                "decoding with beam 4: step decoder vs. full re-run per prefix",
                f"{d['step_beam4_seconds']:.1f} s vs {d['full_rerun_beam4_seconds']:.1f} s: "
                f"{d['beam4_speedup']:.1f}x, "
                f"identical outputs: {d['beam4_identical_outputs']}",
                "reported",
            )
        )
    return rows


def _classic(r: dict) -> list[tuple[str, str, str]]:
    m = r["report"]

    def reached(side: dict, target: str) -> str:
        """Seconds to ``target``, and the ratio to the kit's (a lower bound when it never got there)."""
        seconds, kit = side["seconds_to"][target], m["kit"]["seconds_to"][target]
        if seconds is not None:
            return f"{seconds:.0f} s" + (
                f" ({seconds / kit:.1f}x the kit's time)" if kit and side is not m["kit"] else ""
            )
        spent = side["epochs"][-1]["training_seconds"]
        best = _pct(max(e["exact_match"] for e in side["epochs"]))
        return f"not reached in {spent:.0f} s (best {best}" + (
            f"; > {spent / kit:.1f}x the kit's time)" if kit else ")"
        )

    rows = []
    for target, label in (("0.990", "99 %"), ("0.999", "99.9 %")):
        classics = [
            (name.removeprefix("classic_").replace("_", " "), side)
            for name, side in m.items()
            if name.startswith("classic") and isinstance(side, dict) and "seconds_to" in side
        ]
        cells = "; ".join(
            f"classic architecture ({name}): {reached(side, target)}" for name, side in classics
        )
        rows.append(
            (
                f"lab 2 vs. the classic course architecture: training time to {label} exact match (2,000 "
                f"held-out pairs)",
                f"kit {reached(m['kit'], target)}; {cells}",
                "reported",
            )
        )
    return rows


def _variants(r: dict) -> list[tuple[str, str, str]]:
    m = r["report"]
    small = {row["attention"]: row for row in m["small"]}
    rows = []
    for row in m["default"]:
        steps = row.get("ms_per_step_by_source_length", {})
        cost = ", ".join(f"{length}: {ms:.2f}" for length, ms in steps.items())
        layers = r["config"]["layers"]
        size = (
            f"d = {r['config']['model_dim']}, {layers} layer{'s' if layers > 1 else ''} each side"
            if row["attention"] == "transformer"
            else f"{r['config']['units']} units"
        )
        rows.append(
            (
                f"lab 2 attention variant `{row['attention']}` ({size}, make demo's budget): parameters, "
                f"training time, exact match "
                f"(10,000 held-out pairs; at 16 units); decoding 10,000 greedy / beam 4; ms per output step "
                f"by source length",
                f"{row['parameters']:,}; {row['training_seconds']:.0f} s; {_pct(row['exact_match'])} "
                f"({_pct(small[row['attention']]['exact_match'])}); {row['greedy_seconds']:.1f} s / "
                f"{row['beam4_seconds']:.1f} s; {cost}",
                "reported",
            )
        )
    return rows


def _names(r: dict) -> list[tuple]:
    m = r["report"]
    seen, unseen = m["beam3"]["per_stratum"]["seen"], m["beam3"]["per_stratum"]["unseen"]
    before = m.get("against")
    beside = (
        f" ({before['training_seconds']:.0f} s for the default at {before['commit']}, "
        f"measured the same hour here: "
        f"ratio {before['time_ratio']:.2f})"
        if before
        else ""
    )
    rows = [
        (
            "homework: training time, reference model",
            f"{m['training_seconds']:.0f} s{beside}",
            "≤ 600 s, and ≤ the default before" if before else "≤ 600 s",
            ("training_at_most_10_minutes", "training_no_longer_than_before"),
        ),
        (
            "homework: accuracy (any accepted spelling), seen / unseen words, beam 3",
            f"{_pct(seen['accuracy'])} / {_pct(unseen['accuracy'])}"
            + (
                f" (at {before['commit']}: {_pct(before['seen'])} / {_pct(before['unseen'])})"
                if before
                else ""
            ),
            "≥ 99 % / ≥ 93 %",
            ("seen_accuracy_at_least_99", "unseen_accuracy_at_least_93"),
        ),
        (
            "homework: character error rate, seen / unseen",
            f"{_pct(seen['cer'])} / {_pct(unseen['cer'])}",
            "≤ 1 % / ≤ 4 %",
            ("seen_cer_at_most_1", "unseen_cer_at_most_4"),
        ),
        (
            "homework: top-3 accuracy and MRR, seen / unseen",
            f"{_pct(seen['top_3_accuracy'])} / {_pct(unseen['top_3_accuracy'])}; MRR {seen['mrr']:.3f} / "
            f"{unseen['mrr']:.3f}",
            "reported",
        ),
        (
            "homework: decoding speed (step decoder)",
            f"greedy {m['names_per_second']['greedy']:,.0f} names/s, beam 3 "
            f"{m['names_per_second']['beam3']:,.0f} names/s",
            "reported",
        ),
    ]
    for engine, result in m.get("pythainlp", {}).items():
        s = result["summary"]["per_stratum"]
        role = (
            "neural; the data's spellings were made from it"
            if engine == "thai2rom_onnx"
            else "rule-based RTGS"
        )
        rows.append(
            (
                f"homework: pythainlp `{engine}` ({role}) on the same names, seen / unseen",
                f"accuracy {_pct(s['seen']['accuracy'])} / {_pct(s['unseen']['accuracy'])}, CER "
                f"{_pct(s['seen']['cer'])} / {_pct(s['unseen']['cer'])}, {result['names_per_second']:,.0f} "
                f"names/s "
                f"(the model, greedy: {m['names_per_second']['greedy'] / result['names_per_second']:.1f}x "
                f"that)",
                "reported",
            )
        )
    return rows


def _gpu(r: dict) -> list[tuple[str, str, str]]:
    """Each task's default configuration trained on a GPU (Keras on JAX: see the README), CPU time beside."""
    m = r["report"]
    labs = {"date-generation": "lab 1", "date-translation": "lab 2", "name-transliteration": "homework"}
    rows = []
    for name, t in m["tasks"].items():
        first, rest, cpu = t["epoch_seconds"][0], t["epoch_seconds"][1:] or [0.0], t["cpu"]
        scores = t["scores"]
        unpadded = (
            f", {t['shapes_unpadded']} before padding"
            if t.get("shapes_unpadded", t["shapes"]) != t["shapes"]
            else ""
        )
        if "validity" in scores:
            quality = f"validity {_pct(scores['validity'])}"
        elif "exact_match" in scores:
            quality = f"exact match {_pct(scores['exact_match'])}"
        else:
            quality = (
                f"seen / unseen {_pct(scores['seen_accuracy'])} / {_pct(scores['unseen_accuracy'])}, beam 3"
            )
        rows.append(
            (
                f"{labs.get(name, name)} on a GPU: training time, default configuration of the day "
                f"({len(t['epoch_seconds'])} epochs)",
                f"{t['training_seconds']:.0f} s (first epoch {first:.0f} s, later ones {min(rest):.1f}-"
                f"{max(rest):.1f} s; XLA compiles the step for each of {t['shapes']} training batch shapes "
                f"as it meets them{unpadded}), against {cpu['training_seconds']:.0f} s on the CPU "
                f"({cpu['date']}); {quality}",
                "reported",
            )
        )
    return rows


def _autograder(r: dict) -> list[tuple]:
    m = r["report"]
    one, two = m["jobs"]["1"], m["jobs"]["2"]
    previous = (
        f"; the run before: {m['previous_seconds_with_2_jobs']:.0f} s "
        f"({m['ratio_to_previous_with_2_jobs']:.2f}x)"
        if m.get("previous_seconds_with_2_jobs")
        else ""
    )
    isolation = f", isolation: {m['isolation']}" if isinstance(m.get("isolation"), str) else ""
    memory = (
        f"; peak memory of the child's processes {two['peak_memory_mb_median']:.0f} MB"
        if "peak_memory_mb_median" in two
        else ""
    )
    return [
        (
            f"autograder: {m['bundles']} lab-2 bundles, {m['hidden_pairs']:,}-pair hidden set{isolation}",
            f"--jobs 1: {one['seconds']:.0f} s ({one['bundles_per_minute']:.1f}/min); --jobs 2: "
            f"{two['seconds']:.0f} s "
            f"({two['bundles_per_minute']:.1f}/min): {one['seconds'] / two['seconds']:.1f}x{previous}",
            "≤ 300 s with --jobs 2",
            ("50_bundles_within_5_minutes_with_2_jobs", "within_25_percent_of_the_previous_run_with_2_jobs"),
        ),
        (
            "autograder: per bundle, sandbox wall time = model work + overhead",
            f"{two['sandbox_seconds_median']:.1f} s = {two['child_work_seconds_median']:.1f} s + "
            f"{two['sandbox_overhead_seconds_median']:.1f} s (median, --jobs 2){memory}",
            "reported",
        ),
        *(
            [
                (
                    "autograder: what model similarity adds to the batch (--jobs 2)",
                    f"{s['added_seconds']:.1f} s = {_pct(s['share_of_grading'])} (comparing "
                    f"{s['flagged_pairs']:,} pairs "
                    f"and the class report: {s['compare_and_report_seconds']:.1f} s; reading the weights' "
                    f"values: "
                    f"{1000 * s['weights_extra_seconds_per_bundle']:.0f} ms more per bundle)",
                    "≤ 10 %",
                )
            ]
            if (s := m.get("similarity"))
            else []
        ),
    ]


def _scoring(r: dict) -> list[tuple]:
    m = r["report"]
    seconds, before = m["cpu_seconds"], m.get("against")
    was = (
        f" (at {before['commit']}: {before['seconds']['never-ending']:.1f} s and "
        f"{before['seconds']['right']:.1f} s)"
        if before
        else ""
    )
    return [
        (
            f"autograder: scoring a homework bundle's outputs ({m['names']:,} names, {m['beams']} beams)",
            f"{seconds['never-ending']:.2f} s of CPU for a model that never ends its names (64 letters "
            f"each), {seconds['right']:.2f} s for the right spellings{was}",
            f"≤ a tenth of the rubric's {m['budget_seconds']:.0f} s",
            ("longest_outputs_within_a_tenth_of_the_budget",),
        )
    ]


def _similarity(r: dict) -> list[tuple[str, str, str]]:
    m = r["report"]
    t, d = m["thresholds"], m["distilled_copy"]
    pairs = m["pairs"]
    independent = [p for p in pairs if p["kind"].startswith("independent")]
    copies = [
        p for p in pairs if p["kind"] in ("copy trained further", "distilled copy (other architecture)")
    ]
    return [
        (
            "model similarity: weight similarity, independently seeded lab-2 models vs. a copy trained 1 or "
            "3 more "
            "epochs",
            f"at most {m['largest_independent_weight_similarity']:.3f} vs. at least "
            f"{m['smallest_copy_weight_similarity']:.3f}",
            f"flagged at ≥ {t['weight_similarity']}",
        ),
        (
            "model similarity: shared mistakes, independent pairs (both architectures) vs. a copy distilled "
            "into "
            "another architecture",
            f"z at most {m['largest_independent_z']:.1f} vs. {d['shared_mistakes']} shared "
            f"wrong answers where {d['expected_shared_mistakes']:.1f} were expected, z "
            f"{d['shared_mistakes_z']:.1f}",
            f"flagged at ≥ {t['shared_mistakes_z']:g}",
        ),
        (
            "model similarity: pairs flagged",
            f"{sum(p['flagged'] for p in copies)} of {len(copies)} copies; "
            f"{sum(p['flagged'] for p in independent)} of {len(independent)} independent pairs",
            "every copy, no independent pair",
        ),
    ]


def _generators(r: dict) -> list[tuple[str, str, str]]:
    rates = r["report"]["rows_per_second"]
    return [
        (
            "generators (one process)",
            ", ".join(f"{name} {rate:,.0f} rows/s" for name, rate in rates.items()),
            "not a bottleneck",
        )
    ]


def _fresh_clone(r: dict) -> list[tuple]:
    m = r["report"]
    grades = " / ".join(f"{lab['score']:g}" for lab in m["labs"].values())
    cache = "pip cache on" if r["config"]["pip_cache"] else "no pip cache"
    if any("find-links" in line or "file://" in line for line in m["pip_sources"]):
        cache += "; wheels from this machine's local pip mirror, so a download from PyPI adds to the install"
    rows = [
        (
            f"`make demo` on a fresh clone ({m['python']}, no .venv, {cache})",
            f"install {m['install_seconds']:.0f} s + demo {m['demo_seconds'] / 60:.1f} min = "
            f"{m['total_seconds'] / 60:.1f} min; grades {grades} (labs 1, 2, homework)",
            "demo ≤ 15 min",
            ("demo_under_15_minutes",),
        )
    ]
    before = m.get("against")
    if before:
        homework = m["labs"]["name-transliteration"]
        unseen = homework.get("hidden_set_metrics", {}).get("accuracy_unseen")
        old_homework = before["labs"]["name-transliteration"]["training_seconds"]
        rows.append(
            (
                f"`make demo` against the kit at {before['commit']}, measured just before, same machine",
                f"{m['demo_seconds']:.0f} s against {before['demo_seconds']:.0f} s (ratio "
                f"{before['demo_time_ratio']:.2f}); the homework trained in "
                f"{homework['training_seconds']:.0f} s against {old_homework:.0f} s"
                + (f", hidden set's unseen names {_pct(unseen)}" if unseen is not None else ""),
                "≤ 2/3 of the time before; hidden unseen ≥ 90 %",
                ("demo_at_most_two_thirds_of_before", "homework_hidden_unseen_at_least_90"),
            )
        )
    return rows


def _colab_stack(r: dict) -> list[tuple[str, str, str]]:
    m = r["report"]
    pins = ", ".join(f"{name} {version}" for name, version in m["colab_pins"].items())
    wheels = m["python_313"]
    others = m["install"]["other_changed"]
    install = (
        f"pinned packages changed: {', '.join(m['install']['pins_changed']) or 'none'}; others changed: "
        f"{', '.join(f'{n} {a} -> {b}' for n, (a, b) in others.items()) or 'none'}; "
        f"{len(m['install']['added'])} added, in {m['install']['requirements_install_seconds']:.0f} s"
    )

    def graded(name: str) -> str:
        if name not in m["grades"]:
            return "nothing to hand in"
        g = m["grades"][name]
        return (
            f"graded {g['score']:g} / {g['max_score']:g}"
            if g["status"] == "graded"
            else f"grading: {g['status']}"
        )

    def views(n: dict) -> str:
        shown = n.get("views")
        if not shown:
            return ""
        counted = [(shown["al-explorer"], "explorer"), (shown["al-beam"], "beam view")]
        return ", " + ", ".join(f"{n} {what}{'s' if n != 1 else ''}" for n, what in counted)

    ran = "; ".join(
        f"{name} {'ran' if n['ran'] else 'FAILED'} ({n['seconds']:.0f} s{views(n)}), {graded(name)}"
        for name, n in m["notebooks"].items()
    )
    models = m["models"]
    failing = [name for name, verdict in models.items() if verdict != "ok"]
    return [
        (
            f"Colab's stack ({pins}): `pip install -r requirements.txt` on top, in a venv on Python "
            f"{m['venv_python']}",
            install,
            "no pinned package changed",
        ),
        (
            f"Colab's stack: the notebooks (tiny configuration) run and export there; their bundles graded "
            f"by the "
            f"kit's grader (Keras {m['grades']['grader_keras']}; tiny models: the points show that grading "
            f"works, "
            f"not what a model learns)",
            f"{ran}; lab 2's variants and the homework model (build, attention view, both decoders, save, "
            f"load{', the explorer' if m.get('probes_explorer') else ''}): "
            f"{len(models) - len(failing)} / {len(models)} ok"
            + (f" (failing: {', '.join(failing)})" if failing else ""),
            "all run, all graded",
        ),
        (
            f"requirements.txt with Colab's pins on CPython {r['config']['colab_python']}, Linux x86_64, "
            f"wheels only",
            f"{len(wheels['wheels'])} packages, "
            + (
                "all from wheels, pins kept"
                if wheels["ok"]
                else f"FAILED: {wheels['error'].splitlines()[0] if wheels['error'] else 'a pin moved'}"
            ),
            "every package a wheel",
        ),
    ]


def _gradescope(r: dict) -> list[tuple[str, str, str]]:
    m, c = r["report"], r["config"]
    names = {"date-generation": "lab 1", "date-translation": "lab 2", "name-transliteration": "homework"}

    def run(task: str, g: dict) -> str:
        kept = "no kill" if g["killed_for_memory"] == 0 else f"KILLED {g['killed_for_memory']}x"
        return (
            f"{names.get(task, task)} ({g['bundle']['parameters']:,} parameters, "
            f"{g['bundle']['hidden_rows']:,} "
            f"hidden rows): {g['wall_seconds']:.0f} s, cgroup peak {g['cgroup_peak_mb']:.0f} MB ({kept}), "
            f"processes' PSS {g['tree_pss_mb']:.0f} MB, RSS {g['tree_rss_mb']:.0f} MB (grader "
            f"{g['grader_rss_mb']:.0f} MB), "
            f"{g.get('status')}"
        )

    return [
        (
            f"Gradescope's limits: `gradescope-run`, one bundle per task (default model size), one core "
            f"(`taskset -c "
            f"{c['cpus']}`), in a {c['memory_limit_mb']} MB memory cgroup; the rubrics' decoding batch sizes",
            "; ".join(run(task, g) for task, g in m.items()),
            "no kill at 768 MB; ≤ 300 s (half a CPU: 2x)",
        )
    ]


def _gradescope_isolation(r: dict) -> list[tuple[str, str, str]]:
    names = {"date-generation": "lab 1", "date-translation": "lab 2", "name-transliteration": "homework"}

    def run(task: str, g: dict) -> str:
        spaced, user = g["namespaces"], g["user+nonet"]
        return (
            # the child's seconds as its results file gives them: whole seconds (what a student reads)
            f"{names.get(task, task)}: namespaces {spaced['gradescope_run_seconds']:.1f} s (child "
            f"{spaced['sandbox_seconds']:g} s), user+nonet {user['run_autograder_seconds']:.1f} s (child "
            f"{user['sandbox_seconds']:g} s), {user['status']}, same score: "
            f"{'yes' if spaced['score'] == user['score'] else 'NO'}"
        )

    return [
        (
            f"Gradescope package as Gradescope runs it (`gradescope-selfcheck`: root, namespaces and mounts "
            f"refused, "
            f"no cgroup; isolation user+nonet) beside `gradescope-run` under namespaces; one default-size "
            f"bundle per "
            f"task, one core (`taskset -c {r['config']['cpus']}`)",
            "; ".join(run(task, g) for task, g in r["report"].items()),
            "graded, the same score under both",
        )
    ]


SECTIONS = (
    ("date_generation", _lab1),
    ("date_translation", _lab2),
    ("lab2_vs_classic", _classic),
    ("attention_variants", _variants),
    ("name_transliteration", _names),
    ("gpu_training", _gpu),
    ("autograder_throughput", _autograder),
    ("scoring_time", _scoring),
    ("similarity_calibration", _similarity),
    ("generators", _generators),
    ("fresh_clone_demo", _fresh_clone),
    ("colab_stack", _colab_stack),
    ("gradescope_limits", _gradescope),
    ("gradescope_isolation", _gradescope_isolation),
)


def table() -> str:
    lines = ["| what | measured | target | when, where, how |", "|---|---|---|---|"]
    for name, rows in SECTIONS:
        result = _load(name)
        if result is None:
            lines.append(f"| {name.replace('_', ' ')} | not measured yet | | `python benchmarks/{name}.py` |")
            continue
        where = f"{result['date']}, {result['machine']}: `{result['command']}`"
        failed = {name for name, ok in result.get("checks", {}).items() if ok is False}
        for what, measured, target, *checked in rows(result):
            missed = [name for name in (checked[0] if checked else ()) if name in failed]
            failed -= set(missed)
            target += f" (**missed**: {', '.join(missed)})" if missed else ""
            lines.append(f"| {what} | {measured} | {target} | {where} |")
        if failed:  # a check no row shows: still in the table
            lines.append(
                f"| {name.replace('_', ' ')}: other checks | | **missed**: {', '.join(sorted(failed))} "
                f"| {where} |"
            )
    return "\n".join(lines)


def experiments_table() -> str:
    """The homework's generalisation experiments: a row per setting, each seed's figures ``/``-separated."""
    result = _load("name_transliteration_experiments")
    if result is None:
        return "Not measured yet: `python benchmarks/name_transliteration_experiments.py`."
    lines = [
        "| setting | what changes | seeds | training time | seen; unseen names, beam 3 | held-out words | "
        "kit | when, where |",
        "|---|---|---|---|---|---|---|---|",
    ]
    settings: dict[str, list[dict]] = {}
    for run in result["runs"]:
        settings.setdefault(run["setting"], []).append(run)
    for name, runs in settings.items():
        runs.sort(key=lambda r: r["seed"])

        def each(key: str, show) -> str:
            return " / ".join("—" if r.get(key) is None else show(r[key]) for r in runs)

        dates = sorted({r["date"][:10] for r in runs})
        lines.append(
            f"| {name} | {runs[0]['what']} | {each('seed', str)} | "
            f"{each('training_seconds', lambda x: f'{x:.0f} s')} | {each('seen', _pct)}; "
            f"{each('unseen', _pct)} | {each('held_out_words', _pct)} | {each('commit', str)} | "
            f"{', '.join(dates)}, {runs[0]['device']} |"
        )
    return "\n".join(lines)


def _fill(text: str, markers: tuple[str, str], body: str) -> str:
    start, end = markers
    if start not in text or end not in text:
        raise SystemExit(f"README.md lacks the markers {start} and {end}")
    return re.sub(
        re.escape(start) + ".*?" + re.escape(end), lambda _: f"{start}\n{body}\n{end}", text, flags=re.DOTALL
    )


def main() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    text = _fill(text, (START, END), table())
    text = _fill(text, EXPERIMENTS, experiments_table())
    readme.write_text(text, encoding="utf-8")
    print(table())
    print(experiments_table())


if __name__ == "__main__":
    main()
