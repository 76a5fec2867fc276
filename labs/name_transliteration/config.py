"""Homework 3.1's configuration: one dataclass that the command line, the notebook and the tests share."""

from __future__ import annotations

from dataclasses import dataclass, replace

from labs.common.config import LabConfig
from labs.common.errors import InputError
from labs.common.validation import check_choices

SCORES = ("dot", "additive")


@dataclass(frozen=True)
class NameTransliterationConfig(LabConfig):
    """Model size, data and training budget for the Thai -> English name transliterator."""

    embedding_dim: int = 64
    units: int = 128             # per encoder direction; the decoder has 2 * units
    key_dim: int = 64            # size of queries and keys (they only score)
    value_dim: int = 128         # size of values, and so of the context (what is read)
    score: str = "dot"           # "dot" (scaled dot product) or "additive"
    dropout: float = 0.25        # share of embeddings and output features dropped in training
    train_size: int = 100_000    # names drawn from the train split
    val_size: int = 2_000        # names from the dev split, for the validation curve
    epochs: int = 6
    batch_size: int = 128
    learning_rate: float = 3e-3
    seed: int = 1

    def __post_init__(self):
        self.check_sizes(("embedding_dim", "units", "key_dim", "value_dim", "train_size", "val_size", "epochs", "batch_size"))
        check_choices([self.score], SCORES, "score")
        if not 0 <= self.dropout < 1:
            raise InputError(f"dropout must be at least 0 and below 1, got {self.dropout}")

    @classmethod
    def demo(cls, **overrides) -> "NameTransliterationConfig":
        """``make demo``'s configuration: 40,000 training names, four epochs."""
        return replace(cls(train_size=40_000, epochs=4), **overrides)

    @classmethod
    def tiny(cls, **overrides) -> "NameTransliterationConfig":
        """A seconds-long configuration for tests and CI: it runs everything, learns little."""
        return replace(cls(embedding_dim=8, units=16, key_dim=16, value_dim=16, train_size=1_000, val_size=100,
                           epochs=1, batch_size=64), **overrides)
