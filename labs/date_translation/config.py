"""Lab 2's configuration: one dataclass that the command line, the notebook and the tests share."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from labs.common.config import EncoderDecoderConfig
from labs.common.errors import InputError
from labs.date_translation import variants

# The lecture's attention family on one task: the names in the table (labs/date_translation/variants.py)
# when the kit starts; a course's own variant, registered later, is in variants.VARIANTS.
ATTENTIONS = tuple(variants.VARIANTS)
CELLS = ("simple", "gru", "lstm")  # the decoder's recurrent cell (not the Transformer's: it has none)


@dataclass(frozen=True)
class DateTranslationConfig(EncoderDecoderConfig):
    """Model size, data and training budget for the date translator.

    ``attention`` picks the variant: ``"luong-additive"`` (the default, lab 2's model), or ``"none"``, the
    baseline: the same encoder and decoder, but the decoder sees only the encoder's final state. ``cell`` is
    the decoder's RNN; the Transformer has none and ignores it."""

    attention: str = field(
        # the table itself, so that a variant registered later is a choice too
        default="luong-additive",
        metadata={"choices": variants.VARIANTS, "aliases": {"no-attention": "none"}},
    )
    cell: str = field(default="lstm", metadata={"choices": CELLS})  # not used by the Transformer
    embedding_dim: int = 32
    units: int = 64  # per encoder direction; the decoder has 2 * units
    attention_units: int = 64  # size of the projected query and keys inside the score
    heads: int = 4  # multi-head and Transformer attention heads
    layers: int = (
        1  # Transformer layers, in the encoder and in the decoder (1: the same CPU budget as the others)
    )
    model_dim: int = 64  # the Transformer's width d
    train_size: int = 60_000  # pairs drawn from the train split of dates
    val_size: int = 2_000  # pairs drawn from the dev split, for the validation curve
    # 3 epochs: 100.00 % exact match on the benchmark's 10,000 held-out pairs in 254 s on a slow day of the
    # 2-core CPU (2026-11-28; 6 epochs took 478 s there on 2026-11-23, over the 300 s target); 2 epochs:
    # 99.67 %, under the 99.9 % target.
    epochs: int = 3
    batch_size: int = 128
    learning_rate: float = 3e-3
    seed: int = 1

    def __post_init__(self):
        variant = variants.get(self.attention)  # InputError naming the choices
        if self.cell not in CELLS:
            raise InputError(f"cell must be one of {', '.join(CELLS)}; got {self.cell!r}")
        self.check_sizes(
            (
                "embedding_dim",
                "units",
                "attention_units",
                "heads",
                "layers",
                "model_dim",
                "train_size",
                "val_size",
                "epochs",
                "batch_size",
            )
        )
        size = variant.heads_share
        # each head gets an equal share
        if size and getattr(self, size) % self.heads:
            raise InputError(f"{size} ({getattr(self, size)}) must be a multiple of heads ({self.heads})")

    @classmethod
    def from_dict(cls, values: dict) -> "DateTranslationConfig":
        """A configuration from a run folder's ``metrics.json``; run folders saved before the variants
        wrote ``attention`` as true (lab 2's model) or false (the baseline)."""
        if isinstance(values.get("attention"), bool):
            values = {**values, "attention": "luong-additive" if values["attention"] else "none"}
        return super().from_dict(values)

    @property
    def attends(self) -> bool:
        """Whether the decoder reads the source through attention (every variant but the baseline)."""
        return variants.get(self.attention).score is not None

    @classmethod
    def small(cls, **overrides) -> "DateTranslationConfig":
        """A 16-unit model trained briefly: small enough that one fixed vector becomes a bottleneck.

        At the default size, a 128-number encoder state can hold a whole date: the baseline comes within
        three points of the attention model in the default 3 epochs (97.18 % against 100.00 %) and reaches
        99.96 % in 6. At this size it cannot, and attention's lead shows."""
        return replace(
            cls(units=16, embedding_dim=16, attention_units=16, model_dim=16, train_size=30_000, epochs=4),
            **overrides,
        )

    @classmethod
    def demo(cls, **overrides) -> "DateTranslationConfig":
        """``make demo``'s configuration: half the training pairs, four epochs."""
        return replace(cls(train_size=30_000, epochs=4), **overrides)

    @classmethod
    def tiny(cls, **overrides) -> "DateTranslationConfig":
        """A seconds-long configuration for tests and CI: it runs everything, learns little."""
        return replace(
            cls(
                embedding_dim=8,
                units=16,
                attention_units=16,
                model_dim=16,
                layers=1,
                train_size=2_000,
                val_size=200,
                epochs=1,
                batch_size=64,
            ),
            **overrides,
        )
