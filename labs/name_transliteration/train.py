"""Train homework 3.1's name transliterator with teacher forcing.

    python -m labs train name-transliteration --out runs/names

Training names come fresh from the name generator's train split (the public
``datasets/thai-names/train.csv`` is one such draw); validation names from the dev split. A run
folder holds ``model.keras``, ``vocab.json``, ``metrics.json`` and ``training_curve.png``.
"""

from __future__ import annotations

from pathlib import Path

from labs.common.seq2seq import TrainedTranslator, train_translator
from labs.common.training import load_run_folder
from labs.name_transliteration.config import NameTransliterationConfig
from labs.name_transliteration.data import TASK, sample_names, vocabularies
from labs.name_transliteration.model import build_model, key_value_attention_class


def train(config: NameTransliterationConfig = NameTransliterationConfig(), out_dir: str | Path | None = None,
          verbose: int = 1) -> TrainedTranslator:
    """Train on names from the train split (validation: the dev split); save to ``out_dir`` when given."""
    return train_translator(config, out_dir, task=TASK, vocabularies=vocabularies, build_model=build_model,
                            sample=sample_names, verbose=verbose,
                            description=f"key-value attention model ({config.score} score)",
                            title="Thai -> English names (key-value attention)")


def load_run(model_dir: str | Path):
    """Load ``(model, vocabs, config)`` from a run folder written by :func:`train`."""
    key_value_attention_class()   # registers the layer, so that Keras can rebuild the model
    return load_run_folder(model_dir, TASK, NameTransliterationConfig)
