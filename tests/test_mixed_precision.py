"""Models trained on a GPU: mixed precision bundles grade on the CPU grader, and the default models keep
cuDNN's LSTM.

A student who turns on ``keras.mixed_precision.set_global_policy("mixed_float16")`` in Colab hands in a model
whose layers compute in float16 (its weights stay float32). The grader loads it on a CPU, as it is, in its
sandboxed child. Its twin here is the same network with the same weights in float32: whatever the grades
differ by is float16 arithmetic in the grader, not training luck."""

import json
import zipfile

import numpy as np
import pytest

from autograder.batch import check_bundle
from autograder.rubric import load_rubric
from labs import tasks
from labs.common.submission import export

# How far a metric of the mixed precision bundle may sit from its float32 twin's: 0.02 absolute
# for rates in [0, 1], 2 % of the value for the larger ones (cross-entropy gap, character error rate).
TOLERANCE = 0.02
CHECKED_ROWS = 200  # of the public dev set: enough for the metrics to move, quick to decode


@pytest.fixture
def mixed_precision():
    """The global policy set to mixed_float16 for the test, and put back afterwards even if the test fails."""
    import keras

    previous = keras.mixed_precision.global_policy().name
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def _float32_twin(model):
    """The same network and weights with every layer computing in float32."""
    import keras

    config = json.dumps(keras.saving.serialize_keras_object(model)).replace('"mixed_float16"', '"float32"')
    twin = keras.saving.deserialize_keras_object(json.loads(config))
    twin.set_weights(model.get_weights())
    return twin


def _policies(bundle) -> set[str]:
    """The dtype policies a bundle's model.keras names."""
    with zipfile.ZipFile(bundle) as archive, zipfile.ZipFile(archive.open("model.keras")) as model:
        text = model.read("config.json").decode("utf-8")
    return {name for name in ("mixed_float16", "float32") if f'"name": "{name}"' in text}


@pytest.mark.parametrize("task_name", tasks.names())
def test_a_mixed_precision_bundle_grades_on_the_cpu_like_its_float32_twin(
    task_name, mixed_precision, tmp_path
):
    import keras

    task = tasks.get(task_name)
    run = task.train(task.config.tiny(train_size=500), verbose=0)
    assert any(layer.compute_dtype == "float16" for layer in run.model._flatten_layers())
    keras.mixed_precision.set_global_policy(
        "float32"
    )  # what the grader runs under; the fixture restores it anyway
    twin = _float32_twin(run.model)

    records = {}
    for name, model in (("mixed", run.model), ("float32", twin)):
        bundle = export(model, run.vocabs, task=task_name, student_id=name, out=tmp_path / f"{name}.zip")
        records[name] = check_bundle(bundle, load_rubric(task=task_name), limit=CHECKED_ROWS)
    assert "mixed_float16" in _policies(tmp_path / "mixed.zip")
    assert _policies(tmp_path / "float32.zip") == {"float32"}

    mixed, float32 = records["mixed"], records["float32"]
    assert mixed["status"] == float32["status"] == "graded", mixed["message"] or float32["message"]
    assert mixed["score"] == float32["score"]
    assert mixed["lines"][0]["points"] == mixed["lines"][0]["max_points"]  # the architecture is recognised
    for metric in load_rubric(task=task_name).metrics:
        a, b = mixed["metrics"][metric.name], float32["metrics"][metric.name]
        assert np.isfinite(a) and abs(a - b) <= TOLERANCE * max(1.0, abs(b)), (metric.name, a, b)


def _recurrent_layers(model):
    """Every LSTM and GRU in ``model``, inside nested models and Bidirectional wrappers too."""
    import keras

    found = []
    for layer in model._flatten_layers(include_self=False):
        if isinstance(layer, keras.layers.Bidirectional):
            found += [layer.forward_layer, layer.backward_layer]
        elif isinstance(layer, (keras.layers.LSTM, keras.layers.GRU)):
            found.append(layer)
    return found


BUILDERS = {
    "date-generation": "labs.date_generation.model:build_model",
    "date-translation": "labs.date_translation.model:build_model",
    "name-transliteration": "labs.name_transliteration.model:build_model",
}


@pytest.mark.parametrize("task_name", tasks.names())
def test_the_default_models_keep_the_lstm_settings_that_select_cudnn_on_a_gpu(task_name):
    """Keras runs an LSTM or GRU with the cuDNN kernel only with these settings; others fall back to a slow
    loop."""
    task = tasks.get(task_name)
    vocabs = task.vocabularies()
    sizes = [len(vocabs[name]) for name in ("source", "target") if name in vocabs]
    model = tasks.Ref(BUILDERS[task_name])(task.config(), *sizes)
    layers = _recurrent_layers(model)
    assert layers, "the default model has no LSTM or GRU"
    for layer in layers:
        settings = {
            "activation": layer.activation.__name__,
            "recurrent_activation": layer.recurrent_activation.__name__,
            "recurrent_dropout": layer.recurrent_dropout,
            "unroll": layer.unroll,
            "use_bias": layer.use_bias,
        }
        assert settings == {
            "activation": "tanh",
            "recurrent_activation": "sigmoid",
            "recurrent_dropout": 0,
            "unroll": False,
            "use_bias": True,
        }, layer.name
        if hasattr(layer, "reset_after"):
            assert layer.reset_after, layer.name  # a GRU needs reset_after=True as well
