"""Lab 2's attention family: every variant keeps the translation signature, masks padding, and decodes.

Models here are untrained (tiny, seeded): the properties tested hold for any weights.
"""

import json

import numpy as np
import pytest

from labs.common import seq2seq
from labs.common.errors import InputError
from labs.common.pipeline import translation_arrays
from labs.date_translation.config import ATTENTIONS, CELLS, DateTranslationConfig
from labs.date_translation.data import vocabularies
from labs.date_translation.model import attention_model, build_model
from labs.date_translation.task import TASK
from labs.date_translation.translate import translate

VOCABS = vocabularies()
SOURCES = ["27 January 2018", "๒๗ ม.ค. ๖๑", "Saturday, January 27, 2018", "1/27/18"]
TARGETS = ["2018-01-27", "2018-01-27", "2018-01-27", "2018-01-27"]


def _build(attention, cell="lstm"):
    import keras

    keras.utils.set_random_seed(0)
    return build_model(
        DateTranslationConfig.tiny(attention=attention, cell=cell),
        len(VOCABS["source"]),
        len(VOCABS["target"]),
    )


@pytest.fixture(scope="module")
def models():
    return {attention: _build(attention) for attention in ATTENTIONS}


def _arrays(length=None):
    pairs = [{"source": s, "target": t} for s, t in zip(SOURCES, TARGETS)]
    return translation_arrays(pairs, VOCABS, source_length=length)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_every_variant_keeps_the_translation_signature_for_any_prefix_length(models, attention):
    source, target_in, _ = _arrays()
    for length in (1, 4, TASK.max_output_length):
        probabilities = np.asarray(models[attention]([source, target_in[:, :length]]))
        assert probabilities.shape == (len(SOURCES), length, len(VOCABS["target"]))
        np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_source_padding_does_not_change_any_variants_outputs(models, attention):
    short_source, target_in, _ = _arrays()
    long_source, _, _ = _arrays(length=short_source.shape[1] + 9)
    np.testing.assert_allclose(
        np.asarray(models[attention]([short_source, target_in])),
        np.asarray(models[attention]([long_source, target_in])),
        atol=1e-5,
    )


@pytest.mark.parametrize("attention", [a for a in ATTENTIONS if a != "none"])
def test_weights_sum_to_one_over_the_real_source_positions(models, attention):
    source, target_in, _ = _arrays(length=40)
    _, weights = attention_model(models[attention])([source, target_in])
    weights = np.asarray(weights)  # (B, T, S)
    assert weights.shape == (len(SOURCES), TASK.max_output_length, 40)
    real = source != 0
    np.testing.assert_allclose((weights * real[:, None, :]).sum(-1), 1.0, rtol=1e-4)
    assert np.abs(weights * ~real[:, None, :]).max() < 1e-6  # nothing on padding


@pytest.mark.parametrize("cell", CELLS)
def test_the_bahdanau_step_decoder_equals_its_unrolled_model_on_the_same_prefix(cell):
    model = _build("bahdanau", cell)
    source, target_in, _ = _arrays()
    full = np.asarray(model([source, target_in]))  # (B, T, V), teacher-forced
    step, state = seq2seq.step_function(model, source)
    for t in range(TASK.max_output_length):
        probabilities, state, attention = step(target_in[:, t], state)
        np.testing.assert_allclose(probabilities, full[:, t], atol=1e-5)
        assert attention.shape == (len(SOURCES), source.shape[1])


def test_the_transformer_causal_mask_holds(models):
    """Changing a later target character changes nothing before it."""
    source, target_in, _ = _arrays()
    changed = target_in.copy()
    changed[:, 6:] = (changed[:, 6:] % (len(VOCABS["target"]) - 4)) + 4  # other characters from position 6 on
    before = np.asarray(models["transformer"]([source, target_in]))
    after = np.asarray(models["transformer"]([source, changed]))
    np.testing.assert_allclose(before[:, :6], after[:, :6], atol=1e-5)
    assert np.abs(before[:, 6:] - after[:, 6:]).max() > 1e-4  # and the later ones do change


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_step_decoding_beam_search_and_the_full_rerun_agree(models, attention):
    model = models[attention]
    stepped = translate(model, VOCABS, SOURCES)
    rerun = translate(model, VOCABS, SOURCES, step_decoding=False)
    assert [t.output for t in stepped] == [t.output for t in rerun]
    beams = translate(model, VOCABS, SOURCES, beam=3)
    assert all(len(t.alternatives) == 3 for t in beams)
    if attention != "none":
        for t in stepped:
            assert t.attention.shape == (
                min(len(t.output) + 1, TASK.max_output_length),
                len(t.source),
            )  # </s> if written
            np.testing.assert_allclose(t.attention.sum(-1), 1.0, rtol=1e-4)


@pytest.mark.parametrize("attention, architecture_points", [("bahdanau", 10), ("transformer", 0)])
def test_variant_bundles_grade_and_the_rubric_still_requires_additive_attention(
    models, attention, architecture_points, tmp_path
):
    """Bahdanau's unrolled decoder is graded by its signature and has AdditiveAttention; the Transformer has
    none."""
    from autograder.batch import grade_folder
    from autograder.hidden import make_hidden_set
    from autograder.rubric import load_rubric
    from labs.common.submission import export

    secret = tmp_path / "secret.txt"
    secret.write_text("a-course-secret-0123456789abcdef")
    (tmp_path / "subs").mkdir()
    export(
        models[attention],
        VOCABS,
        task=TASK.name,
        student_id="6512345678",
        out=tmp_path / "subs" / "6512345678.zip",
    )
    make_hidden_set(TASK.name, secret, tmp_path / "hidden", n=30)
    record = grade_folder(
        tmp_path / "subs",
        load_rubric(task=TASK.name),
        tmp_path / "hidden",
        tmp_path / "grades",
        progress=False,
    )[0]
    assert record["status"] == "graded", record["message"]
    assert record["lines"][0]["points"] == architecture_points
    assert record["examples"] and record["examples"][0]["attention"] is not None  # heatmaps in the feedback


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_every_variant_passes_the_allow_list_and_reloads_in_safe_mode_with_the_same_outputs(
    models, attention, tmp_path
):
    import zipfile

    import keras

    from autograder.allowlist import check_config

    model = models[attention]
    model.save(tmp_path / "model.keras")
    with zipfile.ZipFile(tmp_path / "model.keras") as archive:
        verdict = check_config(json.loads(archive.read("config.json")))
    assert verdict.allowed, verdict.message
    assert ("AdditiveAttention" in verdict.classes) == (attention in ("bahdanau", "luong-additive"))
    reloaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    source, target_in, _ = _arrays()
    for rows in (slice(0, 1), slice(None)):  # a batch of one, and of four
        np.testing.assert_allclose(
            np.asarray(reloaded([source[rows], target_in[rows]])),
            np.asarray(model([source[rows], target_in[rows]])),
            atol=1e-6,
        )
    assert [t.output for t in translate(reloaded, VOCABS, SOURCES)] == [
        t.output for t in translate(model, VOCABS, SOURCES)
    ]


def test_run_folders_saved_before_the_variants_load_their_attention_setting():
    assert DateTranslationConfig.from_dict({"attention": True}).attention == "luong-additive"
    assert DateTranslationConfig.from_dict({"attention": False}).attention == "none"
    assert DateTranslationConfig.from_dict({"attention": True, "attention_units": 30}).attention_units == 30


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"attention": "luong"}, "attention must be one of"),
        ({"cell": "rnn"}, "cell must be one of"),
        ({"attention": "multi-head", "attention_units": 30}, "multiple of heads"),
    ],
)
def test_a_bad_variant_setting_is_refused_with_a_message(bad, message):
    from labs.common.errors import InputError

    with pytest.raises(InputError, match=message):
        DateTranslationConfig(**bad)


def test_the_command_line_passes_the_variant_to_the_configuration_and_refuses_an_unknown_one(cli, tmp_path):
    from labs import tasks
    from labs.cli import _build_parser, _config

    refused = cli("train", "date-translation", "--tiny", "--attention", "luong", "--out", str(tmp_path / "x"))
    assert (
        refused.returncode == 2
        and "invalid choice: 'luong'" in refused.stderr
        and "Traceback" not in refused.stderr
    )
    parser = _build_parser()
    task = tasks.get("date-translation")
    config = _config(
        parser.parse_args(
            [
                "train",
                "date-translation",
                "--tiny",
                "--attention",
                "scaled-dot",
                "--cell",
                "gru",
                "--out",
                "x",
            ]
        ),
        task,
    )
    assert (config.attention, config.cell, config.units) == (
        "scaled-dot",
        "gru",
        DateTranslationConfig.tiny().units,
    )
    assert (
        _config(
            parser.parse_args(["train", "date-translation", "--no-attention", "--out", "x"]), task
        ).attention
        == "none"
    )


def cosine_keys(config, h):
    """A toy variant's keys: h_j scaled to unit length, (B, S, 2u)."""
    import keras

    return keras.layers.UnitNormalization(name="unit_keys")(h)


def cosine_score(config, s, memory):
    """A toy variant's score: e_tj = cos(s_t, h_j), through the same masked softmax and weighted sum."""
    import keras

    query = keras.layers.UnitNormalization(name="unit_query")(s)
    attention = keras.layers.Attention(score_mode="dot", name="attention")
    return attention(
        [query, memory["h"], memory["keys"]], mask=[None, memory["source_mask"]], return_attention_scores=True
    )


def test_a_new_variant_is_one_record_that_the_config_the_cli_the_model_and_decoding_read(capsys):
    from labs.date_translation import variants
    from labs.tasks import Ref

    toy = variants.Variant(
        "cosine",
        "e_tj = cos(s_t, h_j)",
        keys=Ref("tests.test_attention_variants:cosine_keys"),
        score=Ref("tests.test_attention_variants:cosine_score"),
    )
    variants.register(toy)
    try:
        with pytest.raises(ValueError, match="already a variant"):
            variants.register(toy)
        config = DateTranslationConfig.tiny(attention="cosine")
        assert config.attends
        from labs.cli import main

        with pytest.raises(SystemExit) as shown:  # --help lists it: the choices are the table itself
            main(["train", "date-translation", "--help"])
        assert shown.value.code == 0
        assert "cosine" in capsys.readouterr().out
        model = _build("cosine")
        assert model.get_layer("encoder").get_layer("unit_keys") is not None
        source, target_in, _ = _arrays()
        probabilities = np.asarray(model([source, target_in]))
        assert probabilities.shape == (len(SOURCES), TASK.max_output_length, len(VOCABS["target"]))
        stepped = translate(model, VOCABS, SOURCES)
        rerun = translate(model, VOCABS, SOURCES, step_decoding=False)
        assert [t.output for t in stepped] == [t.output for t in rerun]
        assert all(t.attention is not None for t in stepped)
    finally:
        del variants.VARIANTS["cosine"]
    with pytest.raises(InputError, match="attention must be one of"):
        DateTranslationConfig.tiny(attention="cosine")


def test_attention_is_a_variant_name_not_a_boolean():
    with pytest.raises(InputError, match="true and false were the old form"):
        DateTranslationConfig(attention=True)
    with pytest.raises(InputError, match="attention must be one of"):
        DateTranslationConfig(attention=False)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_the_greedy_loop_written_out_writes_what_the_engine_writes(models, attention):
    from labs.date_translation.translate import greedy_translate

    for text in SOURCES:
        assert (
            greedy_translate(models[attention], VOCABS, text)
            == translate(models[attention], VOCABS, [text])[0].output
        )


@pytest.mark.parametrize("attention", ["luong-additive", "bahdanau"])
def test_run_folders_whose_memory_is_a_list_still_load_and_decode(attention):
    """Run folders saved before the encoder's memory was named ({h, keys, source_mask}) hold it as a list."""
    from labs.date_translation.train import load_run
    from tests.conftest import REPO_ROOT

    model, vocabs, config = load_run(REPO_ROOT / "tests" / "fixtures" / "lab2-runs-list-memory" / attention)
    assert config.attention == attention
    assert isinstance(model.get_layer("encoder").output["memory"], list)
    stepped = translate(model, vocabs, SOURCES, beam=2)
    rerun = translate(model, vocabs, SOURCES, beam=2, step_decoding=False)
    assert [t.alternatives for t in stepped] == [t.alternatives for t in rerun]
    assert all(t.attention is not None for t in stepped)


def test_every_record_names_functions_that_exist_and_the_cli_offers_every_variant():
    from labs.date_translation import variants

    for variant in variants.VARIANTS.values():
        for ref in (variant.keys, variant.score, variant.encoder, variant.decoder):
            if ref is not None:
                assert callable(ref.resolve()), ref.path
        assert variant.formula
    import argparse

    from labs.cli import _build_parser

    def commands(parser):
        return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices

    train = commands(commands(_build_parser())["train"])["date-translation"]
    attention = next(a for a in train._actions if a.dest == "config_attention")
    assert tuple(attention.choices) == ATTENTIONS
