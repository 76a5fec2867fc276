"""Train lab 2's date translator (or its no-attention baseline) with teacher forcing.

    python -m labs train date-translation --out runs/translator
    python -m labs train date-translation --out runs/baseline --no-attention

Teacher forcing and the training loop are shared with homework 3.1 (:mod:`labs.common.seq2seq`).
A run folder holds ``model.keras``, ``vocab.json`` (source and target vocabularies),
``metrics.json`` and ``training_curve.png``.
"""

from __future__ import annotations

from pathlib import Path

from labs.common.seq2seq import TrainedTranslator, save_translator_run, train_translator
from labs.common.training import load_run_folder, prepare_run_folder, set_seed
from labs.date_translation.config import DateTranslationConfig
from labs.date_translation.data import TASK, sample_pairs, vocabularies
from labs.date_translation.model import build_model

TARGET_LENGTH = len("YYYY-MM-DD") + 1   # <s> + 10 characters in, 10 characters + </s> out


def train(config: DateTranslationConfig = DateTranslationConfig(), out_dir: str | Path | None = None,
          verbose: int = 1) -> TrainedTranslator:
    """Train on pairs from the train split of dates (validation: the dev split); save to ``out_dir``."""
    if out_dir is not None:
        out_dir = prepare_run_folder(out_dir)
    set_seed(config.seed)
    vocabs = vocabularies()
    model = build_model(config, len(vocabs["source"]), len(vocabs["target"]))
    run = train_translator(model, config, vocabs, sample_pairs(config.train_size, config.seed, split="train"),
                           sample_pairs(config.val_size, config.seed, split="dev"),
                           description="attention model" if config.attention else "baseline (no attention)",
                           verbose=verbose)
    if out_dir is not None:
        title = "Date translation" + ("" if config.attention else " (baseline, no attention)")
        save_translator_run(run, out_dir, TASK, title)
    return run


def load_run(model_dir: str | Path):
    """Load ``(model, vocabs, config)`` from a run folder written by :func:`train`."""
    return load_run_folder(model_dir, TASK, DateTranslationConfig)
