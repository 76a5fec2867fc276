"""Lab 1: the date language model, its step sampler, its metrics and its command line."""

import json
import math
import re
from datetime import date

import numpy as np
import pytest

from labs.common.decoding import choose_next, decode_steps
from labs.common.errors import InputError
from labs.common.metrics import SUM_TOLERANCE, bits_per_token, total_variation, true_token_probabilities
from labs.common.pipeline import language_model_arrays
from labs.common.vocab import END_ID, PAD_ID, START_ID, UNK_ID
from labs.date_generation.config import DateGenerationConfig
from labs.date_generation.data import IsoDateDistribution, vocabularies
from labs.date_generation.evaluate import copied_share, field_distances, uniqueness, validity
from labs.date_generation.model import build_model, step_decoder
from labs.date_generation.sampling import sample
from labs.date_generation.train import load_run, train

VOCAB = vocabularies()["target"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    return train(DateGenerationConfig.tiny(), out_dir=out, verbose=0), out


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_model_signature_tokens_to_next_token_probabilities(cell):
    model = build_model(DateGenerationConfig.tiny(cell=cell), len(VOCAB))
    inputs, _ = language_model_arrays(["2018-03-19", "1800-01-01", "2199-12-31"], VOCAB)
    probabilities = np.asarray(model(inputs))
    assert probabilities.shape == (3, 11, len(VOCAB))
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, rtol=1e-5)


def test_teacher_forcing_shifts_targets_by_one():
    inputs, targets = language_model_arrays(["2018-03-19"], VOCAB)
    assert VOCAB.decode(inputs[0]) == "2018-03-19" == VOCAB.decode(targets[0])
    assert inputs[0, 0] == START_ID and targets[0, -1] == END_ID
    np.testing.assert_array_equal(inputs[0, 1:], targets[0, :-1])  # the input at t+1 is the target at t


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_step_model_agrees_with_the_full_model_on_the_same_prefix(cell):
    import keras

    keras.utils.set_random_seed(0)
    model = build_model(DateGenerationConfig.tiny(cell=cell), len(VOCAB))
    inputs, _ = language_model_arrays(["2018-03-19", "1999-12-31"], VOCAB)
    full = np.asarray(model(inputs))  # (2, 11, vocab)
    step, state = step_decoder(model)
    for t in range(inputs.shape[1]):
        probabilities, state, attention = step(inputs[:, t], state)
        np.testing.assert_allclose(probabilities, full[:, t], atol=1e-5)
        assert attention is None


def test_sampling_is_deterministic_for_a_seed(tiny_run):
    run, _ = tiny_run
    first = sample(run.model, {"target": VOCAB}, 50, seed=3)
    assert first == sample(run.model, {"target": VOCAB}, 50, seed=3)
    assert first != sample(run.model, {"target": VOCAB}, 50, seed=4)
    assert len(set(sample(run.model, {"target": VOCAB}, 20, greedy=True))) == 1  # greedy: one answer


def test_the_sampling_loop_written_out_draws_what_the_engine_draws(tiny_run):
    from labs.date_generation.sampling import sample_one

    run, _ = tiny_run
    for seed, temperature in [(0, 1.0), (1, 0.7), (2, 1.5), (3, 1.0)]:
        looped = sample_one(run.model, {"target": VOCAB}, temperature=temperature, seed=seed)
        assert looped == sample(run.model, {"target": VOCAB}, 1, temperature=temperature, seed=seed)[0]
    drawn = {sample_one(run.model, {"target": VOCAB}, seed=seed) for seed in range(8)}
    assert len(drawn) > 1  # the seed matters: the loop samples, it does not take the argmax


def test_choose_next_greedy_top_k_temperature_and_banned_tokens():
    probabilities = np.array([[0.0, 0.5, 0.0, 0.1, 0.2, 0.3, 0.4]])  # <s> and <unk> carry mass
    assert choose_next(probabilities, greedy=True)[0] == 6  # <s> (id 1) is never emitted
    rng = np.random.default_rng(0)
    draws = [choose_next(probabilities, rng, top_k=1)[0] for _ in range(50)]
    assert set(draws) == {6}
    many = np.repeat(np.array([[0, 0, 0.2, 0, 0.3, 0.5]]), 40_000, axis=0)
    counts = np.bincount(choose_next(many, np.random.default_rng(1)), minlength=6) / 40_000
    np.testing.assert_allclose(counts, [0, 0, 0.2, 0, 0.3, 0.5], atol=0.01)
    cold = np.bincount(choose_next(many, np.random.default_rng(1), temperature=0.1), minlength=6) / 40_000
    assert cold[5] > 0.99  # a low temperature approaches greedy
    all_banned = np.tile([0.2, 0.3, 0, 0.5, 0, 0], (200, 1))  # every bit of mass on <pad>, <s>, <unk>
    assert set(choose_next(all_banned, np.random.default_rng(0))) == {2, 4, 5}  # uniform over the allowed
    assert choose_next(all_banned, greedy=True)[0] not in (PAD_ID, START_ID, UNK_ID)
    with pytest.raises(InputError, match="temperature must be greater than 0"):
        choose_next(probabilities, rng, temperature=0)
    with pytest.raises(InputError, match="top_k must be 1 or more"):
        choose_next(probabilities, rng, top_k=0)


def test_decode_steps_stops_at_end_and_pads_after_it():
    def step(tokens, state):  # a fake model: writes "a" twice, then </s>
        state = 0 if state is None else state + 1
        probabilities = np.zeros((len(tokens), 5))
        probabilities[:, 4 if state < 2 else END_ID] = 1.0
        return probabilities, state, None

    out = decode_steps(step, None, 3, max_length=6, greedy=True)
    assert out.tokens.tolist() == [[4, 4, END_ID, PAD_ID, PAD_ID, PAD_ID]] * 3
    assert out.log_probs.tolist() == [0.0] * 3 and out.attention is None


def test_validity_uniqueness_and_copying_on_hand_made_samples():
    samples = [
        "2020-02-29",
        "2019-02-29",
        "1900-02-29",
        "2000-02-29",
        "2018-04-31",
        "2018-13-01",
        "18-03-19",
        "2018-03-19",
    ]
    assert validity(samples) == pytest.approx(3 / 8)  # the leap days of 2020 and 2000, and 2018-03-19
    assert uniqueness(["2018-03-19", "2018-03-19", "2018-03-20", "2018-03-21"]) == pytest.approx(3 / 4)
    assert copied_share(["2018-03-19", "2018-03-20"], ["2018-03-19"]) == pytest.approx(0.5)
    assert validity([]) == 0.0 and uniqueness([]) == 0.0


def test_field_distances_zero_for_the_whole_population_and_known_for_one_month():
    dist = IsoDateDistribution(date(2019, 1, 1), date(2020, 12, 31))  # 731 days
    everything = [date.fromordinal(dist.start.toordinal() + i).isoformat() for i in range(dist.n_days)]
    assert all(v == pytest.approx(0.0, abs=1e-12) for v in field_distances(everything, dist).values())
    januaries = [d for d in everything if d[5:7] == "01"]
    assert field_distances(januaries, dist)["month"] == pytest.approx(1 - 62 / 731)
    assert field_distances(["not a date"], dist) == {"year": 1.0, "month": 1.0, "day": 1.0}


def test_total_variation_and_bits_per_token():
    assert total_variation({"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}) == 0.0
    assert total_variation({"a": 1.0}, {"b": 1.0}) == 1.0
    assert total_variation({"a": 0.75, "b": 0.25}, {"a": 0.25, "b": 0.75}) == pytest.approx(0.5)
    uniform = np.full((1, 3, 4), 0.25)
    assert bits_per_token(uniform, np.array([[1, 2, 3]])) == pytest.approx(2.0)
    assert bits_per_token(uniform, np.array([[1, 2, PAD_ID]])) == pytest.approx(2.0)  # padding not counted
    sure = np.array([[[0, 1.0, 0, 0]]])
    assert bits_per_token(sure, np.array([[1]])) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    "scale,message",
    [
        # p / max p: the true letter's "probability" 1
        (lambda p: p / p.max(axis=-1, keepdims=True), "sum to"),
        (lambda p: p / np.linalg.norm(p, axis=-1, keepdims=True), "sum to"),  # what UnitNormalization gives
        (lambda p: p / 2, "sum to"),  # half of each: no distribution either
        (lambda p: np.log(p), "in [0, 1]"),  # logits, or a last layer without its softmax
    ],
)
def test_outputs_that_are_no_distribution_are_refused_not_read(scale, message):
    """A model that rescales its softmax samples the same dates (sampling divides by the sum) but would claim a
    cross-entropy below the entropy bound, which no distribution reaches."""
    # (batch, time, vocab), each a distribution
    p = np.random.default_rng(0).dirichlet(np.ones(5), size=(3, 4))
    targets = np.array([[1, 2, 3, PAD_ID], [4, 1, PAD_ID, PAD_ID], [2, 2, 2, 2]])
    honest = bits_per_token(p, targets)
    assert honest > 0.5
    with pytest.raises(InputError, match=re.escape(message)):
        bits_per_token(scale(p), targets)
    # Round-off within the tolerance is read divided by the sum: no gain from a 1 % louder softmax.
    assert bits_per_token(p * (1 + SUM_TOLERANCE / 2), targets) == pytest.approx(honest)
    assert (true_token_probabilities(p, targets)[targets == PAD_ID] == 1).all()


def test_training_writes_the_run_folder_and_reloads(tiny_run):
    run, out = tiny_run
    assert {p.name for p in out.iterdir()} >= {
        "model.keras",
        "vocab.json",
        "metrics.json",
        "training_curve.png",
    }
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["config"] == DateGenerationConfig.tiny().to_dict()
    assert len(metrics["bits_per_token"]["validation"]) == DateGenerationConfig.tiny().epochs
    assert metrics["entropy_bound_bits_per_token"] == pytest.approx(math.log2(146_097) / 11, abs=1e-5)
    assert (out / "training_curve.png").read_bytes()[:4] == b"\x89PNG"
    model, vocabs, config = load_run(out)
    inputs, _ = language_model_arrays(["2018-03-19"], vocabs["target"])
    np.testing.assert_allclose(np.asarray(model(inputs)), np.asarray(run.model(inputs)), atol=1e-6)
    assert config == DateGenerationConfig.tiny()


def test_same_seed_same_weights():
    config = DateGenerationConfig.tiny(train_size=1_000, val_size=100)
    first = train(config, verbose=0).model.get_weights()
    second = train(config, verbose=0).model.get_weights()
    assert all(np.array_equal(a, b) for a, b in zip(first, second))


def test_config_rejects_bad_values():
    with pytest.raises(InputError, match="unknown cell 'transformer'; choose one of: lstm, gru"):
        DateGenerationConfig(cell="transformer")
    with pytest.raises(InputError, match="units must be 1 or more"):
        DateGenerationConfig(units=0)
    with pytest.raises(InputError, match="start '2018-02-30' is not a calendar date"):
        DateGenerationConfig(start="2018-02-30").start_date


def test_cli_train_sample_evaluate(cli, tmp_path):
    out = tmp_path / "run"
    result = cli("train", "date-generation", "--tiny", "--quiet", "--out", str(out), "--units", "24")
    assert result.returncode == 0, result.stderr
    assert re.search(r"Trained \d+ epochs? in", result.stdout)
    assert json.loads((out / "metrics.json").read_text())["config"]["units"] == 24
    sampled = cli("sample", "--model", str(out), "--n", "5", "--temperature", "0.8", "--seed", "1")
    assert sampled.returncode == 0 and len(sampled.stdout.strip().splitlines()) == 5
    evaluated = cli("evaluate", "date-generation", "--model", str(out), "--n", "300")
    assert evaluated.returncode == 0, evaluated.stderr
    assert "validity" in evaluated.stdout and "lower bound 1.5597" in evaluated.stdout
    assert "note: this run trained on 3,000 examples, as a --tiny run does" in evaluated.stdout
    assert "not what the model learns: train without --tiny" in evaluated.stdout
    report = json.loads((out / "evaluation.json").read_text())
    assert 0.0 <= report["validity"] <= 1.0 and report["samples"] == 300
    bad = cli("sample", "--model", str(out), "--temperature", "0")
    assert bad.returncode == 2 and "argument --temperature: must be greater than 0, got 0.0" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_cli_errors_for_missing_models_and_bad_config(cli, tmp_path):
    missing = cli("sample", "--model", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "no folder" in missing.stderr
    (tmp_path / "empty").mkdir()
    untrained = cli("sample", "--model", str(tmp_path / "empty"))
    assert untrained.returncode == 2 and "no trained model" in untrained.stderr
    bad = cli("train", "date-generation", "--out", str(tmp_path / "x"), "--cell", "transformer")
    assert bad.returncode == 2 and "unknown cell 'transformer'" in bad.stderr
