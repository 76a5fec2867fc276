"""Lab 1's configuration: one dataclass that the command line, the notebook and the tests share."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date

from labs.common.config import LabConfig
from labs.common.errors import InputError
from labs.common.isodate import parse_date_argument

CELLS = ("lstm", "gru")


@dataclass(frozen=True)
class DateGenerationConfig(LabConfig):
    """Model size, data and training budget for the date-generation language model.

    The defaults train on a 2-core CPU in under two minutes and reach the targets in
    ``benchmarks/date_generation.py``; :meth:`tiny` is the configuration CI runs.
    """

    cell: str = "lstm"  # "lstm" or "gru"
    embedding_dim: int = 16  # size of each character's learned vector
    units: int = 128  # RNN state size
    train_size: int = 200_000  # dates drawn from the generator for training (fresh data, seed `seed`)
    val_size: int = 5_000  # dates for the validation curve (the public dev split's seed)
    epochs: int = 6
    batch_size: int = 256
    learning_rate: float = 3e-3
    seed: int = 1
    start: str = "1800-01-01"  # the date distribution: uniform over [start, end]
    end: str = "2199-12-31"

    def __post_init__(self):
        if self.cell not in CELLS:
            raise InputError(f"unknown cell {self.cell!r}; choose one of: {', '.join(CELLS)}")
        self.check_sizes(("embedding_dim", "units", "train_size", "val_size", "epochs", "batch_size"))

    @property
    def start_date(self) -> date:
        return parse_date_argument(self.start, "start")

    @property
    def end_date(self) -> date:
        return parse_date_argument(self.end, "end")

    @classmethod
    def demo(cls, **overrides) -> "DateGenerationConfig":
        """``make demo``'s configuration: half the training dates, four epochs."""
        return replace(cls(train_size=100_000, epochs=4), **overrides)

    @classmethod
    def tiny(cls, **overrides) -> "DateGenerationConfig":
        """A seconds-long configuration for tests and CI: it runs everything, learns little."""
        return replace(
            cls(units=32, embedding_dim=8, train_size=3_000, val_size=500, epochs=1, batch_size=128),
            **overrides,
        )
