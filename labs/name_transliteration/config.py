"""Homework 3.1's configuration: one dataclass that the command line, the notebook and the tests share."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from labs.common.config import EncoderDecoderConfig
from labs.common.errors import InputError
from labs.common.validation import check_choices

SCORES = ("dot", "additive")
CELLS = ("lstm", "gru")


@dataclass(frozen=True)
class NameTransliterationConfig(EncoderDecoderConfig):
    """Model size, data and training budget for the Thai -> English name transliterator."""

    cell: str = field(default="lstm", metadata={"choices": CELLS})  # the encoder's and the decoder's RNN
    embedding_dim: int = 64
    units: int = 128  # per encoder direction; the decoder has 2 * units
    encoder_layers: int = 1  # bidirectional RNNs stacked in the encoder, each reading the one below
    key_dim: int = 64  # size of queries and keys (they only score)
    value_dim: int = 128  # size of values, and so of the context (what is read)
    score: str = field(
        default="dot", metadata={"choices": SCORES}
    )  # "dot" (scaled dot product) or "additive"
    second_read: bool = False  # a second decoder RNN (units wide) over [s_t; c_t] queries the attention again
    dropout: float = 0.25  # share of embeddings and output features dropped in training
    target_dropout: float = 0.0  # share of the decoder's input letters' embeddings dropped in training
    train_size: int = 100_000  # names drawn from the train split
    dictionary_share: float = 0.25  # share of them with a dictionary word for one name (more letter patterns)
    val_size: int = 2_000  # names from the dev split, for the validation curve
    epochs: int = 6
    batch_size: int = 128
    sort_window: int = 32  # batches whose names are sorted by length together (0: plain shuffled batches)
    learning_rate: float = 5e-3  # Adam's first step size, decaying to zero along a cosine
    weight_average: float = 0.0  # momentum of the weights' moving average, which the model ends with (0: off)
    label_smoothing: float = 0.0  # share of the target moved off the right token, spread over all (0: off)
    seed: int = 1

    def __post_init__(self):
        self.check_sizes(
            (
                "embedding_dim",
                "units",
                "encoder_layers",
                "key_dim",
                "value_dim",
                "train_size",
                "val_size",
                "epochs",
                "batch_size",
            )
        )
        check_choices([self.score], SCORES, "score")
        check_choices([self.cell], CELLS, "cell")
        if self.sort_window < 0:
            raise InputError(f"sort_window must be 0 (off) or more, got {self.sort_window}")
        if not 0 <= self.dictionary_share < 1:
            raise InputError(f"dictionary_share must be at least 0 and below 1, got {self.dictionary_share}")
        for name in ("dropout", "target_dropout", "weight_average", "label_smoothing"):
            if not 0 <= getattr(self, name) < 1:
                raise InputError(f"{name} must be at least 0 and below 1, got {getattr(self, name)}")

    @classmethod
    def demo(cls, **overrides) -> "NameTransliterationConfig":
        """``make demo``'s configuration: the default's 100,000 training names, three epochs instead of
        six, at a learning rate of 0.01 with dropout 0.1: as good on unseen names as five epochs at 0.003,
        better on seen ones, in about half the time (a short run gains from big steps: the README's
        experiments table)."""
        return replace(cls(epochs=3, learning_rate=1e-2, dropout=0.1), **overrides)

    @classmethod
    def tiny(cls, **overrides) -> "NameTransliterationConfig":
        """A seconds-long configuration for tests and CI: it runs everything, learns little."""
        return replace(
            cls(
                embedding_dim=8,
                units=16,
                key_dim=16,
                value_dim=16,
                train_size=1_000,
                val_size=100,
                epochs=1,
                batch_size=64,
            ),
            **overrides,
        )
