"""Look inside a model, in the page: an attention explorer and a beam-search view, as self-contained HTML.

:func:`attention_explorer` draws one translation's attention as a grid (one row per output character and
``</s>``, one column per source character) with the two texts above it. Point at (or tap) an output
character: each source character lights up by the weight it got at that step, and the weights are listed.
Point at a source character: the output characters that read it light up. A model with several heads (lab 2's
``multi-head`` and ``transformer``) gets a picker: the heads' average, or one head.
:func:`compare_attention` puts several models' explorers side by side on the same input (demo 3), and
:func:`beam_view` shows beam search step by step: the hypotheses it kept and the best it pruned, each with
its log-probability, and where the final best left and overtook the greedy path.

Why HTML and JavaScript the kit writes, not plotly or Altair: one file works everywhere the kit's pages go,
offline (the demo's report is one file), in Jupyter and in Colab (``IPython.display`` shows it; no library
to install or fetch), and it shows Thai with the kit's own font (Noto Sans Thai, embedded), combining marks
on a dotted circle (``◌ิ``) so that each is readable alone. Without JavaScript (a notebook viewed on
GitHub, the print view) the grid is still a coloured heatmap and the beam view a table. The still heatmaps
(:func:`labs.common.plots.plot_attention`) stay for PDFs and the report's Markdown.

From a trained model: ``explore(model, vocabs, translation, steps=TASK.max_output_length)``,
``beam_search_view(model, vocabs, text, beam=3, steps=TASK.max_output_length)``, and :func:`attended` for
the panels of :func:`compare_attention`. Each result shows itself in a notebook (``_repr_html_``); ``.html``
is the fragment to put in a page and ``.save(path)`` writes a page of its own. The instructor's class
report and the feedback pages stay script-free: they do not use this module.
"""

from __future__ import annotations

import base64
import html
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labs.common.errors import InputError
from labs.common.files import write_text
from labs.common.validation import check_whole_number

FONT_FAMILY = "AttentionLabThai"


def character_label(character: str) -> str:
    """How a character shows alone: a combining mark on a dotted circle (``ิ`` -> ``◌ิ``), a space as ``␣``."""
    if character == " ":
        return "␣"
    if unicodedata.combining(character) or unicodedata.category(character) == "Mn":
        return "\u25cc" + character
    return character


@dataclass
class Page:
    """An HTML fragment that shows itself in a notebook and saves as a page of its own.

    ``body``: the views alone; ``html``: with the style, the script and the font they need (:func:`assets`):
    a page with several views can carry those once."""

    body: str
    title: str = "Attention Lab"

    def __repr__(self) -> str:  # print(page): what it is, not its HTML
        return f"<Attention Lab view {self.title!r}: {len(self.body):,} characters of HTML>"

    @property
    def html(self) -> str:
        return self.body + assets()

    def _repr_html_(self) -> str:
        return self.html

    def save(self, path: str | Path) -> Path:
        """Write a whole page (the font and script inside it: it needs nothing else) to ``path``; the path."""
        path = Path(path).expanduser()
        write_text(
            path,
            f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
            f"</head><body>{self.html}</body></html>\n",
        )
        return path


def _font_face() -> str:
    from labs.common.fonts import thai_web_font

    font = thai_web_font()
    if font is None:  # no font package: the browser's own Thai font, if it has one
        return ""
    data = base64.b64encode(font).decode("ascii")
    return f"@font-face{{font-family:{FONT_FAMILY};src:url(data:font/ttf;base64,{data}) format('truetype')}}"


def _weights(matrix, rows: int, columns: int) -> list[list[float]]:
    """``matrix`` cut to (rows, columns), as nested lists of floats rounded to 6 decimals (for JSON)."""
    array = np.asarray(matrix, dtype=np.float64)[:rows, :columns]
    if array.shape != (rows, columns):
        raise ValueError(
            f"attention of shape {array.shape} for {rows} output steps and {columns} source characters"
        )
    return [[round(float(w), 6) for w in row] for row in array]


def _explorer(source: str, output: str, weights, heads, title: str) -> str:
    """One explorer's HTML: the data as JSON, the grid drawn in HTML (the script only lights it up)."""
    # one row per output character and </s> (none when the output ran to the longest one allowed)
    rows, columns = min(len(output) + 1, np.shape(weights)[0]), len(source)
    maps = {"average of the heads" if heads is not None else "attention": _weights(weights, rows, columns)}
    for i, head in enumerate([] if heads is None else heads, start=1):
        maps[f"head {i}"] = _weights(head, rows, columns)
    first = next(iter(maps.values()))
    outputs = ([character_label(c) for c in output] + ["</s>"])[:rows]
    sources = [character_label(c) for c in source]
    cell = "background:rgba(217,95,2,{:.3f})"
    grid = (
        "<table class='al-grid'><tr><th></th>"
        + "".join(
            f"<th class='al-ch al-src' data-j='{j}'>{html.escape(c)}</th>" for j, c in enumerate(sources)
        )
        + "</tr>"
        + "".join(
            f"<tr><th class='al-ch al-out' data-t='{t}'>{html.escape(o)}</th>"
            + "".join(
                f"<td data-t='{t}' data-j='{j}' style='{cell.format(w)}' title='{w:.3f}'></td>"
                for j, w in enumerate(first[t])
            )
            + "</tr>"
            for t, o in enumerate(outputs)
        )
        + "</table>"
    )
    picker = (
        "<label class='al-live'>show <select class='al-head'>"
        + "".join(f"<option>{html.escape(name)}</option>" for name in maps)
        + "</select></label>"
        if len(maps) > 1
        else ""
    )
    data = json.dumps({"maps": maps}, separators=(",", ":")).replace("</", "<\\/")
    return (
        "<div class='al-explorer'>"
        f"<div class='al-title'>{html.escape(title)}</div>{picker}"
        f"<div class='al-text'>source: "
        + "".join(
            f"<span class='al-ch al-src' data-j='{j}'>{html.escape(c)}</span>" for j, c in enumerate(sources)
        )
        + "</div><div class='al-text'>output: "
        + "".join(
            f"<span class='al-ch al-out' data-t='{t}'>{html.escape(o)}</span>" for t, o in enumerate(outputs)
        )
        + f"</div>{grid}<div class='al-readout al-live'>{HINT}</div>"
        f"<script type='application/json' class='al-data'>{data}</script></div>"
    )


HINT = (
    "Point at (or tap) an output character to see where the model looked while writing it; at a source "
    "character to see which outputs read it."
)

STYLE = """
.al-explorer,.al-beam,.al-heading{font-family:%(font)s,system-ui,sans-serif;margin:0.5em 0;color:#222}
.al-explorer{width:max-content;max-width:100%%}
.al-explorer:not([data-ready]) .al-live{display:none}
.al-row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
.al-title{font-weight:bold;margin-bottom:0.2em}
.al-text{font-size:1.25em;margin:0.15em 0}
.al-ch{cursor:pointer;padding:0 0.08em;border-radius:3px}
.al-text .al-ch{display:inline-block;min-width:0.7em;text-align:center}
.al-grid{border-collapse:collapse;margin-top:0.4em}
.al-grid td{width:1.3em;height:1.3em;border:1px solid #eee;padding:0}
.al-grid th{font-weight:normal;padding:0 0.2em;font-size:0.95em}
.al-on{outline:2px solid #d95f02}
.al-pinned{text-decoration:underline}
.al-readout{font-size:0.9em;color:#444;margin-top:0.3em;min-height:2.4em;max-width:40em}
.al-beam table{border-collapse:collapse;font-size:0.92em}
.al-beam td,.al-beam th{padding:0.15em 0.5em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
.al-hyp{display:inline-block;margin:0 0.4em 0.2em 0;padding:0.05em 0.35em;border:1px solid #ccc;
  border-radius:4px}
.al-hyp.al-pruned{color:#999;border-style:dashed;text-decoration:line-through}
.al-hyp.al-best{border:2px solid #1b9e77}
.al-hyp.al-greedy{background:#fff3c4}
.al-hyp.al-path{outline:2px solid #7570b3}
.al-hyp small{color:#666}
@media print{
  .al-grid td,.al-text .al-ch,.al-hyp{-webkit-print-color-adjust:exact;print-color-adjust:exact}
  .al-live{display:none}
}
"""

SCRIPT = """
(function () {
  function paint(element, weight) {
    element.style.backgroundColor = 'rgba(217,95,2,' + weight.toFixed(3) + ')';
    element.dataset.weight = String(weight);
    element.classList.toggle('al-on', weight >= 0.05);
  }
  function explorer(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = '1';
    const maps = JSON.parse(root.querySelector('.al-data').textContent).maps;
    const picker = root.querySelector('.al-head');
    let map = maps[Object.keys(maps)[0]], pinned = null;
    const sources = [...root.querySelectorAll('.al-text .al-src')];
    const outputs = [...root.querySelectorAll('.al-text .al-out')];
    const cells = [...root.querySelectorAll('.al-grid td')];
    const readout = root.querySelector('.al-readout'), hint = readout.textContent;
    const label = el => el.textContent;
    // the weights listed: every one of 0.05 or more, and at least the three heaviest (a flat row lights none)
    const listed = pairs => pairs.sort((a, b) => b[0] - a[0]).filter((p, i) => i < 3 || p[0] >= 0.05);
    function clear() {
      for (const el of [...sources, ...outputs]) {
        el.style.backgroundColor = ''; delete el.dataset.weight; el.classList.remove('al-on', 'al-pinned');
      }
      for (const td of cells) td.classList.remove('al-on');
      readout.textContent = hint;
    }
    function showOutput(t) {
      clear();
      map[t].forEach((w, j) => paint(sources[j], w));
      outputs[t].classList.add('al-on');
      for (const td of cells) if (+td.dataset.t === t) td.classList.add('al-on');
      const lit = listed(map[t].map((w, j) => [w, j]));
      readout.textContent = 'Writing \\u201c' + label(outputs[t]) + '\\u201d, the model read: ' +
        lit.map(p => label(sources[p[1]]) + ' ' + p[0].toFixed(2)).join(', ');
    }
    function showSource(j) {
      clear();
      map.forEach((row, t) => paint(outputs[t], row[j]));
      sources[j].classList.add('al-on');
      for (const td of cells) if (+td.dataset.j === j) td.classList.add('al-on');
      const lit = listed(map.map((row, t) => [row[j], t]));
      readout.textContent = 'Source \\u201c' + label(sources[j]) + '\\u201d was read while writing: ' +
        lit.map(p => label(outputs[p[1]]) + ' ' + p[0].toFixed(2)).join(', ');
    }
    function point(target) {
      const el = target.closest('[data-t],[data-j]');
      if (!el || !root.contains(el)) return null;
      return el.dataset.t !== undefined ? ['t', +el.dataset.t] : ['j', +el.dataset.j];
    }
    function show(at) {
      if (!at) return;
      (at[0] === 't' ? showOutput : showSource)(at[1]);
      if (pinned && at === pinned) {  // a tapped character stays until it is tapped again: say so
        (at[0] === 't' ? outputs : sources)[at[1]].classList.add('al-pinned');
        readout.textContent += ' (pinned: tap it again to let go)';
      }
    }
    root.addEventListener('pointerover', e => { if (!pinned) show(point(e.target)); });
    root.addEventListener('pointerleave', () => { if (!pinned) clear(); });
    root.addEventListener('click', e => {  // a tap pins the choice; tapping it again lets go
      const at = point(e.target);
      if (!at) return;
      pinned = pinned && pinned[0] === at[0] && pinned[1] === at[1] ? null : at;
      if (pinned) return show(pinned);
      clear();  // let go: a mouse still points at it, a finger has left (touch has no hover)
      if (e.pointerType === 'mouse') show(at);
    });
    if (picker) picker.addEventListener('change', () => {
      map = maps[picker.value];
      map.forEach((row, t) => row.forEach((w, j) => {
        const td = cells[t * row.length + j];
        td.style.backgroundColor = 'rgba(217,95,2,' + w.toFixed(3) + ')';
        td.title = w.toFixed(3);
      }));
      if (pinned) show(pinned); else clear();
    });
  }
  function beam(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = '1';
    const hyps = [...root.querySelectorAll('.al-hyp')];
    root.addEventListener('pointerover', e => {
      const hyp = e.target.closest('.al-hyp');
      if (!hyp) return;
      // itself and its ancestors: the kept, unfinished hypotheses of earlier steps it grew from
      const text = hyp.dataset.text, step = +hyp.dataset.step;
      for (const h of hyps) {
        const ancestor = +h.dataset.step < step && h.dataset.kept === '1' && h.dataset.ended === '0' &&
          text.startsWith(h.dataset.text);
        h.classList.toggle('al-path', h === hyp || ancestor);
      }
    });
    root.addEventListener('pointerleave', () => hyps.forEach(h => h.classList.remove('al-path')));
  }
  document.querySelectorAll('.al-explorer').forEach(explorer);
  document.querySelectorAll('.al-beam').forEach(beam);
})();
"""


def assets() -> str:
    """The style, script and font the views need, once per page (a notebook shows each output on its own)."""
    style = STYLE % {"font": FONT_FAMILY}
    return f"<style>{_font_face()}{style}</style><script>{SCRIPT}</script>"


@dataclass
class Attended:
    """One translation's attention, ready to draw: ``weights`` (len(output) + 1, len(source)), row t the
    weights over the source while writing output character t (the last row: ``</s>``), as
    :class:`labs.common.decoding.Translation` holds them; ``heads`` (H, len(output) + 1, len(source)) for a
    model with several heads (``weights`` is then their average), or None."""

    source: str
    output: str
    weights: np.ndarray
    heads: np.ndarray | None = None


def attention_explorer(attended: Attended, *, title: str | None = None) -> Page:
    """An explorer of one translation's attention."""
    a = attended
    fragment = _explorer(a.source, a.output, a.weights, a.heads, title or f"{a.source} → {a.output}")
    return Page(fragment, title=f"Attention: {a.source} → {a.output}")


def compare_attention(panels: dict[str, Attended], *, title: str | None = None) -> Page:
    """Explorers side by side, one per model (``{name: Attended}``), on the same input."""
    fragments = [_explorer(a.source, a.output, a.weights, a.heads, name) for name, a in panels.items()]
    heading = f"<div class='al-title al-heading'>{html.escape(title)}</div>" if title else ""
    return Page(heading + "<div class='al-row'>" + "".join(fragments) + "</div>", title=title or "")


def beam_view(trace, *, title: str | None = None) -> Page:
    """Beam search on one input, step by step (a :class:`labs.common.decoding.BeamTrace`).

    Each step's row lists the hypotheses kept (solid) and the best pruned (struck through), best first, each
    with its log-probability and the score beam search ranks by (log p per character); the final best is
    framed, the greedy path shaded; pointing at a hypothesis outlines the ones it grew from. A line above
    says where the final best left the greedy path and from which step it ranked first."""
    best, greedy = trace.outputs[0][0], trace.greedy[0]
    left = next((i for i, (a, b) in enumerate(zip(best, greedy)) if a != b), min(len(best), len(greedy)))
    on_best = lambda text, ended: best.startswith(text) and (not ended or text == best)  # noqa: E731
    on_greedy = lambda text, ended: greedy.startswith(text) and (not ended or text == greedy)  # noqa: E731
    first_from = len(trace.steps)
    for step in range(len(trace.steps) - 1, -1, -1):  # the last run of steps the final best's path led
        if not on_best(trace.steps[step][0][0], trace.steps[step][0][4]):
            break
        first_from = step
    if best == greedy:
        summary = f"Beam search and greedy decoding agree: {best!r} (log p {trace.greedy[1]:.3f})."
    else:
        summary = (
            f"Greedy decoding writes {greedy!r} (log p {trace.greedy[1]:.3f}); beam search (width "
            f"{trace.beam_width}) writes {best!r} (log p {trace.outputs[0][1]:.3f}). The two part at "
            f"character {left + 1} (step {left + 1})"
            + (
                f"; the final best's path ranks first from step {first_from + 1} on."
                if first_from < len(trace.steps)
                else "."
            )
        )
    rows = []
    for step, candidates in enumerate(trace.steps):
        cells = []
        for text, log_p, score, kept, ended in candidates:
            classes = ["al-hyp"] + ([] if kept else ["al-pruned"])
            classes += ["al-best"] if kept and on_best(text, ended) else []
            classes += ["al-greedy"] if on_greedy(text, ended) else []
            shown = html.escape(_spaces_shown(text)) + (" &lt;/s&gt;" if ended else "")
            cells.append(
                f"<span class='{' '.join(classes)}' data-step='{step}' data-text='{html.escape(text)}' "
                f"data-kept='{int(kept)}' data-ended='{int(ended)}' data-log-p='{log_p!r}'>"
                f"{shown} <small>{log_p:.2f} ({score:.2f})</small></span>"
            )
        rows.append(f"<tr><th>{step + 1}</th><td>{''.join(cells)}</td></tr>")
    # the score each output was ranked by: the last step's, where every output is a kept hypothesis
    final_score = {text: score for text, _, score, kept, _ in trace.steps[-1] if kept}
    outputs = "".join(
        f"<li data-text='{html.escape(text)}' data-log-p='{log_p!r}'>{html.escape(_spaces_shown(text))} "
        f"<small>log p {log_p:.3f}, score {final_score.get(text, float('nan')):.3f}</small></li>"
        for text, log_p in trace.outputs
    )
    heading = title or f"Beam search on {trace.source}"
    fragment = (
        f"<div class='al-beam'><div class='al-title'>{html.escape(heading)}</div>"
        f"<p class='al-summary'>{html.escape(summary)}</p>"
        "<p><small>Each step: the hypotheses kept (solid; framed: the final best's path; shaded: the greedy "
        "path) and the best pruned (struck through), best first; log p (score = log p per character, what "
        "the beam ranks by).</small></p>"
        f"<table><tr><th>step</th><th>hypotheses</th></tr>{''.join(rows)}</table>"
        "<p>Outputs, best first by score (log p per character):</p>"
        f"<ol class='al-outputs'>{outputs}</ol></div>"
    )
    return Page(fragment, title=heading)


def _spaces_shown(text: str) -> str:
    """``text`` with its spaces as ``␣``: ``"somchai "`` and ``"somchai"`` must look different."""
    return text.replace(" ", "␣")


def head_weights(model, vocabs, source: str, output: str, *, steps: int) -> np.ndarray | None:
    """Each head's weights while ``model`` writes ``output`` for ``source`` (teacher-forced, as in training):
    (H, len(output) + 1, len(source)), or None for a model with one attention (or none).

    ``steps``: the task's longest output (how far a one-character decoder unrolls)."""
    from labs.common import seq2seq

    view = seq2seq.attention_model(model, steps=steps)
    if view is None:
        return None
    # (1, S), (1, T): the source, and <s> then the output: the decoder's input while it wrote the output
    source_ids = vocabs["source"].encode_batch([source], unknown="unk")
    target_in = vocabs["target"].encode_batch([output], add_start=True, unknown="unk")
    heads = view.heads([source_ids, target_in[:, :steps]])
    return None if heads is None else heads[0, :, : len(output) + 1, : len(source)]


def _check_steps(steps) -> int:
    return check_whole_number(steps, "steps", 1, " (the task's longest output, TASK.max_output_length)")


def attended(model, vocabs, translation, *, steps: int) -> Attended:
    """What the explorer draws for a :class:`labs.common.decoding.Translation` of ``model``: its weights, and
    its heads' where it has several. ``steps``: the task's longest output (``TASK.max_output_length``)."""
    from labs.common.decoding import Translation

    if isinstance(translation, (list, tuple)):
        raise InputError(
            f"the explorer shows one translation, got a {type(translation).__name__} of {len(translation)}: "
            "pass one of them, e.g. results[0]"
        )
    if not isinstance(translation, Translation):
        raise InputError(
            f"the explorer shows a translation (what translate or transliterate returns), got "
            f"{type(translation).__name__} {translation!r:.60}"
        )
    steps = _check_steps(steps)
    if translation.attention is None:
        raise InputError(
            "this model has no attention to explore (the baseline?): explore a model with attention"
        )
    if not translation.source:
        raise InputError("the translation's source is empty: there is no attention to show")
    if len(translation.output) > steps:
        raise InputError(
            f"steps={steps} is shorter than the output ({len(translation.output)} characters): pass the "
            "task's longest output, TASK.max_output_length"
        )
    heads = head_weights(model, vocabs, translation.source, translation.output, steps=steps)
    return Attended(translation.source, translation.output, translation.attention, heads)


def explore(model, vocabs, translation, *, steps: int, title: str | None = None) -> Page:
    """:func:`attention_explorer` for a translation of ``model`` (its heads too, where it has several)."""
    return attention_explorer(attended(model, vocabs, translation, steps=steps), title=title)


def beam_search_view(
    model, vocabs, text: str, *, beam: int = 3, steps: int, title: str | None = None
) -> Page:
    """:func:`beam_view` of the kit's beam search (``labs.common.decoding.beam_search``, the one ``translate``
    and ``transliterate`` run) on ``text`` with ``model``, beside its greedy decoding."""
    from labs.common import decoding, seq2seq

    if not isinstance(text, str):
        hint = " (a translation: pass its .source)" if isinstance(text, decoding.Translation) else ""
        raise InputError(
            f'beam_search_view takes one text to decode, e.g. "สมชาย ใจดี"; got {type(text).__name__}{hint}'
        )
    if not text.strip():
        raise InputError(f"the text {text!r} is empty: give beam search something to decode")
    seq2seq.check_source_length(model, [text])
    steps = _check_steps(steps)
    trace = decoding.beam_trace(  # it checks beam
        text, vocabs, seq2seq.stepper(model, steps=steps), beam=beam, max_length=steps
    )
    return beam_view(trace, title=title)
