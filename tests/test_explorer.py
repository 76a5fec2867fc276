"""The attention explorer and the beam-search view: what a reader points at shows the model's own numbers.

In headless Chromium (driven over the DevTools protocol: tests/browser.py) the mouse pointer moves onto an
output character, and the page must light up the source characters with the weights of the model's attention
row; onto a source character, the outputs with its column; a head picked shows that head's weights. The beam
view's hypotheses are checked against ``beam_search``'s own trace and results. Models are untrained (tiny,
seeded, their weights scaled up so that attention is peaked, not uniform): what is tested holds for any
weights.
"""

import re
from html.parser import HTMLParser

import numpy as np
import pytest

from labs.common import decoding, seq2seq
from labs.common.errors import InputError
from labs.common.explorer import (
    Attended,
    attended,
    attention_explorer,
    beam_search_view,
    beam_view,
    character_label,
    compare_attention,
    explore,
)
from labs.date_translation.translate import translate
from tests.browser import Browser
from tests.test_class_report import chromium


def _peaked(model):
    """``model`` with every weight six times larger: untrained attention is near uniform, this makes it peaked
    (some characters lit, some not), so that what the page lights up is a real test."""
    model.set_weights([6 * w for w in model.get_weights()])
    return model


@pytest.fixture(scope="module")
def lab2():
    import keras

    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.data import vocabularies
    from labs.date_translation.model import build_model

    vocabs = vocabularies()
    models = {}
    for attention in ("multi-head", "luong-additive"):
        keras.utils.set_random_seed(0)
        config = DateTranslationConfig.tiny(attention=attention)
        models[attention] = _peaked(build_model(config, len(vocabs["source"]), len(vocabs["target"])))
    return models, vocabs


@pytest.fixture(scope="module")
def transformer():
    """A tiny Transformer: its position table limits the source it reads (256 characters)."""
    import keras

    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.data import vocabularies
    from labs.date_translation.model import build_model

    vocabs = vocabularies()
    keras.utils.set_random_seed(0)
    config = DateTranslationConfig.tiny(attention="transformer")
    return build_model(config, len(vocabs["source"]), len(vocabs["target"])), vocabs


@pytest.fixture(scope="module")
def homework():
    import keras

    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.data import vocabularies
    from labs.name_transliteration.model import build_model

    keras.utils.set_random_seed(0)
    vocabs = vocabularies()
    config = NameTransliterationConfig.tiny()
    return _peaked(build_model(config, len(vocabs["source"]), len(vocabs["target"]))), vocabs


def _translation(model, vocabs, text, steps, beam=1):
    return decoding.translate_texts(
        [text], vocabs, seq2seq.stepper(model, steps=steps), max_length=steps, beam=beam
    )[0]


READ_SOURCES = """[...document.querySelectorAll('.al-explorer')[%d].querySelectorAll('.al-text .al-src')]
  .map(e => [e.textContent, e.dataset.weight === undefined ? null : +e.dataset.weight, e.classList.contains('al-on')])"""
READ_OUTPUTS = READ_SOURCES.replace(".al-src", ".al-out")


def _check_lit(read, weights):
    """What the page shows (label, weight, lit) against the model's weights: every one equal, lit where >= 0.05."""
    assert [w for _, w, _ in read] == pytest.approx(list(weights), abs=1e-6)
    assert [lit for *_, lit in read] == [w >= 0.05 for w in weights]


def test_pointing_at_an_output_character_shows_the_models_attention_row_in_chromium(tmp_path, lab2, homework):
    from labs.date_translation.task import TASK as LAB2
    from labs.name_transliteration.task import TASK as HOMEWORK

    models, vocabs = lab2
    name_model, name_vocabs = homework
    multi = _translation(models["multi-head"], vocabs, "๒๗ ม.ค. ๒๕๖๑", LAB2.max_output_length)
    name = _translation(name_model, name_vocabs, "สมชาย ใจดี", HOMEWORK.max_output_length, beam=3)
    panels = {
        "multi-head": attended(models["multi-head"], vocabs, multi, steps=LAB2.max_output_length),
        "homework": attended(name_model, name_vocabs, name, steps=HOMEWORK.max_output_length),
    }
    heads = panels["multi-head"].heads
    from labs.date_translation.config import DateTranslationConfig

    rows = min(len(multi.output) + 1, LAB2.max_output_length)  # </s>, when written
    assert heads is not None and heads.shape == (DateTranslationConfig.tiny().heads, rows, len(multi.source))
    # the explorer's average is the decoder's own (step by step); the heads come teacher-forced: they agree
    np.testing.assert_allclose(heads.mean(0), multi.attention, atol=1e-5)
    assert panels["homework"].heads is None  # one key-value attention: no picker
    page = tmp_path / "explorer.html"
    compare_attention(panels, title="two models").save(page)

    with Browser(chromium(), tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        assert browser.evaluate("document.querySelectorAll('.al-explorer[data-ready]').length") == 2
        # Thai, and the dotted circle that carries a mark shown alone, come from the font inside the page
        faces = "document.fonts.load('20px AttentionLabThai', 'สมชาย ใจดี\u25cc').then(f => f.length)"
        assert browser.evaluate(faces) == 1
        lit_somewhere = unlit_somewhere = False
        for index, translation in enumerate((multi, name)):
            for t in range(len(translation.attention)):
                browser.move_to(f".al-explorer:nth-of-type({index + 1}) .al-text .al-out[data-t='{t}']")
                read = browser.evaluate(READ_SOURCES % index)
                assert [label for label, *_ in read] == [character_label(c) for c in translation.source]
                _check_lit(read, translation.attention[t])
                lit_somewhere |= any(lit for *_, lit in read)
                unlit_somewhere |= not all(lit for *_, lit in read)
                lit = browser.evaluate(
                    f"document.querySelectorAll('.al-explorer')[{index}].querySelector('.al-readout').textContent"
                )
                assert "\u201d, the model read:" in lit
        assert lit_somewhere and unlit_somewhere  # the test could tell a wrong highlight from a right one
        # a source character: the outputs that read it, with its column of weights
        j = len(name.source) - 1
        browser.move_to(f".al-explorer:nth-of-type(2) .al-text .al-src[data-j='{j}']")
        _check_lit(browser.evaluate(READ_OUTPUTS % 1), name.attention[:, j])
        # a head picked: that head's row; a tap pins the choice when the pointer leaves
        browser.evaluate(
            "(() => { const s = document.querySelector('.al-explorer .al-head'); s.value = 'head 2';"
            " s.dispatchEvent(new Event('change')); })()"
        )
        browser.click(".al-explorer:nth-of-type(1) .al-grid td[data-t='1'][data-j='0']")
        browser.move(1, 1)  # off the explorer: the pinned choice stays
        _check_lit(browser.evaluate(READ_SOURCES % 0), heads[1][1])
        grid = browser.evaluate(
            "[...document.querySelectorAll('.al-explorer')[0].querySelectorAll('.al-grid td')].map(td => +td.title)"
        )
        np.testing.assert_allclose(np.reshape(grid, heads[1].shape), heads[1], atol=5e-4)


def test_thai_marks_show_on_a_dotted_circle_and_without_javascript_the_grid_is_a_heatmap():
    source, output = "ชิ่", "Chi"
    assert [character_label(c) for c in source + " "] == ["ช", "\u25cc\u0e34", "\u25cc\u0e48", "␣"]
    weights = np.array([[1.0, 0.0, 0.0], [0.2, 0.8, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    page = attention_explorer(Attended(source, output, weights)).html
    cells = re.findall(r"<td data-t='(\d)' data-j='(\d)' style='background:rgba\(217,95,2,([\d.]+)\)'", page)
    assert [(int(t), int(j), float(w)) for t, j, w in cells] == [
        (t, j, weights[t, j]) for t in range(4) for j in range(3)
    ]
    assert "<th class='al-ch al-out' data-t='3'>&lt;/s&gt;</th>" in page
    assert "font-face" in page  # the Thai font travels with the view: nothing to fetch
    with pytest.raises(ValueError, match="attention of shape"):
        attention_explorer(Attended(source, output, weights[:, :2]))


class _Hypotheses(HTMLParser):
    """The beam view's hypotheses (per step) and outputs, read from its HTML as a browser would."""

    def __init__(self):
        super().__init__()
        self.steps, self.outputs = {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "span" and "al-hyp" in a.get("class", ""):
            self.steps.setdefault(int(a["data-step"]), []).append(
                (a["data-text"], float(a["data-log-p"]), a["data-kept"] == "1", a["data-ended"] == "1",
                 "al-best" in a["class"], "al-greedy" in a["class"])
            )  # fmt: skip
        if tag == "li" and "data-log-p" in a:
            self.outputs.append((a["data-text"], float(a["data-log-p"])))


@pytest.mark.parametrize("model_name", ["homework", "luong-additive"])
def test_the_beam_view_shows_the_hypotheses_beam_search_kept_and_pruned(model_name, lab2, homework):
    from labs.date_translation.task import TASK as LAB2
    from labs.name_transliteration.task import TASK as HOMEWORK

    if model_name == "homework":
        (model, vocabs), steps, text = homework, HOMEWORK.max_output_length, "ปวีณา รัตนพงศ์"
    else:
        (model, vocabs), steps, text = (lab2[0][model_name], lab2[1]), LAB2.max_output_length, "3/5/07"
    trace = decoding.beam_trace(text, vocabs, seq2seq.stepper(model, steps=steps), beam=3, max_length=steps)
    # the trace is of the search translate runs: same outputs, same order
    ranked = _translation(model, vocabs, text, steps, beam=3)
    assert [o for o, _ in trace.outputs] == ranked.alternatives
    assert trace.greedy[0] == _translation(model, vocabs, text, steps).output
    for step, candidates in enumerate(trace.steps):
        kept = [c for c in candidates if c[3]]
        assert 1 <= len(kept) <= 3 and all(c[3] for c in candidates[: len(kept)])  # kept first
        scores = [c[2] for c in candidates]
        assert scores == sorted(scores, reverse=True)  # best first, kept and pruned alike
        if step + 1 < len(trace.steps):  # each hypothesis of the next step grew from one kept here
            grown = {c[0] for c in kept}
            assert all(c[0][:-1] in grown or (c[4] and c[0] in grown) for c in trace.steps[step + 1])
    final_kept = sorted((c for c in trace.steps[-1] if c[3]), key=lambda c: -c[2])
    assert [c[0] for c in final_kept] == [o for o, _ in trace.outputs]
    assert [c[1] for c in final_kept] == pytest.approx([p for _, p in trace.outputs])

    parsed = _Hypotheses()
    parsed.feed(beam_view(trace).html)
    assert parsed.outputs == trace.outputs
    assert len(parsed.steps) == len(trace.steps)
    for step, candidates in enumerate(trace.steps):
        shown = parsed.steps[step]
        assert [(t, p, k, e) for t, p, k, e, *_ in shown] == [(t, p, k, e) for t, p, _, k, e in candidates]
        best = trace.outputs[0][0]
        for t, _, kept, ended, framed, _ in shown:
            assert framed == (kept and best.startswith(t) and (not ended or t == best))


def test_beam_search_with_a_trace_decodes_what_it_decodes_without_one(homework):
    from labs.name_transliteration.task import TASK

    model, vocabs = homework
    texts = ["สมชาย ใจดี", "ธนากร ศรีสุข", "ก"]
    make = seq2seq.stepper(model, steps=TASK.max_output_length)
    step, state = make(vocabs["source"].encode_batch(texts, unknown="unk"))
    plain = decoding.beam_search(step, state, 3, beam_width=3, max_length=TASK.max_output_length)
    trace = []
    step, state = make(vocabs["source"].encode_batch(texts, unknown="unk"))
    traced = decoding.beam_search(
        step, state, 3, beam_width=3, max_length=TASK.max_output_length, trace=trace
    )
    for a, b in zip(plain, traced):
        np.testing.assert_array_equal(a.tokens, b.tokens)
        np.testing.assert_allclose(a.log_probs, b.log_probs)
    assert trace and trace[0].prefixes.shape == (3, 6, 1)
    with pytest.raises(InputError, match="beam must be a whole number of 2 or more"):
        decoding.beam_trace("ก", vocabs, make, beam=1, max_length=TASK.max_output_length)


def test_the_beam_view_says_where_beam_search_left_the_greedy_path():
    trace = decoding.BeamTrace(
        "x",
        2,
        [
            [("a", -0.4, -0.4, True, False), ("b", -1.1, -1.1, True, False)],
            [
                ("bc", -1.2, -0.6, True, False),
                ("ad", -2.0, -1.0, True, False),
                ("ae", -3.0, -1.5, False, False),
            ],
            [("bc", -1.3, -0.43, True, True), ("ad", -2.1, -0.7, True, True)],
        ],
        [("bc", -1.3), ("ad", -2.1)],
        ("ad", -2.1),
    )
    page = beam_view(trace).html
    summary = re.search(r"<p class='al-summary'>(.*?)</p>", page).group(1)
    assert "Greedy decoding writes &#x27;ad&#x27;" in summary and "writes &#x27;bc&#x27;" in summary
    assert "part at character 1 (step 1)" in summary and "ranks first from step 2 on" in summary
    assert page.count("al-pruned") == 2  # the struck-through one, and the class in the style
    parsed = _Hypotheses()
    parsed.feed(page)
    assert [h[0] for h in parsed.steps[0] if h[5]] == ["a"] and [h[0] for h in parsed.steps[0] if h[4]] == [
        "b"
    ]


def test_an_explorer_without_attention_says_so(lab2):
    from labs.date_translation.task import TASK

    models, vocabs = lab2
    translation = decoding.Translation("1/2/03", "2003-01-02", None, ["2003-01-02"])
    with pytest.raises(ValueError, match="no attention"):
        explore(models["luong-additive"], vocabs, translation, steps=TASK.max_output_length)


def test_a_flat_row_still_lists_the_heaviest_weights_and_leaving_clears_the_readout(tmp_path):
    source, output = "abcdefghijklmnopqrstuvwxy", "0"
    flat = np.full((2, len(source)), 1 / len(source))  # 0.04 each: none lit, the three heaviest listed
    flat[0, 7] += 0.001
    page = attention_explorer(Attended(source, output, flat)).save(tmp_path / "flat.html")
    assert page == tmp_path / "flat.html" and page.is_file()  # save says where it wrote
    readout = "document.querySelector('.al-readout').textContent"
    with Browser(chromium(), tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        hint = browser.evaluate(readout)
        assert hint.startswith("Point at")
        browser.move_to(".al-text .al-out[data-t='0']")
        read = browser.evaluate(readout)
        assert read == "Writing \u201c0\u201d, the model read: h 0.04, a 0.04, b 0.04"
        assert browser.evaluate(READ_SOURCES % 0)[7][2] is False  # nothing reaches 0.05: nothing lit
        browser.move(1200, 1200)  # off the explorer (it is as wide as its grid, not the page)
        assert browser.evaluate(readout) == hint
        assert browser.evaluate("document.querySelectorAll('.al-explorer [data-weight]').length") == 0
        # a tapped character stays, says so, and lets go on a second tap
        browser.click(".al-text .al-out[data-t='0']")
        browser.move(1200, 1200)
        assert browser.evaluate(readout).endswith("(pinned: tap it again to let go)")
        browser.click(".al-text .al-out[data-t='0']")
        browser.move(1200, 1200)
        assert browser.evaluate(readout) == hint
        # a finger: the first tap pins, the second lets go and the explorer is back to its hint
        lit = "document.querySelectorAll('.al-explorer [data-weight]').length"
        browser.tap(".al-text .al-out[data-t='1']")
        assert browser.evaluate(readout).endswith("(pinned: tap it again to let go)") and browser.evaluate(
            lit
        )
        browser.tap(".al-text .al-out[data-t='1']")
        assert browser.evaluate(readout) == hint and browser.evaluate(lit) == 0


def test_pointing_at_a_hypothesis_outlines_only_the_ones_it_grew_from(tmp_path):
    # "a </s>" ended at step 2 and stays in the beam; "abc" grew from "a" (step 1) and "ab" (step 2), never
    # from the finished "a"
    trace = decoding.BeamTrace(
        "x",
        2,
        [
            [("a", -0.1, -0.1, True, False), ("b", -1.0, -1.0, True, False)],
            [("a", -0.3, -0.15, True, True), ("ab", -0.4, -0.2, True, False), ("bc", -2.0, -1.0, False, False)],
            [("a", -0.3, -0.15, True, True), ("ab c", -0.8, -0.2, True, True), ("ab d", -3.0, -0.75, False, False)],
        ],
        [("a", -0.3), ("ab c", -0.8)],
        ("a", -0.3),
    )  # fmt: skip
    page = beam_view(trace)
    assert ">ab␣c &lt;/s&gt; <small>" in page.html  # a space is seen, not a gap
    assert "log p -0.800, score -0.200" in page.html  # the outputs with what they were ranked by
    path = page.save(tmp_path / "beam.html")
    outlined = "[...document.querySelectorAll('.al-path')].map(h => h.dataset.step + ':' + h.dataset.text)"
    with Browser(chromium(), tmp_path / "profile") as browser:
        browser.open(path.as_uri())
        browser.move_to(".al-hyp[data-step='2'][data-text='ab c']")
        assert sorted(browser.evaluate(outlined)) == ["0:a", "1:ab", "2:ab c"]
        browser.move_to(".al-hyp[data-step='2'][data-text='a']")  # finished at step 2: not "a" ended at 1
        assert sorted(browser.evaluate(outlined)) == ["0:a", "2:a"]


@pytest.mark.parametrize(
    "call, says",
    [
        (lambda m, v, t: explore(m, v, [t, t], steps=11), "one translation, got a list of 2"),
        (lambda m, v, t: explore(m, v, t.source, steps=11), "got str"),
        (lambda m, v, t: explore(m, v, t, steps=0), "steps must be"),
        (lambda m, v, t: explore(m, v, t, steps="11"), "steps must be"),
        (lambda m, v, t: explore(m, v, t, steps=3), "shorter than the output"),
        (lambda m, v, t: beam_search_view(m, v, t, steps=11), "pass its .source"),
        (lambda m, v, t: beam_search_view(m, v, [t.source], steps=11), "one text to decode"),
        (lambda m, v, t: beam_search_view(m, v, "", steps=11), "empty"),
        (lambda m, v, t: beam_search_view(m, v, "   ", steps=11), "empty"),
        (lambda m, v, t: beam_search_view(m, v, t.source, beam=2.5, steps=11), "beam must be"),
        (lambda m, v, t: beam_search_view(m, v, t.source, beam=1, steps=11), "whole number of 2 or more"),
        (lambda m, v, t: beam_search_view(m, v, t.source, steps=None), "steps must be"),
        (lambda m, v, t: beam_search_view(m, v, "1" * 300, steps=11), "reads at most 256"),
        (lambda m, v, t: translate(m, v, [""]), "text 1 of 1 is ''"),
        (lambda m, v, t: translate(m, v, "3/5/07"), "give a list of texts"),
        (lambda m, v, t: translate(m, v, ["3/5/07"], beam=0), "beam must be"),
    ],
)
def test_a_students_mistake_in_the_views_is_one_sentence(call, says, transformer):
    model, vocabs = transformer
    translation = translate(model, vocabs, ["3/5/07"])[0]
    assert len(translation.output) > 3
    with pytest.raises(InputError, match=re.escape(says)):
        call(model, vocabs, translation)
