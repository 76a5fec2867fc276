"""Lab 2's configuration: one dataclass that the command line, the notebook and the tests share."""

from __future__ import annotations

from dataclasses import dataclass, replace

from labs.common.config import LabConfig


@dataclass(frozen=True)
class DateTranslationConfig(LabConfig):
    """Model size, data and training budget for the date translator.

    ``attention=False`` gives the baseline: the same encoder and decoder, but the decoder sees
    only the encoder's final state.
    """

    attention: bool = True
    embedding_dim: int = 32
    units: int = 64              # per encoder direction; the decoder has 2 * units
    attention_units: int = 64    # size of the projected query and keys inside the additive score
    train_size: int = 60_000     # pairs drawn from the train split of dates
    val_size: int = 2_000        # pairs drawn from the dev split, for the validation curve
    epochs: int = 6
    batch_size: int = 128
    learning_rate: float = 3e-3
    seed: int = 1

    def __post_init__(self):
        self.check_sizes(("embedding_dim", "units", "attention_units", "train_size", "val_size", "epochs", "batch_size"))

    @classmethod
    def small(cls, **overrides) -> "DateTranslationConfig":
        """A 16-unit model trained briefly: small enough that one fixed vector becomes a bottleneck.

        At the default size, a 128-number encoder state holds a whole date and the baseline
        nearly matches the attention model; at this size it cannot, and attention's lead shows.
        """
        return replace(cls(units=16, embedding_dim=16, attention_units=16, train_size=30_000, epochs=4), **overrides)

    @classmethod
    def demo(cls, **overrides) -> "DateTranslationConfig":
        """``make demo``'s configuration: half the training pairs, four epochs."""
        return replace(cls(train_size=30_000, epochs=4), **overrides)

    @classmethod
    def tiny(cls, **overrides) -> "DateTranslationConfig":
        """A seconds-long configuration for tests and CI: it runs everything, learns little."""
        return replace(cls(embedding_dim=8, units=16, attention_units=16, train_size=2_000, val_size=200, epochs=1,
                           batch_size=64), **overrides)
