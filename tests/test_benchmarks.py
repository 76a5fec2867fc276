"""The README's results table is what the benchmarks' JSON files say, and says which are missing."""

import pytest

from tests.conftest import REPO_ROOT, load_benchmark


def _readme_table():
    return load_benchmark("readme_table")


def test_the_readme_results_table_is_filled_from_the_benchmark_files():
    module = _readme_table()
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index(module.START) + len(module.START) : readme.index(module.END)].strip()
    assert block == module.table(), (
        "README.md's results table is stale: run `python benchmarks/readme_table.py`"
    )


def test_a_benchmark_without_results_gets_a_row_naming_its_command(tmp_path, monkeypatch):
    module = _readme_table()
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    rows = module.table().splitlines()[2:]
    assert len(rows) == len(module.SECTIONS)
    assert all("not measured yet" in row for row in rows)
    assert "`python benchmarks/lab2_vs_classic.py`" in module.table()


def test_the_readme_experiments_table_is_filled_from_the_experiments_file():
    module = _readme_table()
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start, end = module.EXPERIMENTS
    block = readme[readme.index(start) + len(start) : readme.index(end)].strip()
    assert block == module.experiments_table(), (
        "README.md's experiments table is stale: run `python benchmarks/readme_table.py`"
    )


def test_the_experiments_table_shows_each_seed_of_a_setting(tmp_path, monkeypatch):
    import json

    module = _readme_table()
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    assert "not measured yet" in module.experiments_table().lower()
    run = {
        "setting": "demo, gru",
        "what": "GRU",
        "training_seconds": 100.0,
        "seen": 0.99,
        "unseen": 0.9,
        "held_out_words": 0.92,
        "date": "2026-11-25 03:00",
        "device": "CPU",
    }
    runs = [{**run, "seed": 2, "unseen": 0.91}, {**run, "seed": 1}]
    (tmp_path / "name_transliteration_experiments.json").write_text(json.dumps({"runs": runs}))
    row = module.experiments_table().splitlines()[2]
    assert "| 1 / 2 |" in row and "90.00 % / 91.00 %" in row and "100 s / 100 s" in row


def test_every_experiment_run_is_a_setting_the_script_can_run_again():
    import json

    experiments = load_benchmark("name_transliteration_experiments")
    runs = json.loads((experiments.RESULTS).read_text(encoding="utf-8"))["runs"]
    assert runs
    for run in runs:
        what, fields, table = experiments.SETTINGS[run["setting"]]
        assert (run["what"], run["fields"], run["table"]) == (what, fields, table), run["setting"]


def test_a_comparison_with_an_older_commit_fails_with_a_message_not_a_traceback(tmp_path):
    import argparse
    import json

    import pytest

    results = load_benchmark("results_file")
    parser = argparse.ArgumentParser()
    results.add_comparison_arguments(parser, "run this benchmark")
    with pytest.raises(SystemExit):  # argparse: --against and --before exclude each other
        parser.parse_args(["--against", "HEAD", "--before", "x.json"])
    assert results.short_commit("HEAD") and len(results.short_commit("HEAD")) >= 7
    with pytest.raises(SystemExit, match="no commit 'no-such-revision'"):
        results.short_commit("no-such-revision")
    with pytest.raises(SystemExit, match="No such file"):
        results.read_before(str(tmp_path / "missing.json"), ("commit",))
    (tmp_path / "other.json").write_text(json.dumps({"report": {}}))
    with pytest.raises(SystemExit, match="not a results file with an older commit's figures"):
        results.read_before(str(tmp_path / "other.json"), ("commit",))
    (tmp_path / "partial.json").write_text(json.dumps({"report": {"against": {"commit": "abc1234"}}}))
    with pytest.raises(SystemExit, match="lack demo_seconds"):
        results.read_before(str(tmp_path / "partial.json"), ("commit", "demo_seconds"))
    assert results.read_before(str(tmp_path / "partial.json"), ("commit",)) == {"commit": "abc1234"}
    # the command recorded with the figures is one that runs: the file it read, not a placeholder
    args = parser.parse_args(["--before", "benchmarks/results/x.json"])
    assert (
        results.comparison_command("x", args) == "python benchmarks/x.py --before benchmarks/results/x.json"
    )
    assert results.comparison_command("x", parser.parse_args([])) == "python benchmarks/x.py"


def test_a_missed_target_says_so_in_the_results_table(tmp_path, monkeypatch):
    import json

    module = _readme_table()
    source = json.loads((REPO_ROOT / "benchmarks" / "results" / "date_translation.json").read_text())
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    for training_ok, exact_ok in ((True, True), (False, True), (True, False)):
        checks = {
            **{name: True for name in source["checks"]},
            "training_at_most_5_minutes": training_ok,
            "exact_match_at_least_99.9": exact_ok,  # no row names this check: a row of its own says it
        }
        (tmp_path / "date_translation.json").write_text(json.dumps({**source, "checks": checks}))
        rows = [row for row in module.table().splitlines() if "python benchmarks/date_translation.py" in row]
        training = next(row for row in rows if row.startswith("| lab 2: training time"))
        assert ("**missed**: training_at_most_5_minutes" in training) is not training_ok
        assert any("**missed**: exact_match_at_least_99.9" in row for row in rows) is not exact_ok
        assert sum("**missed**" in row for row in rows) == (not training_ok) + (not exact_ok)


def test_the_xla_probe_pads_a_batch_up_to_a_multiple_with_padding_only():
    import numpy as np

    experiments = load_benchmark("name_transliteration_experiments")
    source = np.arange(1, 14, dtype=np.int32).reshape(1, 13)  # 13 letters: up to 16 (not 8)
    target_in = np.full((1, 5), 7, dtype=np.int32)  # 5: up to 8
    target_out = np.full((1, 8), 9, dtype=np.int32)  # already a multiple: unchanged
    for multiple, widths in ((8, (16, 8, 8)), (4, (16, 8, 8)), (3, (15, 6, 9))):
        (s, t_in), t_out = experiments.padded_up(source, target_in, target_out, multiple)
        assert (s.shape[1], t_in.shape[1], t_out.shape[1]) == widths, multiple
        for padded, given in ((s, source), (t_in, target_in), (t_out, target_out)):
            width = given.shape[1]
            assert padded.dtype == given.dtype
            assert (padded.numpy()[:, :width] == given).all() and not padded.numpy()[:, width:].any()


def test_the_transformer_encoder_setting_keeps_the_kits_encoder_contract_and_gives_the_kits_back(monkeypatch):
    """The experiment's Transformer encoder plugs into the kit's decoder and beam search as the LSTM encoder
    does, refuses the configurations whose decoder it cannot start, and a run that fails still leaves the kit's
    own encoder in place."""
    import dataclasses

    import keras
    import numpy as np
    import pytest

    from labs.name_transliteration import model as kit_model
    from labs.name_transliteration import train as kit_train
    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.data import vocabularies
    from labs.name_transliteration.transliterate import transliterate

    experiments = load_benchmark("name_transliteration_experiments")
    setting = "6 epochs, learning rate 0.001, transformer encoder"
    assert experiments.ENCODERS[setting] is experiments.transformer_encoder
    keras.utils.set_random_seed(1)
    config, vocabs = NameTransliterationConfig.tiny(), vocabularies()

    def small(c, n):
        return experiments.transformer_encoder(c, n, d=16, layers=2, heads=2)

    encoder = small(config, len(vocabs["source"]))
    padded = encoder(keras.ops.convert_to_tensor([[5, 6, 7, 0], [5, 8, 0, 0]]))
    assert tuple(padded["memory"]["h"].shape) == (2, 4, 16)
    assert keras.ops.convert_to_numpy(padded["memory"]["source_mask"]).tolist() == [
        [True, True, True, False],
        [True, True, False, False],
    ]
    assert [tuple(s.shape) for s in padded["state"]] == [(2, 2 * config.units)] * 2
    # a name's states (h_j of its letters, s_0 and c_0) do not depend on the padding after it
    alone = encoder(keras.ops.convert_to_tensor([[5, 8]]))
    np.testing.assert_allclose(alone["memory"]["h"][0], padded["memory"]["h"][1, :2], atol=1e-5)
    for first, batched in zip(alone["state"], padded["state"]):
        np.testing.assert_allclose(first[0], batched[1], atol=1e-5)
    for other in ({"cell": "gru"}, {"second_read": True}):
        with pytest.raises(ValueError, match="one LSTM decoder only"):
            small(dataclasses.replace(config, **other), len(vocabs["source"]))

    kit_encoder = kit_model.build_encoder
    monkeypatch.setitem(experiments.ENCODERS, setting, small)
    with experiments.encoder_of(setting):
        model = kit_model.build_model(config, len(vocabs["source"]), len(vocabs["target"]))
    assert kit_model.build_encoder is kit_encoder
    assert model.get_layer("encoder").get_layer("encoder_2_attention")  # the Transformer's, not the LSTM
    written = transliterate(model, vocabs, ["สมชาย ใจดี", "ศันสนะ สมบัติมล"], beam=3)
    assert [len(w.alternatives) for w in written] == [3, 3]

    def fails(*args, **kwargs):
        assert kit_model.build_encoder is small  # in place while it trains
        raise RuntimeError("stopped")

    monkeypatch.setattr(kit_train, "train", fails)
    with pytest.raises(RuntimeError, match="stopped"):
        experiments.run(setting, 1)
    assert kit_model.build_encoder is kit_encoder


def test_a_record_made_from_code_that_differs_from_its_commit_says_so(tmp_path, monkeypatch):
    import subprocess

    experiments = load_benchmark("name_transliteration_experiments")
    monkeypatch.setattr(experiments, "REPO_ROOT", tmp_path)

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "benchmarks" / "results" / "runs.json").write_text("{}\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    commit = experiments.provenance()["commit"]
    assert len(commit) >= 7 and "+" not in commit
    (tmp_path / "benchmarks" / "results" / "runs.json").write_text('{"runs": []}\n')  # results: expected
    (tmp_path / "notes.txt").write_text("untracked\n")
    assert experiments.provenance()["commit"] == commit
    (tmp_path / "code.py").write_text("x = 2\n")
    assert experiments.provenance()["commit"] == commit + "+changes"


def test_the_learning_curve_tables_drop_only_seen_name_words_the_same_way_each_time():
    """A learning-curve table keeps its share of the seen name words (a seeded draw: the same each time) and
    every held-out and dictionary word as it was; a seen name word that is a dictionary word too and is left
    out stays, as a dictionary word only."""
    from labs.common.files import read_csv
    from labs.name_transliteration.corpus import DICTIONARY
    from labs.name_transliteration.data import DEFAULT_TABLE, word_group

    experiments = load_benchmark("name_transliteration_experiments")
    rows = read_csv(DEFAULT_TABLE)
    # seen name words that are dictionary words too (the shipped table may hold none)
    for word in (a + b + a + b for a in "กขคงจฉ" for b in "ชซฌญฎ"):
        rows.append({"word": word, "roles": f"{DICTIONARY}|family", "thai2rom_onnx": "x", "royin": "x"})
    original = {r["word"]: r for r in rows}
    seen = {w for w, r in original.items() if word_group(w) == "seen" and r["roles"] != DICTIONARY}

    for share in (0.5, 0.25):
        fewer = experiments._fewer_name_words(rows, share)
        assert fewer == experiments._fewer_name_words(rows, share)
        kept = {r["word"]: r for r in fewer}
        assert len(kept) == len(fewer)
        kept_names = {w for w in seen if w in kept and kept[w]["roles"] != DICTIONARY}
        assert len(kept_names) == round(len(seen) * share)
        for word, row in kept.items():  # as it was, or a left-out name word kept as a dictionary word
            assert row == original[word] or (
                word in seen - kept_names and row == {**original[word], "roles": DICTIONARY}
            )
        left_out = set(original) - set(kept)
        assert left_out and left_out <= seen
        assert all(DICTIONARY not in original[w]["roles"].split("|") for w in left_out)
        demoted = [w for w in seen - kept_names if w in kept]
        assert demoted and all(DICTIONARY in original[w]["roles"].split("|") for w in demoted)


def test_the_learning_curve_draws_the_words_its_recorded_runs_were_trained_on():
    """The README's learning curve was measured on one draw of the shipped table's words: a change to the
    draw (the seed, the shuffle, the table) would make its runs impossible to repeat, so this pins it."""
    import hashlib

    from labs.common.files import read_csv
    from labs.name_transliteration.data import DEFAULT_TABLE

    experiments = load_benchmark("name_transliteration_experiments")
    rows = read_csv(DEFAULT_TABLE)
    drawn = {}
    for kind, share in experiments.FEWER_NAME_WORDS.items():
        words = "\n".join(r["word"] for r in experiments._fewer_name_words(rows, share))
        drawn[kind] = hashlib.sha256(words.encode()).hexdigest()[:16]
    assert drawn == {"half-names": "3f991d6f91cbff77", "quarter-names": "8346ac43ce18c2b9"}, (
        "the learning-curve draw changed: re-run its settings and regenerate the README table"
    )


def test_the_experiments_file_replaces_a_record_with_the_same_key_and_keeps_the_rest(tmp_path, monkeypatch):
    import json

    experiments = load_benchmark("name_transliteration_experiments")
    monkeypatch.setattr(experiments, "RESULTS", tmp_path / "experiments.json")
    run = {"setting": "default", "seed": 1, "unseen": 0.89}
    assert experiments.save("runs", run, ("setting", "seed")) == []
    fast = {"batch_size": 128, "jit": False, "round_to": 1, "names_per_second": 800}
    experiments.save("throughput", fast, ("batch_size", "jit", "round_to"))
    xla = {**fast, "jit": True, "names_per_second": 200}
    experiments.save("throughput", xla, ("batch_size", "jit", "round_to"))
    again = {**fast, "names_per_second": 790}
    assert experiments.save("throughput", again, ("batch_size", "jit", "round_to")) == [fast]
    saved = json.loads((tmp_path / "experiments.json").read_text())
    assert saved == {"runs": [run], "throughput": [xla, again]}


def test_the_error_sorter_knows_rtgs_syllables_and_spells_the_rule_reading_as_the_kit_does():
    module = load_benchmark("name_transliteration_errors")
    for spelling in ("somchai", "chaidi", "natthaphong", "la-o", "phrasoet", "kritsana", "ai"):
        assert module.is_rtgs(spelling), spelling
    # thai2rom_onnx's faults: a syllable cut short, a doubled or unread final, a space, no vowel
    for spelling in ("bunr", "sombatmm", "kitphotnyan", "wannhot", "charuphat t", "phrt", ""):
        assert not module.is_rtgs(spelling), spelling
    # royin reads ดลลดา's every consonant; the kit's rules then write the name spelling and its variants
    assert "Donlada" in module.rule_reading("ดลลดา", {"royin": "donlada"})
    assert module.rule_reading("ดลลดา", {"royin": "dสnlada"}) == set()  # royin's own fault: no reading


def test_the_error_sorter_blames_the_first_wrong_word_and_names_why():
    sort = load_benchmark("name_transliteration_errors").sort_error
    raw = {  # pythainlp's two readings, as in the table (the neural one drops ดลลดา's second ล)
        "ดลลดา": {"thai2rom_onnx": "donda", "royin": "donlada"},
        "ใจดี": {"thai2rom_onnx": "chaidi", "royin": "chaidi"},
        "สมบัติมล": {"thai2rom_onnx": "sombatmm", "royin": "samabatimon"},
    }
    donda, jaidee = ["ดลลดา", "ใจดี"], [{"Donda"}, {"Jaidee"}]
    assert sort(donda, "Donlada Jaidee", [], jaidee, raw) == {"word": "ดลลดา", "kind": "rule reading"}
    assert sort(donda, "Donda Jaidi", ["Donda Jaidi", "Donda Jaidee"], jaidee, raw) == {
        "word": "ใจดี",
        "kind": "in the top 3",
    }
    assert sort(donda, "Dolda Jaidee", ["Dolda Jaidee", "Dolda Chaidi"], jaidee, raw) == {
        "word": "ดลลดา",
        "kind": "other",
    }
    sombat = ["ใจดี", "สมบัติมล"]
    assert sort(sombat, "Jaidee Sombatmon", [], [{"Jaidee"}, {"Sombatmm"}], raw) == {
        "word": "สมบัติมล",
        "kind": "malformed target",
    }
    assert sort(donda, "Donlada", ["Donlada"], jaidee, raw) == {"word": None, "kind": "other"}


def test_the_error_sorter_scores_a_spelling_as_the_decoder_does_letter_by_letter():
    """log p(y | x) from one teacher-forced pass equals the sum of log p_t(y_t | y_<t, x) over the decoder's
    steps, </s> included, so the margins it prints are the model's own."""
    import keras
    import numpy as np
    import pytest

    from labs.common import seq2seq
    from labs.common.vocab import START_ID
    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.data import vocabularies
    from labs.name_transliteration.model import build_model

    module = load_benchmark("name_transliteration_errors")
    keras.utils.set_random_seed(1)
    config, vocabs = NameTransliterationConfig.tiny(), vocabularies()
    model = build_model(config, len(vocabs["source"]), len(vocabs["target"]))
    pairs = [
        {"source": "สมชาย ใจดี", "target": "Somchai Jaidee"},
        {"source": "สมชาย ใจดี", "target": "Somchai Chaidi"},
        {"source": "ศันสนะ", "target": "Sansana"},
    ]
    scored = module.log_probabilities(model, vocabs, pairs)
    for pair, log_p in zip(pairs, scored):
        state = seq2seq.encode(model, vocabs["source"].encode_batch([pair["source"]]))
        # the target's letters and </s>, one step each
        letters = vocabs["target"].encode_batch([pair["target"]], add_end=True)[0]
        letter, total = np.array([START_ID]), 0.0
        for y_t in letters[letters > 0]:
            p_t, state, _ = seq2seq.step(model, letter, state)
            total += float(np.log(p_t[0, y_t]))
            letter = np.array([y_t])
        assert log_p == pytest.approx(total, abs=1e-3)
    assert scored[0] != pytest.approx(scored[1], abs=1e-3)  # two spellings of one name: two scores


def test_the_gpu_benchmark_fits_what_labs_train_fits_and_gets_its_weights(tmp_path):
    """benchmarks/gpu_training.py stores what each task's ``train`` would fit with and fits it elsewhere: on
    one backend, the replay must give the weights ``labs train`` gives (lab 1's language model; the
    homework's length-sorted batches, dropout and self-tested layer), over two epochs, each reshuffled."""
    import numpy as np

    from labs import tasks

    gpu = load_benchmark("gpu_training")
    names = ("date-generation", "name-transliteration")
    gpu.prepare(tmp_path / "work", names, tiny=True, epochs=2)
    gpu.train(tmp_path / "work", tmp_path / "out", names, pad_to=1)
    run_of = {}
    for name in names:
        run = run_of[name] = tasks.get(name).train(gpu.configuration(name, tiny=True, epochs=2), verbose=0)
        first = np.load(tmp_path / "work" / f"{name}.npz")
        replayed = np.load(tmp_path / "out" / f"{name}-weights.npz")
        kit = run.model.get_weights()
        assert len(replayed.files) == len(kit)
        # prepare stored every variable (the dropout seeds' states too): where each weight starts
        stored = {id(variable): i for i, variable in enumerate(run.model.variables)}
        moved = 0
        for i, (variable, weight) in enumerate(zip(run.model.weights, kit)):
            np.testing.assert_allclose(replayed[f"arr_{i}"], weight, atol=1e-5, err_msg=f"{name}, weight {i}")
            moved += not np.allclose(first[f"variables/{stored[id(variable)]}"], weight)
        assert moved == len(kit), f"{name}: training left {len(kit) - moved} weight(s) where they started"
    # evaluate scores the replayed weights with the task's own metrics: lab 1's, the same as the kit's model
    from labs.date_generation.evaluate import evaluate

    report = gpu.evaluate(tmp_path / "work", tmp_path / "out", ("date-generation",), out=None)
    figures = report["tasks"]["date-generation"]
    config = gpu.configuration("date-generation", tiny=True, epochs=2)
    kit = evaluate(run_of["date-generation"].model, run_of["date-generation"].vocabs, config, seed=0)
    assert figures["scores"]["validity"] == pytest.approx(kit["validity"], abs=0.005)  # weights equal to 1e-5
    assert figures["scores"]["heldout_bits_per_token"] == pytest.approx(
        kit["heldout_bits_per_token"], abs=1e-4
    )
    assert figures["cpu"]["training_seconds"] > 0 and figures["shapes_unpadded"] == figures["shapes"]


def test_padding_the_homeworks_batches_for_xla_changes_neither_the_letters_nor_the_loss():

    gpu = load_benchmark("gpu_training")
    seen = gpu.capture("name-transliteration", gpu.configuration("name-transliteration", tiny=True))
    arrays = {}
    gpu.store_batches(arrays, "validation", seen["validation"])
    plain, padded = gpu.stored_batches(arrays, "validation"), gpu.stored_batches(arrays, "validation", 8)
    assert len({s.shape[1] for (s, _), _ in plain}) > 1  # batches cut to their longest name: several widths
    for ((s, t_in), t_out), ((ps, pt_in), pt_out) in zip(plain[:3], padded[:3]):
        for given, wider in ((s, ps), (t_in, pt_in), (t_out, pt_out)):
            width = given.shape[1]
            assert wider.shape[1] % 8 == 0 and wider.shape[1] - width < 8
            assert (wider[:, :width] == given).all() and not wider[:, width:].any()
        loss = seen["model"].evaluate([s, t_in], t_out, verbose=0)[0]
        assert seen["model"].evaluate([ps, pt_in], pt_out, verbose=0)[0] == pytest.approx(loss, abs=1e-5)


def test_the_gpu_benchmark_imports_the_kits_models_where_tensorflow_is_missing(monkeypatch):
    import importlib.util
    import sys

    import tensorflow

    gpu = load_benchmark("gpu_training")
    real = sys.modules["tensorflow"]
    assert real is tensorflow
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tensorflow" else find_spec(name, *a)
    )
    with gpu.importable_without_tensorflow():
        stand_in = sys.modules["tensorflow"]
        assert stand_in is not real and not hasattr(stand_in, "data")
        # the kit's encoder-decoder module (which every translation model imports) loads, afresh, on it
        spec = importlib.util.spec_from_file_location(
            "seq2seq_on_the_stand_in", REPO_ROOT / "labs/common/seq2seq.py"
        )
        seq2seq = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(seq2seq)
        assert seq2seq.tf is stand_in and callable(seq2seq.encode_source)
    assert sys.modules.get("tensorflow") is real  # given back as it was


def test_keras_adam_steps_a_repeated_letters_embedding_further_than_dense_adam_and_the_setting_swaps_it():
    """The mechanism the README's GPU rows and the "dense Adam" setting rest on, on the installed Keras: a
    letter looked up k = 4 times in a batch moves sqrt(4) = 2 times the learning rate in Adam's first step
    with TensorFlow's sparse gradient, and the learning rate itself once the gradient is dense."""
    import keras
    import numpy as np
    import tensorflow as tf

    experiments = load_benchmark("name_transliteration_experiments")

    def first_step(adam) -> np.ndarray:
        embedding = keras.layers.Embedding(3, 2, embeddings_initializer="ones")
        embedding.build((None, 4))
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(embedding(tf.constant([[1, 1, 1, 1]])) * [0.3, -0.2])
        (gradient,) = tape.gradient(loss, embedding.trainable_variables)
        assert isinstance(gradient, tf.IndexedSlices) and len(gradient.indices) == 4  # a row per occurrence
        adam(learning_rate=0.01).apply([gradient], embedding.trainable_variables)
        return np.abs(embedding.embeddings.numpy() - 1.0)

    kit, dense = first_step(keras.optimizers.Adam), first_step(experiments.dense_adam())
    np.testing.assert_allclose(kit[1], [0.02, 0.02], rtol=1e-3)
    np.testing.assert_allclose(dense[1], [0.01, 0.01], rtol=1e-3)
    assert not kit[[0, 2]].any() and not dense[[0, 2]].any()  # letters not in the batch stay

    kit_adam = keras.optimizers.Adam
    with experiments.optimizer_of("6 epochs, learning rate 0.005, dense Adam"):
        assert keras.optimizers.Adam is not kit_adam and issubclass(keras.optimizers.Adam, kit_adam)
    with experiments.optimizer_of("6 epochs, learning rate 0.005"):
        assert keras.optimizers.Adam is kit_adam
    assert keras.optimizers.Adam is kit_adam


def test_the_embedding_steps_setting_multiplies_adams_step_for_embeddings_only():
    import keras
    import numpy as np
    import tensorflow as tf

    experiments = load_benchmark("name_transliteration_experiments")

    def first_step(adam) -> tuple[float, float]:
        embedding = keras.layers.Embedding(3, 2, embeddings_initializer="ones")
        dense = keras.layers.Dense(1, kernel_initializer="ones")
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(dense(embedding(tf.constant([[1, 2]]))))
        weights = embedding.trainable_variables + dense.trainable_variables
        adam(learning_rate=0.01).apply(tape.gradient(loss, weights), weights)
        return np.abs(embedding.embeddings.numpy() - 1).max(), np.abs(dense.kernel.numpy() - 1).max()

    (kit_embedding, kit_dense), (embedding, dense) = (
        first_step(keras.optimizers.Adam),
        first_step(experiments.embedding_steps_times(4.0)),
    )
    assert embedding == pytest.approx(4 * kit_embedding, rel=1e-3) and kit_embedding == pytest.approx(
        0.01, rel=1e-3
    )
    assert dense == pytest.approx(kit_dense, rel=1e-6)
