"""Train lab 2's date translator (or its no-attention baseline) with teacher forcing.

    python -m labs train date-translation --out runs/translator
    python -m labs train date-translation --out runs/baseline --no-attention

Teacher forcing and the training loop are shared with homework 3.1 (:mod:`labs.common.seq2seq`).
A run folder holds ``model.keras``, ``vocab.json`` (source and target vocabularies),
``metrics.json`` and ``training_curve.png``.
"""

from __future__ import annotations

from pathlib import Path

from labs.common.seq2seq import TrainedTranslator, train_translator
from labs.common.training import load_run_folder
from labs.date_translation.config import DateTranslationConfig
from labs.date_translation.data import TASK, sample_pairs, vocabularies
from labs.date_translation.model import build_model

TARGET_LENGTH = len("YYYY-MM-DD") + 1   # <s> + 10 characters in, 10 characters + </s> out


def train(config: DateTranslationConfig = DateTranslationConfig(), out_dir: str | Path | None = None,
          verbose: int = 1) -> TrainedTranslator:
    """Train on pairs from the train split of dates (validation: the dev split); save to ``out_dir``."""
    return train_translator(config, out_dir, task=TASK, vocabularies=vocabularies, build_model=build_model,
                            sample=sample_pairs, verbose=verbose,
                            description="attention model" if config.attention else "baseline (no attention)",
                            title="Date translation" + ("" if config.attention else " (baseline, no attention)"))


def load_run(model_dir: str | Path):
    """Load ``(model, vocabs, config)`` from a run folder written by :func:`train`."""
    return load_run_folder(model_dir, TASK, DateTranslationConfig)
