"""Lab 2: the attention model, its baseline, the decoders, the per-format table and the heatmaps."""

import json

import numpy as np
import pytest

from labs.common import seq2seq
from labs.common.decoding import decode_steps
from labs.common.errors import InputError
from labs.common.pipeline import translation_arrays
from labs.common.seq2seq import attention_model as build_attention_model
from labs.date_translation import evaluate
from labs.date_translation.config import DateTranslationConfig
from labs.date_translation.data import sample_pairs, vocabularies
from labs.date_translation.model import build_model
from labs.date_translation.task import TASK
from labs.date_translation.train import load_run, train
from labs.date_translation.translate import translate

VOCABS = vocabularies()
SOURCES = ["27 January 2018", "๒๗ ม.ค. ๖๑", "Saturday, January 27, 2018", "1/27/18"]


@pytest.fixture(scope="module")
def model():
    import keras

    keras.utils.set_random_seed(0)
    return build_model(DateTranslationConfig.tiny(), len(VOCABS["source"]), len(VOCABS["target"]))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("translator")
    return train(DateTranslationConfig.tiny(), out_dir=out, verbose=0), out


def _arrays(texts, length=None):
    pairs = [{"source": s, "target": "2018-01-27"} for s in texts]
    return translation_arrays(pairs, VOCABS, source_length=length)


@pytest.mark.parametrize("attention", ["luong-additive", "none"])
def test_model_signature(attention):
    model = build_model(
        DateTranslationConfig.tiny(attention=attention), len(VOCABS["source"]), len(VOCABS["target"])
    )
    source, target_in, _ = _arrays(SOURCES)
    probabilities = np.asarray(model([source, target_in]))
    assert probabilities.shape == (len(SOURCES), TASK.max_output_length, len(VOCABS["target"]))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-5)


def test_padding_does_not_change_the_outputs(model):
    short_source, target_in, _ = _arrays(SOURCES)
    long_source, _, _ = _arrays(SOURCES, length=short_source.shape[1] + 9)
    np.testing.assert_allclose(
        np.asarray(model([short_source, target_in])), np.asarray(model([long_source, target_in])), atol=1e-5
    )


def test_attention_weights_sum_to_one_over_the_real_source_positions(model):
    source, target_in, _ = _arrays(SOURCES, length=40)
    _, weights = build_attention_model(model)([source, target_in])
    weights = np.asarray(weights)  # (batch, T, S)
    real = source != 0
    np.testing.assert_allclose((weights * real[:, None, :]).sum(-1), 1.0, rtol=1e-5)
    assert np.abs(weights * ~real[:, None, :]).max() < 1e-6


def test_step_decoder_agrees_with_the_full_model_on_the_same_prefix(model):
    source, target_in, _ = _arrays(SOURCES)
    full, full_weights = (np.asarray(x) for x in build_attention_model(model)([source, target_in]))
    step, state = seq2seq.step_function(model, source)
    for t in range(target_in.shape[1]):
        probabilities, state, weights = step(target_in[:, t], state)
        np.testing.assert_allclose(probabilities, full[:, t], atol=1e-5)
        np.testing.assert_allclose(weights, full_weights[:, t], atol=1e-5)


def test_step_decoding_and_full_rerun_give_identical_outputs(tiny_run):
    run, _ = tiny_run
    sources = [p["source"] for p in sample_pairs(60, seed=5, split="dev")]
    fast = translate(run.model, run.vocabs, sources)
    slow = translate(run.model, run.vocabs, sources, step_decoding=False)
    assert [t.output for t in fast] == [t.output for t in slow]
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a.attention, b.attention, atol=1e-5)


def test_beam_width_one_is_greedy(tiny_run):
    run, _ = tiny_run
    sources = [p["source"] for p in sample_pairs(40, seed=6, split="dev")]
    from labs.common.decoding import beam_search

    source = VOCABS["source"].encode_batch(sources)
    step, state = seq2seq.step_function(run.model, source)
    greedy = decode_steps(step, state, len(sources), max_length=TASK.max_output_length, greedy=True)
    single = beam_search(step, state, len(sources), beam_width=1, max_length=TASK.max_output_length)[0]
    np.testing.assert_array_equal(single.tokens, greedy.tokens)
    assert [t.output for t in translate(run.model, run.vocabs, sources, beam=1)] == [
        VOCABS["target"].decode(row) for row in greedy.tokens
    ]
    beams = translate(run.model, run.vocabs, sources[:5], beam=3)
    assert all(len(t.alternatives) == 3 and t.alternatives[0] == t.output for t in beams)


def test_translation_attention_has_one_row_per_output_character_and_end(tiny_run):
    run, _ = tiny_run
    result = translate(run.model, run.vocabs, ["27 January 2018"])[0]
    assert result.attention.shape[1] == len("27 January 2018")
    assert result.attention.shape[0] <= len(result.output) + 1


def test_per_format_per_locale_and_per_field_tables():
    rows = [
        {"source": "a", "target": "2018-01-27", "format_id": "gb_short", "locale": "en_GB"},
        {"source": "bb", "target": "2018-01-27", "format_id": "gb_short", "locale": "en_GB"},
        {"source": "ccc", "target": "1999-12-31", "format_id": "th_medium_be", "locale": "th_TH"},
        {"source": "dddd", "target": "1999-12-31", "format_id": "us_full", "locale": "en_US"},
    ]
    predictions = ["2018-01-27", "2018-01-28", "1999-12-31", "nonsense"]
    table = evaluate.results_table(rows, predictions)
    per_format = evaluate.breakdown(table, "format_id")
    assert per_format.loc["gb_short", "exact_match"] == 0.5 and per_format.loc["gb_short", "examples"] == 2
    assert per_format.index[0] == "us_full"  # worst first
    assert evaluate.breakdown(table, "locale")["exact_match"].to_dict() == {
        "en_US": 0.0,
        "en_GB": 0.5,
        "th_TH": 1.0,
    }
    assert evaluate.field_accuracy(predictions, table["target"].tolist()) == {
        "year": 0.75,
        "month": 0.75,
        "day": 0.5,
    }
    summary = evaluate.summary(table)
    assert summary["exact_match"] == 0.5 and summary["per_locale"]["th_TH"] == 1.0
    by_length = evaluate.compare_by_length({"attention": table, "baseline": table.assign(correct=False)})
    assert list(by_length.columns) == ["attention", "baseline", "examples"]


def test_attention_plot_has_thai_labels(tmp_path):
    from labs.common.fonts import use_thai_font
    from labs.common.plots import plot_attention

    assert use_thai_font() is not None
    source, output = "๒๗ ม.ค. ๖๑", "2018-01-27"
    figure = plot_attention(
        source,
        output,
        np.full((len(output) + 1, len(source)), 1 / len(source)),
        path=tmp_path / "attention.png",
    )
    labels = [label.get_text() for label in figure.axes[0].get_xticklabels()]
    assert labels[:2] == ["๒", "๗"] and "ม" in labels
    assert (tmp_path / "attention.png").read_bytes()[:4] == b"\x89PNG"
    # Every Thai glyph is really in the font matplotlib picks for it: no empty boxes.
    from fontTools.ttLib import TTFont
    from matplotlib import font_manager

    path = font_manager.findfont(font_manager.FontProperties(family=use_thai_font()))
    cmap = TTFont(path, lazy=True).getBestCmap()
    assert all(ord(c) in cmap for c in source if c.strip())


def test_without_a_thai_font_labels_fall_back_to_code_points():
    from labs.common.fonts import printable_label

    assert printable_label("ก", None) == "U+0E01"
    assert printable_label("ก", "Noto Sans Thai") == "ก"
    assert printable_label(" ", "Noto Sans Thai") == "␣"


def test_run_folder_round_trip(tiny_run):
    run, out = tiny_run
    assert {p.name for p in out.iterdir()} >= {
        "model.keras",
        "vocab.json",
        "metrics.json",
        "training_curve.png",
    }
    model, vocabs, config = load_run(out)
    assert config == DateTranslationConfig.tiny()
    assert [t.output for t in translate(model, vocabs, SOURCES)] == [
        t.output for t in translate(run.model, run.vocabs, SOURCES)
    ]


def test_config_rejects_bad_values():
    with pytest.raises(InputError, match="attention_units must be 1 or more"):
        DateTranslationConfig(attention_units=0)


def test_cli_train_translate_evaluate(cli, tmp_path):
    attention, baseline = tmp_path / "attention", tmp_path / "baseline"
    assert cli("train", "date-translation", "--tiny", "--quiet", "--out", str(attention)).returncode == 0
    result = cli("train", "date-translation", "--tiny", "--quiet", "--no-attention", "--out", str(baseline))
    assert result.returncode == 0, result.stderr
    assert json.loads((baseline / "metrics.json").read_text())["config"]["attention"] == "none"
    translated = cli(
        "translate",
        "--model",
        str(attention),
        "27 January 2018",
        "๒๗ ม.ค. ๖๑",
        "--beam",
        "2",
        "--plot",
        str(tmp_path / "heat.png"),
    )
    assert translated.returncode == 0, translated.stderr
    assert "27 January 2018  ->" in translated.stdout and (tmp_path / "heat-2.png").is_file()
    no_plot = cli("translate", "--model", str(baseline), "27 January 2018", "--plot", str(tmp_path / "x.png"))
    assert no_plot.returncode == 2 and "without attention" in no_plot.stderr
    evaluated = cli(
        "evaluate", "date-translation", "--model", str(attention), "--baseline", str(baseline), "--n", "200"
    )
    assert evaluated.returncode == 0, evaluated.stderr
    assert "exact match per format" in evaluated.stdout and "by source length" in evaluated.stdout
    for name, folder in (("attention", attention), ("baseline", baseline)):  # each run, by its folder
        assert f"note: the {name} model ({folder}) trained on 2,000 examples, as a --tiny" in evaluated.stdout
    assert json.loads((attention / "evaluation.json").read_text())["examples"] == 200
    bad = cli("translate", "--model", str(attention), "x", "--beam", "0")
    assert bad.returncode == 2 and "argument --beam: must be 1 or more" in bad.stderr
