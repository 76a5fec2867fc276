"""What every lab's configuration dataclass shares: checks of its numbers and a round trip through JSON."""

from __future__ import annotations

from dataclasses import asdict, fields

from labs.common.errors import InputError


class LabConfig:
    """Base of the labs' frozen configuration dataclasses.

    ``to_dict`` / ``from_dict`` carry a configuration through a run folder's ``metrics.json``
    (unknown keys, from an older or newer kit, are ignored); ``check_sizes`` rejects a size or
    count below 1 and a learning rate that is not positive, naming the field.
    """

    def check_sizes(self, names: tuple[str, ...]) -> None:
        for name in names:
            if getattr(self, name) < 1:
                raise InputError(f"{name} must be 1 or more, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise InputError(f"learning_rate must be greater than 0, got {self.learning_rate}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict):
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


class EncoderDecoderConfig(LabConfig):
    """Base of the configurations of lab 2 and the homework, whose encoder reads the source both ways."""

    @property
    def decoder_units(self) -> int:
        """The decoder's width, 2u: as wide as the encoder's two directions (``units`` each) side by side."""
        return 2 * self.units
