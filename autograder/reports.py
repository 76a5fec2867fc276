"""What grading writes: Gradescope results, per-student feedback (Markdown and HTML), the gradebook and
leaderboard.

Much of what lands in these files comes from a bundle (its outputs, the messages of its errors,
its file name), so every such text is written as text: CSV cells that a spreadsheet would run as
a formula are neutralised, Markdown and HTML are escaped, and messages are one short line.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from autograder.claims import visible
from autograder.rubric import Rubric
from autograder.status import (
    DISALLOWED,
    GRADED,
    LOAD_FAILED,
    MACHINE_OUT_OF_MEMORY,
    MALFORMED,
    NAN_OUTPUT,
    NOT_ISOLATED,
    OUT_OF_MEMORY,
    TIMEOUT,
    TOO_LARGE,
    TOO_MANY_PROCESSES,
    UNSAFE,
    WRONG_SIGNATURE,
    WRONG_TASK,
)
from labs import tasks
from labs.common.files import write_csv, write_json, write_text

ARCHITECTURE_ADVICE = (
    "Build the model the lab describes (see the rubric line) and keep it within the parameter budget."
)
STATUS_ADVICE = {
    MALFORMED: "Write your bundle with `python -m labs export` (or the notebook's export cell) and check it "
    "with `python -m autograder check BUNDLE` before handing it in.",
    UNSAFE: "Zip the bundle folder's files directly (no links, no paths outside the folder).",
    TOO_LARGE: "Your bundle is over the size limit: a smaller model, or leave out files the bundle does "
    "not need.",
    WRONG_TASK: "You handed in a bundle for another assignment: export with the right task name.",
    DISALLOWED: "Use Keras' built-in layers (and, for the homework, your KeyValueAttention); Lambda layers "
    "and "
    "custom modules are not loaded.",
    LOAD_FAILED: "Your model could not be loaded. Where the message says that your layer file failed to "
    "import, "
    "run its self-test (`python -m labs selftest homework`) on the very file you handed in; otherwise save "
    "the model with model.save('model.keras') in Keras 3 (labs export does), and for the homework "
    "make sure kv_attention.py defines every layer the model uses.",
    WRONG_SIGNATURE: "Your model must take the inputs and give the outputs of the lab's model (see the "
    "lab's "
    "model.py); build it with the lab's build_model.",
    NAN_OUTPUT: "Your model outputs NaN: check your layer for divisions by zero or -inf scores on every "
    "position.",
    TIMEOUT: "Your model is too slow to grade: check for loops in call() that grow with the input.",
    OUT_OF_MEMORY: "Your model needs too much memory: check for tensors that grow with the batch or the "
    "input.",
    MACHINE_OUT_OF_MEMORY: "Nothing to change on your side: the grading machine had too little memory for "
    "the "
    "grader and your model; your instructor raises it and grades again.",
    TOO_MANY_PROCESSES: "Your layer module must not start processes or threads: keep it to Keras and NumPy.",
    NOT_ISOLATED: "Nothing to change on your side: your instructor grades this bundle on a machine that "
    "can "
    "isolate it.",
}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_AFTER_SEMICOLON = re.compile(r"(;\s*)(?=[=+\-@])")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>$-])")  # $: math, where a viewer renders it


def csv_cell(value) -> str:
    """A gradebook cell that a spreadsheet shows as text: a leading ``= + - @``, tab or CR gets a ``'`` first,
    and so does one after a ``;`` (a spreadsheet set to a language that writes decimal commas splits a line
    at semicolons: ``a;=1+1`` would be two cells).

    Numbers stay numbers (``-0.25`` is a value, not a formula).
    """
    text = "" if value is None else visible(value)
    if text.startswith(_FORMULA_START):
        try:
            float(text)
        except ValueError:
            text = "'" + text
    return _AFTER_SEMICOLON.sub(r"\1'", text)


def markdown_text(value) -> str:
    """Untrusted text as literal Markdown: HTML escaped, Markdown's special characters backslashed, one line,
    invisible characters shown as ``<U+XXXX>``."""
    text = " ".join(html.escape(visible(value), quote=False).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def html_text(value) -> str:
    """Untrusted text as HTML text: escaped, and what shows nothing or turns text around as ``<U+XXXX>``."""
    return html.escape(visible(value))


def late_text(record: dict) -> str:
    """What a late submission lost, for the score's line (empty when nothing)."""
    late = record.get("late_penalty")
    if not late:
        return ""
    before = record["score_before_late"]
    return f". Late: {late['points']:g} points off, {late['rule']}. Before the penalty: {before:g}"


def gradescope_results(record: dict, rubric: Rubric) -> dict:
    """The Gradescope autograder results format: score, tests (one per rubric line), leaderboard."""
    tests = []
    for number, line in enumerate(record["lines"], start=1):
        value = f"{line['shown']}; " if line.get("shown") else ""
        output = f"{value}rule: {line['rule']}" + (f"\n{line['message']}" if line["message"] else "")
        tests.append(
            {
                "name": line["label"],
                "number": str(number),
                "score": line["points"],
                "max_score": line["max_points"],
                "status": "passed" if line["points"] >= line["max_points"] else "failed",
                "output": output,
                "output_format": "text",
                "visibility": "visible",
            }
        )
    values = {
        "score": record["score"],
        **{
            line["name"]: round(line["value"], SHOWN_DIGITS)
            for line in record["lines"]
            if line["name"] != "architecture" and line["value"] is not None
        },
    }
    columns = (
        rubric.leaderboard
        if rubric.leaderboard is not None
        else (
            ("score", "desc"),
            *((m.name, "asc" if _lower_is_better(m.name, rubric) else "desc") for m in rubric.metrics),
        )
    )
    leaderboard = [
        {"name": name, "value": values[name], "order": order} for name, order in columns if name in values
    ]
    score = f"{record['score']:g} / {record['max_score']:g}"
    summary = f"{rubric.title}: {score} ({record['status']}){late_text(record)}"
    if record["message"]:
        summary += f"\n{record['message']}"
    # whole seconds: the scored run's time is a channel from the hidden inputs to the student, kept coarse
    return {
        "score": record["score"],
        "execution_time": round(record.get("sandbox_seconds") or 0),
        "output": summary,
        "output_format": "text",
        "tests": tests,
        "leaderboard": leaderboard,
        "visibility": rubric.visibility,
        "stdout_visibility": "hidden",
        "extra_data": {"attention_lab": student_record(record)},
    }


MEMORY_STEP_MB = 10  # peak memory as a student reads it: in steps of 10 MB
SHOWN_DIGITS = 4  # the hidden set's measures as a student reads them: as the rubric lines show them (0.01 %)


def student_record(record: dict) -> dict:
    """The record as a student may read it (``results/<student>.json``: Gradescope gives it to them).

    The scored run held the hidden inputs, and a bundle's code chooses how long that run takes, how much
    memory it holds and what timing it reports: every fine measure of it is a channel from the hidden inputs
    to the student. So its times are whole seconds (as ``execution_time``), its peak memory is in steps of
    ``MEMORY_STEP_MB``, and the child's own report of its timing (any float it likes) is left out. The hidden
    set's measures are given to ``SHOWN_DIGITS`` decimals, as the rubric lines show them (``84.37%``): the
    digits below are the model's choice as much as its answers are (the length of a wrong answer sets its
    character error rate), a finer channel still. The records ``grade`` returns keep them all; a resumed
    batch reads them back from here, coarse."""
    view = dict(record)
    if isinstance(view.get("metrics"), dict):
        view["metrics"] = {k: _shown_value(v) for k, v in view["metrics"].items()}
    if isinstance(view.get("lines"), list):
        view["lines"] = [
            {**line, "value": _shown_value(line.get("value"))} if isinstance(line, dict) else line
            for line in view["lines"]
        ]
    view.pop("child_seconds", None)
    for key in ("sandbox_seconds", "sandbox_cpu_seconds"):
        if isinstance(view.get(key), (int, float)):
            view[key] = round(view[key])
    if isinstance(view.get("peak_memory_mb"), (int, float)):
        view["peak_memory_mb"] = MEMORY_STEP_MB * round(view["peak_memory_mb"] / MEMORY_STEP_MB)
    return view


def _shown_value(value):
    return round(value, SHOWN_DIGITS) if isinstance(value, float) else value


def _lower_is_better(name: str, rubric: Rubric) -> bool:
    return any(m.name == name and m.direction == "lower" for m in rubric.metrics)


def _heatmap_png(example: dict) -> bytes | None:
    if not example.get("attention"):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from labs.common.plots import figure_png, plot_attention

    figure = plot_attention(example["source"], example["output"], example["attention"])
    png = figure_png(figure, dpi=80)
    plt.close(figure)
    return png


def _improvements(record: dict) -> list[str]:
    tips = []
    if record["status"] in STATUS_ADVICE:
        tips.append(STATUS_ADVICE[record["status"]])
    advice = {"architecture": ARCHITECTURE_ADVICE, **tasks.get(record["task"]).advice}
    for line in record["lines"]:
        if line["points"] < line["max_points"] and line["name"] in advice and record["status"] == GRADED:
            tips.append(f"**{line['label']}**: {advice[line['name']]}")
    return tips or ["Nothing: full marks."]


def feedback_markdown(record: dict, rubric: Rubric, images: dict[int, str]) -> str:
    """A student's feedback as Markdown; ``images`` maps an example's index to its heatmap file name."""
    md = markdown_text
    lines = [
        f"# {md(rubric.title)}: feedback for {md(record['student'])}",
        "",
        f"**Score: {record['score']:g} / {record['max_score']:g}** (status: {md(record['status'])})"
        + md(late_text(record)),
        "",
    ]
    if record["message"]:
        lines += [f"> {md(record['message'])}", ""]
    lines += ["## Rubric", "", "| item | your value | rule | points |", "|---|---|---|---|"]
    for line in record["lines"]:
        value = line.get("shown", "")
        note = f" ({line['message']})" if line["message"] else ""
        lines.append(
            f"| {md(line['label'] + note)} | {value} | {md(line['rule'])} | "
            f"{line['points']:g} / {line['max_points']:g} |"
        )
    if record["examples"]:
        lines += [
            "",
            "## Examples from the public dev set",
            "",
            "| input | expected | your model | |",
            "|---|---|---|---|",
        ]
        for example in record["examples"]:
            ok = "right" if example["output"] in example["accepted"] else "wrong"
            lines.append(
                f"| {md(example['source'])} | {md(example['expected'])} | {md(example['output'])} | {ok} |"
            )
        for index, name in sorted(images.items()):
            lines += [
                "",
                f"Attention for {md(record['examples'][index]['source'])}:",
                "",
                f"![attention]({name})",
            ]
    lines += ["", "## What to improve", ""] + [f"- {tip}" for tip in _improvements(record)]
    return "\n".join(lines) + "\n"


def feedback_html(record: dict, rubric: Rubric, pngs: dict[int, bytes]) -> str:
    """The same feedback as one self-contained HTML page (heatmaps inlined)."""
    from labs.common.plots import png_img

    e = html_text
    rows = "".join(
        f"<tr><td>{e(l['label'])}{e(' (' + l['message'] + ')' if l['message'] else '')}</td>"
        f"<td>{e(l.get('shown', ''))}</td><td>{e(l['rule'])}</td>"
        f"<td>{l['points']:g} / {l['max_points']:g}</td></tr>"
        for l in record["lines"]
    )
    examples = "".join(
        f"<tr><td>{e(x['source'])}</td><td>{e(x['expected'])}</td><td>{e(x['output'])}</td>"
        f"<td>{'right' if x['output'] in x['accepted'] else 'wrong'}</td></tr>"
        for x in record["examples"]
    )
    images = "".join(
        f"<figure>{png_img(png, 'attention')}<figcaption>{e(record['examples'][i]['source'])}"
        "</figcaption></figure>"
        for i, png in sorted(pngs.items())
    )
    tips = "".join(f"<li>{e(tip.replace('**', ''))}</li>" for tip in _improvements(record))
    message = f"<blockquote>{e(record['message'])}</blockquote>" if record["message"] else ""
    example_block = (
        (
            f"<h2>Examples from the public dev set</h2><table><tr><th>input</th><th>expected</th>"
            f"<th>your model</th><th></th></tr>{examples}</table>{images}"
        )
        if record["examples"]
        else ""
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(rubric.title)}: "
        f"{e(record['student'])}</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.3em .6em}img{max-width:100%}</style></head><body>"
        f"<h1>{e(rubric.title)}: feedback for {e(record['student'])}</h1>"
        f"<p><strong>Score: {record['score']:g} / {record['max_score']:g}</strong> (status: "
        f"{e(record['status'])})"
        f"{e(late_text(record))}</p>"
        f"{message}<h2>Rubric</h2><table><tr><th>item</th><th>your "
        f"value</th><th>rule</th><th>points</th></tr>{rows}"
        f"</table>{example_block}<h2>What to improve</h2><ul>{tips}</ul></body></html>\n"
    )


def write_student_files(record: dict, rubric: Rubric, out: Path) -> None:
    """``results/<student>.json`` (Gradescope format) and ``feedback/<student>.md|.html`` (+ heatmap PNGs)."""
    student = record["student"]
    pngs = {i: png for i, example in enumerate(record["examples"]) if (png := _heatmap_png(example))}
    images = {}
    for index, png in pngs.items():
        name = f"{student}-example-{index + 1}.png"
        with open(out / "feedback" / name, "wb") as handle:
            handle.write(png)
        images[index] = name
    write_text(out / "feedback" / f"{student}.md", feedback_markdown(record, rubric, images))
    write_text(out / "feedback" / f"{student}.html", feedback_html(record, rubric, pngs))
    write_results(record, rubric, out)


def write_results(record: dict, rubric: Rubric, out: Path) -> None:
    """``results/<student>.json``: Gradescope's results format, with the record as a student may read it
    (:func:`student_record`) in ``extra_data``."""
    write_json(out / "results" / f"{record['student']}.json", gradescope_results(record, rubric))


# What the LMS said of each student (autograder.lms), after the kit's own columns.
LMS_COLUMNS = ("name", "lms", "lms_id", "late", "submitted", "score_before_late", "late_penalty")


def write_gradebook(records: list[dict], rubric: Rubric, out: Path) -> None:
    """``gradebook.csv`` (one row per student) and ``leaderboard.csv`` (graded bundles, best first)."""
    metric_names = [m.name for m in rubric.metrics]
    columns = [
        "student",
        "score",
        "max_score",
        *metric_names,
        "parameters",
        "status",
        "message",
        "bundle",
        "isolation",
        "notes",
        *LMS_COLUMNS,
    ]
    rows = []
    for record in sorted(records, key=lambda r: r["student"]):
        lms, late = record.get("lms") or {}, record.get("late_penalty")
        row = {
            "student": record["student"],
            "score": f"{record['score']:g}",
            "max_score": f"{record['max_score']:g}",
            "parameters": record.get("parameters") or "",
            "status": record["status"],
            "message": record["message"],
            "bundle": record["bundle"],
            "isolation": record.get("isolation", ""),
            "notes": "; ".join(record.get("notes", [])),
            "name": lms.get("name", ""),
            "lms": lms.get("lms", ""),
            "lms_id": lms.get("lms_id", ""),
            "late": {True: "yes", False: "no"}.get(lms.get("late"), ""),
            "submitted": lms.get("submitted", ""),
            "score_before_late": f"{record.get('score_before_late', record['score']):g}",
            "late_penalty": f"{late['points']:g} ({late['rule']})" if late else "",
        }
        values = {line["name"]: line["value"] for line in record["lines"]}
        row.update({name: "" if values.get(name) is None else f"{values[name]:.6f}" for name in metric_names})
        rows.append(row)
    write_csv(out / "gradebook.csv", columns, [{k: csv_cell(v) for k, v in row.items()} for row in rows])
    graded = [r for r in rows if r["status"] == GRADED]
    first = metric_names[0] if metric_names else None
    graded.sort(key=lambda r: (-float(r["score"]), -float(r[first] or 0) if first else 0, r["student"]))
    write_csv(
        out / "leaderboard.csv",
        ["rank", "student", "score", *metric_names],
        [
            {
                "rank": i,
                "student": csv_cell(r["student"]),
                "score": r["score"],
                **{m: csv_cell(r[m]) for m in metric_names},
            }
            for i, r in enumerate(graded, start=1)
        ],
    )
