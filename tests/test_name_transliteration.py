"""Homework 3.1: the key-value attention layer, the reference model, its metrics, the self-test."""

import importlib.util
import json

import numpy as np
import pytest

from homework.kv_attention import KeyValueAttention
from labs.common import seq2seq
from labs.common.errors import InputError
from labs.common.files import read_csv
from labs.common.pipeline import translation_arrays, translation_batches
from labs.common.seq2seq import attention_model as build_attention_model
from labs.name_transliteration import evaluate, selftest
from labs.name_transliteration.config import NameTransliterationConfig
from labs.name_transliteration.data import sample_names, vocabularies
from labs.name_transliteration.model import build_model
from labs.name_transliteration.task import TASK
from labs.name_transliteration.train import load_run, train
from labs.name_transliteration.transliterate import transliterate
from tests.conftest import REPO_ROOT

VOCABS = vocabularies()
NAMES = ["สมชาย ใจดี", "ปวีณา รัตนพงศ์", "ธนากร ศรีสุข", "อิสมาแอ บุตรพรม"]


@pytest.fixture(scope="module")
def model():
    import keras

    keras.utils.set_random_seed(0)
    return build_model(NameTransliterationConfig.tiny(), len(VOCABS["source"]), len(VOCABS["target"]))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("names")
    return train(NameTransliterationConfig.tiny(), out_dir=out, verbose=0), out


def _arrays(names, length=None):
    return translation_arrays(
        [{"source": n, "target": "Somchai Jaidee"} for n in names], VOCABS, source_length=length
    )


# ---- the layer ----


@pytest.mark.parametrize("score", ["dot", "additive"])
def test_layer_shapes_and_weights(score):
    rng = np.random.default_rng(0)
    query, memory = rng.normal(size=(2, 3, 6)).astype("float32"), rng.normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[True] * 5, [True, True, False, False, False]])
    context, weights = KeyValueAttention(4, 7, score=score)(
        query, memory, memory_mask=mask, return_attention_scores=True
    )
    weights = np.asarray(weights)
    assert np.asarray(context).shape == (2, 3, 7) and weights.shape == (2, 3, 5)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert np.abs(weights[1, :, 2:]).max() < 1e-7


def test_keys_only_score_and_values_only_build_the_context():
    """Zeroing the value matrix leaves the weights alone; zeroing the key matrix makes them uniform."""
    rng = np.random.default_rng(1)
    query, memory = rng.normal(size=(1, 2, 6)).astype("float32"), rng.normal(size=(1, 4, 8)).astype("float32")
    layer = KeyValueAttention(4, 3)
    context, weights = layer(query, memory, return_attention_scores=True)
    layer.value_kernel.assign(np.zeros((8, 3), "float32"))
    zero_context, same_weights = layer(query, memory, return_attention_scores=True)
    np.testing.assert_allclose(np.asarray(same_weights), np.asarray(weights), atol=1e-6)
    assert np.abs(np.asarray(zero_context)).max() == 0 and np.abs(np.asarray(context)).max() > 0
    layer.key_kernel.assign(np.zeros((8, 4), "float32"))
    np.testing.assert_allclose(
        np.asarray(layer(query, memory, return_attention_scores=True)[1]), 0.25, atol=1e-6
    )


def test_layer_config_round_trips_and_rejects_bad_arguments():
    layer = KeyValueAttention(16, 32, score="additive", name="kv")
    copy = KeyValueAttention.from_config(layer.get_config())
    assert (copy.key_dim, copy.value_dim, copy.score, copy.name) == (16, 32, "additive", "kv")
    with pytest.raises(ValueError, match="unknown score 'cosine'; choose one of: dot, additive"):
        KeyValueAttention(8, score="cosine")
    with pytest.raises(ValueError, match="key_dim must be 1 or more"):
        KeyValueAttention(0)


# ---- the model ----


def test_model_signature_and_padding(model):
    source, target_in, _ = _arrays(NAMES)
    probabilities = np.asarray(model([source, target_in]))
    assert probabilities.shape == (len(NAMES), target_in.shape[1], len(VOCABS["target"]))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-5)
    longer, _, _ = _arrays(NAMES, length=source.shape[1] + 7)
    np.testing.assert_allclose(np.asarray(model([longer, target_in])), probabilities, atol=1e-5)


def _steps_agree_with_the_whole(model) -> np.ndarray:
    """Decode NAMES' teacher-forced targets one step at a time; each step's p_t and a_t must be the whole
    model's. Returns the whole model's probabilities."""
    source, target_in, _ = _arrays(NAMES)
    full, full_weights = (np.asarray(x) for x in build_attention_model(model)([source, target_in]))
    step, state = seq2seq.step_function(model, source)
    for t in range(target_in.shape[1]):
        probabilities, state, weights = step(target_in[:, t], state)
        np.testing.assert_allclose(probabilities, full[:, t], atol=1e-5)
        np.testing.assert_allclose(weights, full_weights[:, t], atol=1e-5)
    return full


def test_step_decoder_agrees_with_the_full_model(model):
    _steps_agree_with_the_whole(model)


def test_a_gru_model_with_target_dropout_decodes_step_by_step_as_a_whole_and_reloads(tmp_path):
    """The experiments' options (issue 29): one state instead of two, the decoder's input letters dropped."""
    import keras

    keras.utils.set_random_seed(0)
    config = NameTransliterationConfig.tiny(cell="gru", target_dropout=0.3)
    gru = build_model(config, len(VOCABS["source"]), len(VOCABS["target"]))
    assert {type(layer).__name__ for layer in gru.get_layer("decoder").layers} >= {"GRU", "Dropout"}
    assert len(gru.get_layer("encoder").output["state"]) == 1  # [h]: a GRU has no cell state
    full = _steps_agree_with_the_whole(gru)
    source, target_in, _ = _arrays(NAMES)
    gru.save(tmp_path / "gru.keras")
    again = keras.saving.load_model(tmp_path / "gru.keras")
    np.testing.assert_allclose(np.asarray(again([source, target_in])), full, atol=1e-6)
    with pytest.raises(InputError, match="cell"):
        NameTransliterationConfig(cell="rnn")
    with pytest.raises(InputError, match="target_dropout must be at least 0 and below 1, got 1.0"):
        NameTransliterationConfig(target_dropout=1.0)


def test_the_weights_average_changes_where_training_ends_not_how_it_trains():
    """Issue 29's weight average: the same steps (the same losses per epoch), another end point."""
    plain = train(NameTransliterationConfig.tiny(epochs=2), verbose=0)
    averaged = train(NameTransliterationConfig.tiny(epochs=2, weight_average=0.9), verbose=0)
    assert averaged.history == plain.history  # the average takes no part in the steps
    ends = list(zip(plain.model.get_weights(), averaged.model.get_weights()))
    assert all(a.shape == b.shape for a, b in ends) and any(not np.array_equal(a, b) for a, b in ends)
    assert len(transliterate(averaged.model, averaged.vocabs, NAMES)) == len(NAMES)
    with pytest.raises(InputError, match="weight_average must be at least 0 and below 1, got 1.0"):
        NameTransliterationConfig(weight_average=1.0)


def test_label_smoothing_is_keras_own_smoothed_crossentropy_over_the_real_letters_only(tmp_path):
    """Issue 29's label smoothing: the smoothed target's cross-entropy, padded steps left out, as without it;
    a run trained with it loads back from its folder."""
    import zipfile

    import h5py
    import keras

    from autograder.allowlist import check_config
    from autograder.rubric import load_rubric
    from labs.common.submission import export
    from labs.common.training import SmoothedCrossentropy, compile_for_training

    rng = np.random.default_rng(0)
    p = keras.ops.softmax(rng.normal(size=(3, 5, 7)).astype("float32"))
    y = rng.integers(0, 7, size=(3, 5))
    ours = SmoothedCrossentropy(0.1, reduction=None)(y, p)
    keras_own = keras.losses.CategoricalCrossentropy(label_smoothing=0.1, reduction=None)(
        keras.ops.one_hot(y, 7), p
    )
    np.testing.assert_allclose(np.asarray(ours), np.asarray(keras_own), rtol=1e-5)

    targets = ["Somchai Jaidee", "Pawina Rattanaphong", "Thanakon Sisuk", "Itsamae Butphrom"]
    pairs = [{"source": n, "target": t} for n, t in zip(NAMES, targets)]
    source, target_in, target_out = translation_arrays(pairs, VOCABS)
    real = target_out != 0  # (B, T): the padded steps of the shorter names are 0
    assert not real.all()
    config = NameTransliterationConfig.tiny()
    batches = translation_batches(pairs, VOCABS, len(pairs))
    for epsilon, loss in (
        (0.0, keras.losses.sparse_categorical_crossentropy),
        (0.2, SmoothedCrossentropy(0.2, reduction=None)),
    ):
        model = build_model(config, len(VOCABS["source"]), len(VOCABS["target"]))
        compile_for_training(model, config, batches, smoothing=epsilon)
        per_step = np.asarray(loss(target_out, model([source, target_in])))  # (B, T)
        by_hand = per_step[real].mean()  # the mean over the real letters only
        assert model.evaluate([source, target_in], target_out, verbose=0) == pytest.approx(by_hand, rel=1e-5)
    smoothed = train(NameTransliterationConfig.tiny(label_smoothing=0.1), out_dir=tmp_path / "run", verbose=0)
    assert "nats per character, smoothed target (0.1)." in smoothed.summary()  # not read as a plain loss
    model, vocabs, again = load_run(tmp_path / "run")
    assert again.label_smoothing == 0.1 and model.loss.get_config()["epsilon"] == 0.1
    written = [r.output for r in transliterate(smoothed.model, smoothed.vocabs, NAMES)]
    assert [r.output for r in transliterate(model, vocabs, NAMES)] == written
    # Its bundle holds the model for inference only: no loss the grader would refuse, no optimizer state.
    bundle = export(model, vocabs, task=TASK.name, student_id="smooth", out=tmp_path / "bundle")
    with zipfile.ZipFile(bundle / "model.keras") as saved:
        config = json.loads(saved.read("config.json"))
        (tmp_path / "weights.h5").write_bytes(saved.read("model.weights.h5"))
    assert not config.get("compile_config")  # {}: no loss, optimizer or metrics
    verdict = check_config(
        config, allowed_custom=load_rubric(task=TASK.name).custom_layers, custom_layers_present=True
    )
    assert verdict.allowed, verdict.message
    with h5py.File(tmp_path / "weights.h5") as weights:
        assert "optimizer" not in weights
    again = keras.saving.load_model(bundle / "model.keras", compile=False)
    assert [r.output for r in transliterate(again, vocabs, NAMES)] == written
    with pytest.raises(InputError, match="label_smoothing must be at least 0 and below 1, got 1.0"):
        NameTransliterationConfig(label_smoothing=1.0)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_a_second_read_decodes_step_by_step_as_a_whole_and_reloads(cell, tmp_path):
    """Issue 29's second read: twice the states to carry, the second read's weights are the ones shown."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    config = NameTransliterationConfig.tiny(cell=cell, second_read=True)
    twice = build_model(config, len(VOCABS["source"]), len(VOCABS["target"]))
    decoder = twice.get_layer("decoder")
    assert {layer.name for layer in decoder.layers} >= {"attention", "second_attention", f"second_{cell}"}
    assert len(twice.get_layer("encoder").output["state"]) == (4 if cell == "lstm" else 2)
    full = _steps_agree_with_the_whole(twice)
    source, target_in, _ = _arrays(NAMES)
    _, shown = build_attention_model(twice)([source, target_in])
    second = keras.Model(decoder.input, decoder.get_layer("second_attention").output[1])
    # plain tensors: the encoder's outputs carry Keras masks, which a sub-model's inputs would warn about
    encoded = tf.nest.map_structure(tf.identity, twice.get_layer("encoder")(source))
    np.testing.assert_allclose(
        np.asarray(shown),
        np.asarray(second({"target_in": keras.ops.convert_to_tensor(target_in), **encoded})),
        atol=1e-6,
    )
    twice.save(tmp_path / "twice.keras")
    again = keras.saving.load_model(tmp_path / "twice.keras")
    np.testing.assert_allclose(np.asarray(again([source, target_in])), full, atol=1e-6)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_a_stacked_encoder_decodes_step_by_step_as_a_whole_reloads_and_passes_the_allowlist(cell, tmp_path):
    """Issue 29's depth: two bidirectional RNNs in the encoder, the upper one reading the lower one's h."""
    import zipfile

    import keras

    from autograder.allowlist import check_config
    from autograder.rubric import load_rubric

    keras.utils.set_random_seed(0)
    config = NameTransliterationConfig.tiny(cell=cell, encoder_layers=2)
    stacked = build_model(config, len(VOCABS["source"]), len(VOCABS["target"]))
    encoder = stacked.get_layer("encoder")
    below, above = encoder.get_layer(f"bi{cell}_1"), encoder.get_layer(f"bi{cell}")
    # the lower layer's h (B, S, 2u) is what the upper one's kernel reads: (2u, gates * u)
    assert below.output.shape[-1] == 2 * config.units == above.forward_layer.cell.kernel.shape[0]
    assert len(encoder.output["state"]) == (2 if cell == "lstm" else 1)  # from the top layer
    one = build_model(NameTransliterationConfig.tiny(cell=cell), len(VOCABS["source"]), len(VOCABS["target"]))
    assert stacked.count_params() > one.count_params()
    full = _steps_agree_with_the_whole(stacked)
    stacked.save(tmp_path / "stacked.keras")
    with zipfile.ZipFile(tmp_path / "stacked.keras") as saved:
        verdict = check_config(
            json.loads(saved.read("config.json")),
            allowed_custom=load_rubric(task=TASK.name).custom_layers,
            custom_layers_present=True,
        )
    assert verdict.allowed, verdict.message
    again = keras.saving.load_model(tmp_path / "stacked.keras")
    source, target_in, _ = _arrays(NAMES)
    np.testing.assert_allclose(np.asarray(again([source, target_in])), full, atol=1e-6)
    with pytest.raises(InputError, match="encoder_layers must be 1 or more, got 0"):
        NameTransliterationConfig(encoder_layers=0)


def test_the_greedy_loop_written_out_writes_what_the_engine_writes(model, tiny_run):
    from labs.name_transliteration.transliterate import greedy_transliterate

    for network in (model, tiny_run[0].model):
        for name in ["สมชาย ใจดี", "ปวีณา รัตนพงศ์", "ก"]:
            assert (
                greedy_transliterate(network, VOCABS, name)
                == transliterate(network, VOCABS, [name])[0].output
            )


def test_training_saves_a_run_that_loads_and_transliterates(tiny_run):
    run, out = tiny_run
    assert {"model.keras", "vocab.json", "metrics.json", "training_curve.png"} <= {
        p.name for p in out.iterdir()
    }
    model, vocabs, config = load_run(out)
    assert config == NameTransliterationConfig.tiny()
    names = [r["source"] for r in sample_names(40, seed=4, split="dev")]
    loaded = transliterate(model, vocabs, names)
    assert [t.output for t in loaded] == [t.output for t in transliterate(run.model, run.vocabs, names)]
    assert [t.output for t in loaded] == [
        t.output for t in transliterate(model, vocabs, names, step_decoding=False)
    ]
    top = transliterate(model, vocabs, names[:3], beam=3)
    assert all(len(t.alternatives) == 3 and len(set(t.alternatives)) == 3 for t in top)
    result = loaded[0]
    # one row per output character and </s> (an untrained model may stop only at the length limit)
    assert result.attention.shape == (min(len(result.output) + 1, TASK.max_output_length), len(result.source))


# ---- the metrics ----

ROW = {
    "source": "ธนะพงศ์ เดชณรงค์",
    "target": "Tanapong Detnarong",
    "alternatives": "Thanaphong Detnarong",
    "stratum": "unseen",
}


def test_any_accepted_spelling_counts_but_exact_match_wants_the_main_one():
    predictions = ["Thanaphong Detnarong", "Tanapong Detnarong"]
    assert evaluate.accuracy(predictions, [ROW, ROW]) == 1.0
    assert evaluate.exact_match(predictions, [ROW["target"]] * 2) == 0.5


def test_character_error_rate_uses_the_nearest_accepted_spelling():
    # one substitution from the alternative (20 characters), three from the main target
    assert evaluate.character_error_rate(["Thanaphong Detnarung"], [ROW]) == pytest.approx(1 / 20)
    assert evaluate.character_error_rate(["Tanapong Detnarong"], [ROW]) == 0.0


def test_news_f_score_and_mrr():
    assert evaluate.f_score("Tanapong Detnarong", ROW) == 1.0
    # LCS("Tanapong", "Tanapong Detnarong") = 8: P = 1, R = 8/18, F = 2 * 8/18 / (1 + 8/18)
    assert evaluate.f_score("Tanapong", ROW) == pytest.approx(2 * (8 / 18) / (1 + 8 / 18))
    assert evaluate.f_score("", ROW) == 0.0
    assert evaluate.reciprocal_rank(["x", "Thanaphong Detnarong", "Tanapong Detnarong"], ROW) == 0.5
    assert evaluate.mean_reciprocal_rank([["x"], ["Tanapong Detnarong"]], [ROW, ROW]) == 0.5


def test_summary_reports_each_stratum_and_length():
    seen = dict(ROW, stratum="seen", source="สมชาย ใจดี", target="Somchai Jaidee", alternatives="")
    result = evaluate.summary(
        [ROW, seen, seen], [["Tanapong Detnarong"], ["Somchai Jaidee", "x"], ["Somchay"]]
    )
    assert result["per_stratum"]["unseen"]["accuracy"] == 1.0
    assert result["per_stratum"]["seen"]["accuracy"] == 0.5
    assert result["all"]["top_2_accuracy"] == pytest.approx(2 / 3)
    assert set(result["by_length"]) == {"(0, 10]", "(15, 20]"}  # 10 and 16 Thai characters
    assert "unseen words: accuracy 100.00%" in evaluate.format_summary(result)


def test_what_rubrics_score_is_what_the_metric_functions_compute():
    """One code path: the grader's figures are the evaluate module's own functions, per stratum."""
    import tomllib

    from labs import tasks

    rows = read_csv(REPO_ROOT / "datasets" / "thai-names" / "dev.csv")[:300]
    outputs = [[row["target"] if i % 3 else row["target"][::-1], "x"] for i, row in enumerate(rows)]
    graded = tasks.get("name-transliteration").grading_metrics({"outputs": outputs}, rows)
    for stratum in ("seen", "unseen"):
        picked = [i for i, row in enumerate(rows) if row["stratum"] == stratum]
        best, chosen = [outputs[i][0] for i in picked], [rows[i] for i in picked]
        assert graded[f"accuracy_{stratum}"] == evaluate.accuracy(best, chosen)
        assert graded[f"cer_{stratum}"] == evaluate.character_error_rate(best, chosen)
        assert graded[f"mean_f_score_{stratum}"] == evaluate.mean_f_score(best, chosen)
        assert graded[f"mrr_{stratum}"] == evaluate.mean_reciprocal_rank([outputs[i] for i in picked], chosen)
    assert 0 < graded["accuracy"] < 1 and graded["cer"] > 0
    rubric = tomllib.loads((REPO_ROOT / "autograder" / "rubrics" / "name-transliteration.toml").read_text())
    assert {metric["name"] for metric in rubric["metric"]} <= set(graded)


# ---- the self-test ----


def _broken_source(old: str, new: str) -> str:
    source = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")
    assert old in source
    source = source.replace(old, new)
    return (
        source
        if "np." not in new
        else source.replace("from keras import ops", "from keras import ops\nimport numpy as np")
    )


def _broken_layer(tmp_path, old: str, new: str):
    """The solution with one mistake in it, loaded as a class (as a student's file would be)."""
    path = tmp_path / "kv_attention.py"
    path.write_text(_broken_source(old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("broken_kv_attention", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.KeyValueAttention


@pytest.fixture
def restore_registration():
    """A broken copy registers itself under the same Keras name; register the real layer again after."""
    yield
    importlib.reload(importlib.import_module("homework.kv_attention"))


def test_selftest_passes_the_solution():
    assert all(check.passed for check in selftest.run_checks())


def test_reference_numbers_are_those_of_the_solution():
    stored = json.loads(selftest.REFERENCE_FILE.read_text(encoding="utf-8"))
    fresh = selftest.reference_outputs(selftest.layer_class())
    for score in ("dot", "additive"):
        for name in ("context", "weights"):
            np.testing.assert_allclose(fresh[score][name], stored[score][name], atol=1e-6)


# The solution's lines that students get wrong, and wrong versions of them.
KEYS = "keys = ops.matmul(memory, self.key_kernel)"
Q = "q = ops.matmul(query, self.query_kernel)"
DOT = "scores = ops.matmul(q, ops.transpose(keys, (0, 2, 1)))"
SCALE = "scores = scores / ops.sqrt(ops.cast(self.key_dim, scores.dtype))"
HIDDEN = "hidden = ops.tanh(q[:, :, None, :] + keys[:, None, :, :])"
MASK = "scores = ops.where(real, scores, ops.full_like(scores, -1e4))"
SOFTMAX = "weights = ops.softmax(scores, axis=-1)"
CONTEXT = "context = ops.matmul(weights, values)"


@pytest.mark.parametrize(
    "old,new,failing,advice,line",
    [
        (
            SOFTMAX,
            "weights = ops.softmax(scores, axis=1)",
            "weights sum to 1",
            "over the output steps (axis 1, T)",
            "axis=1",
        ),
        (SOFTMAX, "weights = scores", "weights sum to 1", "raw scores", None),
        (
            f"{MASK}\n        # (batch, T, S)\n        {SOFTMAX}",
            f"pass\n        {SOFTMAX}\n        weights = ops.where(real, weights, 0.0)",
            "weights sum to 1",
            "*after* the softmax",
            "ops.where(real, weights, 0.0)",
        ),
        (
            MASK,
            "pass",
            "padding gets zero weight",
            "so negative that its exp() is 0",
            "real = ops.cast(memory_mask",
        ),
        (
            MASK,
            "scores = scores + (1.0 - ops.cast(real, scores.dtype)) * -1e9",
            "works under mixed precision",
            "float16 holds numbers up to 65504",
            "-1e9",
        ),
        (SCALE, "pass", "dot score matches", "2.00 times the reference's", None),
        (
            DOT,
            "scores = ops.matmul(q, ops.reshape(keys, (ops.shape(keys)[0], self.key_dim, -1)))",
            "each output step and each source position",
            "a transpose",
            "ops.reshape(keys",
        ),
        (Q, "q = query", "returns a context", "(2, 3, 6) = (batch, T, query_dim)", DOT),
        (
            CONTEXT,
            "context = ops.matmul(weights, memory[..., :self.value_dim])",
            "dot score matches",
            "weighted sum of the *values*",
            "memory[..., :self.value_dim]",
        ),
        (
            HIDDEN,
            "hidden = q[:, :, None, :] + keys[:, None, :, :]",
            "additive score matches",
            "w . tanh(q_t + k_j)",
            None,
        ),
        (
            CONTEXT,
            f"{CONTEXT}\n        context, weights = ops.squeeze(context), ops.squeeze(weights)",
            "works at batch 1",
            "a size-1 axis was lost",
            "ops.squeeze",
        ),
        (
            KEYS,
            "if getattr(self, '_keys', None) is None:\n            self._keys = ops.matmul(memory, "
            "self.key_kernel)\n"
            "        keys = self._keys",
            "two calls with different inputs",
            "keeps something from the first call",
            "self._keys = ",
        ),
        (
            CONTEXT,
            "context = ops.convert_to_tensor(np.matmul(np.asarray(weights), np.asarray(values)))",
            "works in graph mode",
            "NumPy was used on a tensor inside call()",
            "np.matmul",
        ),
        (
            CONTEXT,
            f"{CONTEXT}\n        context = ops.reshape(context, (query.shape[0], query.shape[1], "
            f"self.value_dim))",
            "works in graph mode",
            "known only when the model runs",
            "query.shape[0]",
        ),
        (
            SOFTMAX,
            "import tensorflow as tf\n        weights = tf.nn.softmax(scores, axis=-1)",
            "imports only what the grader",
            "imports 'tensorflow'",
            None,
        ),
        (
            SOFTMAX,
            f"{SOFTMAX}\n        if ops.sum(weights) > 0:\n            weights = weights * 1.0",
            "works in graph mode",
            "Choose between tensors with ops.where",
            "if ops.sum(weights) > 0:",
        ),
        (
            "        if memory_mask is not None:\n            # (batch, 1, S)\n            real",
            "        if True:\n            # (batch, 1, S)\n            real",
            "padding gets zero weight and changes nothing; no mask means no padding",
            "memory_mask is optional",
            None,
        ),
    ],
)
def test_selftest_diagnoses_common_mistakes_and_points_at_the_line(
    tmp_path, restore_registration, old, new, failing, advice, line
):
    results = selftest.run_checks(_broken_layer(tmp_path, old, new))
    first_failure = next(r for r in results if not r.passed)
    assert first_failure.name.startswith(failing), first_failure
    assert advice in first_failure.message
    if line is not None:
        number = next(i for i, text in enumerate(_broken_source(old, new).splitlines(), 1) if line in text)
        assert f"kv_attention.py, line {number}:" in first_failure.message, first_failure.message
    assert "\x1b" not in first_failure.message


def test_later_failures_keep_their_message_but_not_the_line_they_guess_at(tmp_path, restore_registration):
    # A reshape in place of the transpose scrambles the scores: the padding check fails after it, and would
    # point at the (correct) masking line.
    reshaped = "scores = ops.matmul(q, ops.reshape(keys, (ops.shape(keys)[0], self.key_dim, -1)))"
    results = selftest.run_checks(_broken_layer(tmp_path, DOT, reshaped))
    failed = [r for r in results if r.ran and not r.passed]
    assert len(failed) >= 2 and any(selftest.GUESSED_LINE.search(r.message) for r in failed[1:]), failed
    printed = [line.strip() for line in selftest.report(results).splitlines()]
    messages = [printed[printed.index(f"FAIL  {r.name}") + 1] for r in failed]
    assert "ops.reshape(keys" in messages[0] and "(This may follow" not in messages[0], messages[0]
    for message, result in zip(messages[1:], failed[1:]):
        assert "Look at" not in message and message.endswith("(This may follow from the failure above.)")
        assert message.startswith(selftest.GUESSED_LINE.sub("", result.message)[:40])


def test_a_size_written_into_call_is_not_called_a_lost_axis(tmp_path, restore_registration):
    mask = 'real = ops.cast(memory_mask, "bool")[:, None, :]'
    fixed = 'real = ops.repeat(ops.cast(memory_mask, "bool")[:, None, :], 3, axis=1)'  # T = 3, always
    results = selftest.run_checks(_broken_layer(tmp_path, mask, fixed))
    small = next(r for r in results if r.name.startswith("works at batch 1"))
    assert not small.passed and "do not follow the input's sizes" in small.message, small.message
    assert "size-1 axis was lost" not in small.message and "ops.repeat(" in small.message


def test_selftest_runs_in_float32_whatever_policy_the_notebook_set():
    import keras

    keras.config.set_dtype_policy("mixed_float16")
    try:
        assert all(check.passed for check in selftest.run_checks())
        assert keras.config.dtype_policy().name == "mixed_float16"
    finally:
        keras.config.set_dtype_policy("float32")


def test_selftest_names_the_line_of_an_error(tmp_path, restore_registration):
    cls = _broken_layer(
        tmp_path,
        "values = ops.matmul(memory, self.value_kernel)",
        "values = ops.matmul(memory, self.no_such_kernel)",
    )
    message = next(r for r in selftest.run_checks(cls) if not r.passed).message
    assert "kv_attention.py, line" in message and "self.no_such_kernel" in message


def test_selftest_cli_exit_status(cli):
    result = cli("selftest", "homework")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(selftest.CHECKS)} of {len(selftest.CHECKS)} checks passed" in result.stdout


# ---- the command line ----


def test_cli_train_translate_evaluate(cli, tmp_path):
    out = tmp_path / "names"
    trained = cli("train", "name-transliteration", "--out", str(out), "--tiny", "--quiet")
    assert trained.returncode == 0, trained.stderr
    translated = cli(
        "translate", "--model", str(out), "สมชาย ใจดี", "--beam", "3", "--plot", str(tmp_path / "kv.png")
    )
    assert translated.returncode == 0, translated.stderr
    assert "สมชาย ใจดี  ->" in translated.stdout and "other beams:" in translated.stdout
    assert (tmp_path / "kv.png").is_file()
    data = tmp_path / "few.csv"
    data.write_text(
        "source,target,alternatives,gender,stratum\nสมชาย ใจดี,Somchai Jaidee,,male,seen\n"
        "ธนะพงศ์ เดชณรงค์,Tanapong Detnarong,Thanaphong Detnarong,male,unseen\n",
        encoding="utf-8",
    )
    evaluated = cli(
        "evaluate", "name-transliteration", "--model", str(out), "--data", str(data), "--beam", "2"
    )
    assert evaluated.returncode == 0, evaluated.stderr
    assert evaluated.stdout.startswith("decoding 2 names, beam 2\n")  # said before the wait, not after
    assert "seen words: accuracy" in evaluated.stdout and "unseen words: accuracy" in evaluated.stdout
    assert "\nnote: this run trained on 1,000 examples, as a --tiny run does" in evaluated.stdout
    saved = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))
    assert saved["all"]["examples"] == 2 and "top_2_accuracy" in saved["all"]
    missing = cli("evaluate", "name-transliteration", "--model", str(out), "--data", str(tmp_path / "no.csv"))
    assert missing.returncode == 2 and "no CSV file" in missing.stderr and "Traceback" not in missing.stderr


def test_config_rejects_a_share_or_window_out_of_range():
    from labs.common.errors import InputError

    with pytest.raises(InputError, match="dictionary_share must be at least 0 and below 1, got 1.0"):
        NameTransliterationConfig(dictionary_share=1.0)
    with pytest.raises(InputError, match="sort_window must be 0 \\(off\\) or more, got -1"):
        NameTransliterationConfig(sort_window=-1)


def test_transliterate_passes_its_length_penalty_to_the_beam(model, monkeypatch):
    from labs.common import decoding

    given = {}
    real = decoding.translate_texts

    def spy(*args, **kwargs):
        given.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(decoding, "translate_texts", spy)
    assert len(transliterate(model, VOCABS, NAMES[:2], beam=2, length_penalty=0.5)) == 2
    assert given["beam"] == 2 and given["length_penalty"] == 0.5
