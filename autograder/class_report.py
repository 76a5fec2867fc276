"""The class at a glance: ``GRADES/class-report.html``, one page for the instructor alone.

What it shows of a graded batch: the score distribution; each rubric metric's distribution with its thresholds
drawn in; the status counts; the slowest and largest bundles; the pairs that model similarity flagged
(:mod:`autograder.similarity`), with their measures' distributions; and, for a task whose registry record
names two metrics in ``class_scatter``, one against the other per student.

The page is one file that opens anywhere, offline: plots are PNGs inlined as ``data:`` URLs, the Thai font is
embedded (Noto Sans Thai, the Thai block only, :func:`labs.common.fonts.thai_web_font`), and there is no
script and no external address. Its bytes depend on its inputs alone (no date). Bundle names, messages and the
similarity examples come from students: every text is escaped."""

from __future__ import annotations

import base64
import math
import statistics
from pathlib import Path

from autograder.claims import shortened
from autograder.reports import html_text
from autograder.rubric import Metric, Rubric
from autograder.status import GRADED
from labs import tasks
from labs.common.files import write_text

REPORT_NAME = "class-report.html"
TOP = 5  # rows of the slowest / largest / hungriest tables
THAI_FAMILY = "Attention Lab Thai"
LATIN_FAMILIES = '"Helvetica Neue", Arial, "Liberation Sans", "DejaVu Sans"'
GRADED_COLOR, OTHER_COLOR, FLAG_COLOR, LINE_COLOR = "#4C72B0", "#C4C4C4", "#C44E52", "#333333"
NAMES_SHOWN = 12  # students listed per status before "and N more"


def write_class_report(
    records: list[dict], rubric: Rubric, out: Path, pairs: list[dict], thresholds: dict[str, float]
) -> Path:
    """Write ``out / "class-report.html"`` (atomically) and return its path.

    ``records`` are the grader's result records (one per submission: ``student``, ``bundle``, ``status``,
    ``score``, ``max_score``, ``lines``, ``metrics``, ``sandbox_seconds``, ``peak_memory_mb``,
    ``bundle_bytes``); ``pairs`` the rows of :func:`autograder.similarity.compare`; ``thresholds`` the
    similarity cut-offs by measure (``weight_similarity``, ``shared_mistakes_z``)."""
    path = Path(out) / REPORT_NAME
    # the instructor's alone, whatever the folder: its shared wrong answers show hidden inputs
    write_text(path, class_report_html(records, rubric, pairs, thresholds), private=True)
    return path


def class_report_html(
    records: list[dict], rubric: Rubric, pairs: list[dict], thresholds: dict[str, float]
) -> str:
    """The page itself, as text (see :func:`write_class_report`)."""
    from labs.common.fonts import use_thai_font

    use_thai_font()  # before any figure: the axes take the fonts they are made with
    e = html_text
    sections = [
        _scores(records),
        _metrics(records, rubric),
        _statuses(records),
        _notes(records),
        _resources(records),
        _similarity(pairs, thresholds),
        _scatter(records, rubric),
    ]
    graded = sum(r.get("status") == GRADED for r in records)
    return (
        f"<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>Class report: {e(rubric.title)}</title><style>{_css()}</style></head><body>\n"
        f"<h1>Class report: {e(rubric.title)}</h1>\n"
        f"<p class='meta'>task <code>{e(rubric.task)}</code> &middot; {len(records)} submission"
        f"{'' if len(records) == 1 else 's'}, {graded} graded &middot; out of {rubric.max_score:g} "
        f"points</p>\n"
        "<p class='private'>For the instructor only: this page names students and the pairs whose models "
        "look "
        "copied. Do not share it.</p>\n" + "\n".join(s for s in sections if s) + "\n</body></html>\n"
    )


# --- the sections ----------------------------------------------------------------------------------


def _scores(records: list[dict]) -> str:
    if not records:
        return "<h2>Scores</h2><p>No submission was graded.</p>"
    scores = [float(r["score"]) for r in records]
    top = max(float(r["max_score"]) for r in records)
    graded = [float(r["score"]) for r in records if r.get("status") == GRADED]
    others = [float(r["score"]) for r in records if r.get("status") != GRADED]
    mean, median = statistics.fmean(scores), statistics.median(scores)
    figure, axis = _figure()
    bins = [top * k / 20 for k in range(21)]
    axis.hist(
        [graded, others],
        bins=bins,
        stacked=True,
        color=[GRADED_COLOR, OTHER_COLOR],
        label=["graded", "not graded (status other than graded)"],
        edgecolor="white",
    )
    axis.axvline(mean, color=LINE_COLOR, linestyle="--", linewidth=1.2, label=f"mean {mean:.1f}")
    axis.axvline(median, color=LINE_COLOR, linestyle=":", linewidth=1.5, label=f"median {median:.1f}")
    axis.set_xlim(0, top)
    _finish(axis, f"Scores out of {top:g}", "score", "submissions")
    return (
        f"<h2>Scores</h2><p>Mean <b>{mean:.1f}</b>, median <b>{median:.1f}</b> out of {top:g} over "
        f"{len(scores)} submissions (lowest {min(scores):g}, highest {max(scores):g}).</p>"
        + _img(figure, "histogram of the scores")
    )


def _metrics(records: list[dict], rubric: Rubric) -> str:
    if not rubric.metrics:
        return ""
    parts = [
        "<h2>Rubric metrics</h2><p>Graded submissions only; dashed lines are the rubric's thresholds, "
        "each with the points it gives.</p>"
    ]
    task = tasks.get(rubric.task)
    for metric in rubric.metrics:
        values = [
            v for r in records if r.get("status") == GRADED and (v := _value(r, metric.name)) is not None
        ]
        title = f"{metric.name}: {metric.label}"
        if not values:
            parts.append(f"<h3>{html_text(title)}</h3><p>No graded submission has a value.</p>")
            continue
        figure, axis = _figure()
        cuts = [t for t, _ in metric.thresholds]
        low, high = min(values + cuts), max(values + cuts)
        pad = 0.05 * (high - low or 1.0)
        axis.hist(values, bins=20, range=(low - pad, high + pad), color=GRADED_COLOR, edgecolor="white")
        _draw_thresholds(axis, metric)
        axis.set_xlim(low - pad, high + pad)
        _percent_axis(axis.xaxis, task, metric.name)
        better = "higher" if metric.direction == "higher" else "lower"
        _finish(axis, _wrap(title), f"{metric.name} ({better} is better)", "submissions", legend=False)
        reached = sum(metric.points_for(v) >= metric.points for v in values)
        mean, median = (
            task.show_metric(metric.name, v) for v in (statistics.fmean(values), statistics.median(values))
        )
        parts.append(
            f"<h3>{html_text(title)}</h3><p>{len(values)} values: mean {mean}, median {median}; "
            f"{reached} earn all {metric.points:g} points.</p>"
            + _img(figure, f"histogram of {metric.name} with the rubric's thresholds")
        )
    return "\n".join(parts)


def _statuses(records: list[dict]) -> str:
    counts: dict[str, list[str]] = {}
    for record in sorted(records, key=lambda r: str(r.get("student", ""))):
        counts.setdefault(str(record.get("status", "")), []).append(_who(record))
    if not counts:
        return ""
    most = max(len(students) for students in counts.values())
    rows = []
    for status, students in sorted(
        counts.items(), key=lambda item: (item[0] != GRADED, -len(item[1]), item[0])
    ):
        shown = (
            ""
            if status == GRADED
            else ", ".join(students[:NAMES_SHOWN])
            + (f" and {len(students) - NAMES_SHOWN} more" if len(students) > NAMES_SHOWN else "")
        )
        width = 100 * len(students) / most
        rows.append(
            f"<tr><td>{html_text(status)}</td><td class='n'>{len(students)}</td>"
            f"<td class='bar'><div style='width:{width:.0f}%'></div></td><td>{html_text(shown)}</td></tr>"
        )
    return (
        "<h2>Statuses</h2><p>What happened to each submission (the gradebook has each one's message).</p>"
        "<table><tr><th>status</th><th>submissions</th><th></th><th>students</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _notes(records: list[dict]) -> str:
    noted = sorted((r for r in records if r.get("notes")), key=lambda r: str(r.get("student", "")))
    if not noted:
        return ""
    rows = "".join(
        f"<tr><td>{html_text(_who(r))}</td><td>{html_text(str(r.get('status', '')))}</td>"
        f"<td><ul>{''.join(f'<li>{html_text(str(note))}</li>' for note in r['notes'])}</ul></td></tr>"
        for r in noted
    )
    return (
        f"<h2>Notes for the instructor</h2><p>{len(noted)} submission{'' if len(noted) == 1 else 's'} with "
        "something to read: what the audit saw in a layer module, a run that failed, an id that did not "
        "match "
        "(the gradebook's <code>notes</code> column; the students never see these).</p>"
        f"<table><tr><th>student</th><th>status</th><th>notes</th></tr>{rows}</table>"
    )


def _resources(records: list[dict]) -> str:
    columns = (
        "<tr><th>student</th><th>bundle</th><th>status</th><th>sandbox time</th><th>peak memory</th>"
        "<th>size</th></tr>"
    )

    def table(key: str, caption: str) -> str:
        ranked = sorted(
            (r for r in records if _number(r.get(key)) is not None),
            key=lambda r: (-_number(r.get(key)), str(r.get("student", ""))),
        )[:TOP]
        if not ranked:
            return f"<h3>{caption}</h3><p>No submission has this measure.</p>"
        rows = "".join(
            f"<tr><td>{html_text(_who(r))}</td>"
            f"<td class='name'>{html_text(_short(str(r.get('bundle', ''))))}</td>"
            f"<td>{html_text(str(r.get('status', '')))}</td>"
            f"<td class='n'>{_seconds(r.get('sandbox_seconds'))}</td>"
            f"<td class='n'>{_megabytes(r.get('peak_memory_mb'))}</td>"
            f"<td class='n'>{_size(r.get('bundle_bytes'))}</td></tr>"
            for r in ranked
        )
        return f"<h3>{caption}</h3><table>{columns}{rows}</table>"

    return (
        "<h2>Slowest and largest bundles</h2>"
        + table("sandbox_seconds", f"Slowest: time in the sandbox (top {TOP})")
        + table("bundle_bytes", f"Largest: bundle size (top {TOP})")
        + table("peak_memory_mb", f"Hungriest: peak memory in the sandbox (top {TOP})")
    )


def _similarity(pairs: list[dict], thresholds: dict[str, float]) -> str:
    e = html_text
    flagged = sorted(
        (p for p in pairs if p.get("flagged")), key=lambda p: (str(p["student_a"]), str(p["student_b"]))
    )
    unread = {}  # student -> why their weights were not compared
    for pair in pairs:
        unread.update(pair.get("not_compared") or {})
    uncleared = sum(bool(p.get("not_compared")) and not p.get("flagged") for p in pairs)
    parts = [
        "<h2>Model similarity</h2>",
        f"<p>{len(pairs)} pair{'' if len(pairs) == 1 else 's'} of models compared; <b>{len(flagged)} "
        f"flagged</b>. "
        "A flag is a reason to look at the two submissions, not a verdict.</p>",
    ]
    if unread:
        reasons = "".join(f"<li>{e(str(why))}</li>" for _, why in sorted(unread.items()))
        parts.append(
            f"<p><b>Not compared on weights: {len(unread)} model{'' if len(unread) == 1 else 's'}</b>, in "
            f"{uncleared} pair{'' if uncleared == 1 else 's'} that nothing else flagged (<code>not compared"
            "</code> in <code>similarity.csv</code>): neither flagged nor cleared, look at them yourself."
            f"</p><ul>{reasons}</ul>"
        )
    if not flagged:
        parts.append(
            "<p class='none'>No flagged pair: no two models "
            + ("of those compared " if unread else "")
            + "share their weights or their mistakes more than independent work explains.</p>"
        )
    else:
        rows = []
        for pair in flagged:
            examples = "".join(
                f"<li><span class='src'>{e(str(x.get('source', '')))}</span> &rarr; "
                f"<span class='out'>{e(str(x.get('output', '')))}</span></li>"
                for x in pair.get("examples") or []
            )
            mistakes = (
                ""
                if pair.get("shared_mistakes") is None
                else f"{pair['shared_mistakes']} (expected "
                f"{_float(pair.get('expected_shared_mistakes'), 1)}, "
                f"z {_float(pair.get('shared_mistakes_z'), 1)})"
            )
            rows.append(
                f"<tr><td>{e(str(pair['student_a']))}<br>{e(str(pair['student_b']))}</td>"
                f"<td>{e(str(pair.get('why', '')))}</td>"
                f"<td class='n'>{'yes' if pair.get('identical_weights') else 'no'}</td>"
                f"<td class='n'>{_float(pair.get('weight_similarity'), 2)}</td><td class='n'>{mistakes}</td>"
                f"<td>{f'<ul>{examples}</ul>' if examples else ''}</td></tr>"
            )
        parts.append(
            "<table><tr><th>students</th><th>why</th><th>identical weights</th><th>weight similarity</th>"
            "<th>shared wrong answers</th><th>some shared wrong answers (hidden input &rarr; "
            "output)</th></tr>" + "".join(rows) + "</table>"
        )
    for key, chosen, title, label in (
        (
            "weight_similarity",
            pairs,
            "Weight similarity of the pairs",
            "median |correlation| of the weight matrices (best of the same shape)",
        ),
        (
            "shared_mistakes_z",
            pairs,
            "Shared wrong answers against independent work",
            "z: shared wrong answers above what independence predicts, in standard deviations",
        ),
    ):
        figure = _pair_histogram(chosen, key, thresholds.get(key), title, label)
        if figure is not None:
            parts.append(_img(figure, f"histogram of {key} over the pairs, with the flagging threshold"))
    return "\n".join(parts)


def _scatter(records: list[dict], rubric: Rubric) -> str:
    chosen = tasks.get(rubric.task).class_scatter
    if not chosen:
        return ""
    x_name, y_name = chosen
    points = sorted(
        (str(r.get("student", "")), x, y)
        for r in records
        if r.get("status") == GRADED
        and (x := _value(r, x_name)) is not None
        and (y := _value(r, y_name)) is not None
    )
    title = f"{y_name} against {x_name}, per student"
    if not points:
        return f"<h2 id='per-student'>{html_text(title)}</h2><p>No graded submission has both values.</p>"
    labels = {m.name: m.label for m in rubric.metrics}
    figure, axis = _figure(7.0, 6.6)
    xs, ys = [p[1] for p in points], [p[2] for p in points]
    low, high = min(xs + ys), max(xs + ys)
    pad = 0.1 * (high - low or 1.0)
    low, high = low - pad, high + pad
    axis.plot(
        [low, high], [low, high], color=LINE_COLOR, linestyle="--", linewidth=1, label=f"{y_name} = {x_name}"
    )
    axis.scatter(xs, ys, color=GRADED_COLOR, zorder=3)
    at: dict[tuple[float, float], list[str]] = {}
    for student, x, y in points:  # students at the same point share one label (copies often do)
        at.setdefault((round(x, 6), round(y, 6)), []).append(student)
    for (x, y), students in at.items():
        label = ", ".join(students[:3]) + (f" +{len(students) - 3}" if len(students) > 3 else "")
        right = x > (low + high) / 2  # in the right half, the label goes to the left
        axis.annotate(
            label,
            (x, y),
            xytext=(-4 if right else 4, 3),
            textcoords="offset points",
            fontsize=7,
            ha="right" if right else "left",
        )
    axis.set_xlim(low, high)
    axis.set_ylim(low, high)
    axis.set_aspect("equal")
    _percent_axis(axis.xaxis, tasks.get(rubric.task), x_name)
    _percent_axis(axis.yaxis, tasks.get(rubric.task), y_name)
    _finish(
        axis,
        title,
        _wrap(labels.get(x_name, x_name), 60),
        _wrap(labels.get(y_name, y_name), 50),
        counts=False,
    )
    below = sum(y < x for _, x, y in points)
    return (
        f"<h2 id='per-student'>{html_text(title)}</h2><p>One point per graded student; {below} of "
        f"{len(points)} lie below the diagonal ({html_text(y_name)} lower than {html_text(x_name)}).</p>"
        + _img(figure, f"scatter plot of {y_name} against {x_name}, one labelled point per student")
    )


# --- plots -----------------------------------------------------------------------------------------


def _figure(width: float = 9.0, height: float = 3.6):
    # A Figure of its own, without pyplot: no global backend to switch, nothing to close.
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    return figure, figure.subplots()


def _finish(axis, title: str, xlabel: str, ylabel: str, legend: bool = True, counts: bool = True) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.set_title(title, fontsize=11)
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3)
    if counts:
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    if legend and axis.get_legend_handles_labels()[0]:
        axis.legend(fontsize=8)


def _percent_axis(axis, task: tasks.Task, metric: str) -> None:
    """A rate's axis in percent, as the rubric lines and the labs show it
    (:meth:`labs.tasks.Task.show_metric`)."""
    from matplotlib.ticker import PercentFormatter

    if metric in task.rates:
        axis.set_major_formatter(PercentFormatter(xmax=1))


def _draw_thresholds(axis, metric: Metric) -> None:
    """Each threshold as a dashed line, with the points it gives on a top axis of its own."""
    for value, _ in metric.thresholds:
        axis.axvline(value, color=FLAG_COLOR, linestyle="--", linewidth=1)
    top = axis.secondary_xaxis("top")
    top.set_xticks(
        [value for value, _ in metric.thresholds], [f"{points:g}" for _, points in metric.thresholds]
    )
    top.tick_params(colors=FLAG_COLOR, labelsize=8)
    side = "at or above" if metric.direction == "higher" else "at or below"
    top.set_xlabel(f"points {side} each dashed threshold", color=FLAG_COLOR, fontsize=8)


def _pair_histogram(pairs: list[dict], key: str, threshold: float | None, title: str, label: str):
    """A histogram of one measure over ``pairs`` (flagged pairs in red); None when no pair has a value."""
    values = [
        (float(v), bool(p.get("flagged")))
        for p in pairs
        if isinstance(v := p.get(key), (int, float)) and not isinstance(v, bool) and not math.isnan(v)
    ]
    if not values:
        return None
    finite = [
        v for v, _ in values if math.isfinite(v)
    ]  # z is infinite where independence predicts no sharing
    low = min(finite + [threshold if threshold is not None else 0.0, 0.0])
    # Copies sit far out (z in the hundreds): the view stops past the threshold, the rest is counted in a
    # note.
    cap = max(finite + [0.0])
    if threshold is not None:
        cap = max(min(cap, 4 * abs(threshold)), threshold + 0.25 * abs(threshold or 1.0))
    high = cap + 0.05 * (cap - low or 1.0)
    beyond = sum(v > high for v, _ in values)
    shown = [(min(v, high), flag) for v, flag in values]
    figure, axis = _figure()
    axis.hist(
        [[v for v, f in shown if not f], [v for v, f in shown if f]],
        bins=30,
        range=(low, high),
        stacked=True,
        color=[OTHER_COLOR, FLAG_COLOR],
        label=["not flagged", "flagged"],
        edgecolor="white",
    )
    if threshold is not None:
        axis.axvline(
            threshold, color=LINE_COLOR, linestyle="--", linewidth=1.2, label=f"threshold {threshold:g}"
        )
    if beyond:
        largest = "∞" if any(math.isinf(v) for v, _ in values) else f"{max(finite):.3g}"
        axis.text(
            0.99,
            0.97,
            f"{beyond} pair{'' if beyond == 1 else 's'} above {high:.3g} (up to {largest}),\n"
            "drawn at the right edge",
            transform=axis.transAxes,
            ha="right",
            va="top",
            fontsize=8,
        )
    axis.set_xlim(low, high)
    _finish(axis, title, label, "pairs", legend=False)
    axis.legend(fontsize=8, loc="center right")
    return figure


def _img(figure, alt: str) -> str:
    from labs.common.plots import figure_png, png_img

    figure.tight_layout()
    return png_img(figure_png(figure, dpi=100), alt)


# --- the page's text -------------------------------------------------------------------------------


def _css() -> str:
    from labs.common.fonts import thai_web_font

    font = thai_web_font()
    face = (
        ""
        if font is None
        else (
            f"@font-face{{font-family:'{THAI_FAMILY}';font-weight:400;unicode-range:U+0E00-0E7F;"
            f"src:url(data:font/ttf;base64,{base64.b64encode(font).decode('ascii')}) format('truetype')}}"
        )
    )
    return (
        face
        + f"body{{font-family:{LATIN_FAMILIES},'{THAI_FAMILY}',sans-serif;max-width:64em;margin:2em auto;"
        "padding:0 1em;color:#222;line-height:1.4}h1{font-size:1.6em}h2{border-bottom:1px solid #ddd;"
        "margin-top:2em}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid "
        "#ccc;padding:.3em .6em;"
        "vertical-align:top;text-align:left}td.n{text-align:right;white-space:nowrap}td.name{max-width:20em;"
        "overflow-wrap:anywhere}td.bar{width:12em}td.bar "
        "div{background:#4C72B0;height:1em}img{max-width:100%;"
        "display:block;margin:.5em "
        "0}ul{margin:0;padding-left:1.2em}.meta{color:#555}.private{background:#fff4e5;"
        "border-left:4px solid #e69500;padding:.4em .8em}.none{color:#2d6a2d;font-weight:bold}"
        "code{background:#f3f3f3;padding:0 .2em}"
    )


def _number(value) -> float | None:
    """``value`` as a finite float, or None (missing, not a number, NaN or infinite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _value(record: dict, name: str) -> float | None:
    """A metric's value in a record: its rubric line's, else the record's metrics'."""
    for line in record.get("lines") or []:
        if line.get("name") == name:
            return _number(line.get("value"))
    return _number((record.get("metrics") or {}).get(name))


def _float(value, digits: int) -> str:
    if isinstance(value, (int, float)) and math.isinf(value):
        return "&infin;"
    number = _number(value)
    return "" if number is None else f"{number:.{digits}f}"


def _seconds(value) -> str:
    number = _number(value)
    return "" if number is None else f"{number:.1f} s"


def _megabytes(value) -> str:
    number = _number(value)
    return "" if number is None else f"{number:,.0f} MB"


def _size(value) -> str:
    number = _number(value)
    if number is None:
        return ""
    return f"{number / 1e6:.2f} MB" if number >= 1e5 else f"{number / 1e3:.1f} kB"


def _who(record: dict) -> str:
    """The student's id, and the LMS's name for them where it gave one (``12345 (doejane)``)."""
    name = (record.get("lms") or {}).get("name") if isinstance(record.get("lms"), dict) else ""
    student = str(record.get("student", ""))
    return f"{student} ({_short(str(name), 40)})" if name else student


def _short(text: str, limit: int = 80) -> str:
    return shortened(text, limit)


def _wrap(text: str, width: int = 70) -> str:
    """A long title on two lines at most, broken at a space."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width)
    cut = cut if cut > 0 else width
    return text[:cut] + "\n" + _short(text[cut:].strip(), width)
