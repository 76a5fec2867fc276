"""What every lab's configuration dataclass shares: checks of its numbers and a round trip through JSON."""

from __future__ import annotations

import ast
import inspect
import io
import tokenize
from dataclasses import asdict, fields
from pathlib import Path

from labs.common.errors import InputError
from labs.common.files import read_run_metrics

# What ``evaluate`` adds under the figures of a run as small as ``--tiny``'s (LabConfig.tiny_run_note).
TINY_FIGURES = (
    "these figures say that the pipeline runs, not what the model learns: train without --tiny to measure it"
)


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

    @property
    def is_tiny_run(self) -> bool:
        """Whether a run of this configuration trains on no more examples than ``--tiny``'s: a smoke test that
        learns next to nothing."""
        return self.train_size <= type(self).tiny().train_size

    def tiny_run_note(self, advice: str, run: str = "this run") -> str | None:
        """A note for a run that trained on no more examples than ``--tiny``'s (a smoke test that learns next
        to nothing), ending with ``advice``; None for any other run."""
        if not self.is_tiny_run:
            return None
        return (
            f"note: {run} trained on {self.train_size:,} examples, as a --tiny run does: a smoke test that "
            f"learns next to nothing; {advice}"
        )

    def replacing(self, out_dir) -> str | None:
        """What training this configuration into ``out_dir`` would replace: None when the folder holds no
        model; a note to print when it holds one (a run saves its model after every epoch, so from the end
        of the first, the earlier model is gone). A run as small as ``--tiny``'s never replaces a model
        trained on more: an InputError, before any work (the model to hand in would make way for one that
        learns next to nothing)."""
        out_dir = Path(out_dir)
        if not (out_dir / "model.keras").is_file():
            return None
        saved = read_run_metrics(out_dir)
        config = saved.get("config")
        size = config.get("train_size") if isinstance(config, dict) else None
        if self.is_tiny_run and (not isinstance(size, int) or size > type(self).tiny().train_size):
            what = f"trained on {size:,} examples" if isinstance(size, int) else "that is no --tiny run's"
            raise InputError(
                f"{str(out_dir)!r} holds a model {what}, and a run as small as --tiny's would replace "
                "it with one that learns next to nothing; give the smoke run a folder of its own "
                "(--out runs/tiny)"
            )
        seed = config.get("seed") if isinstance(config, dict) else None
        done = saved.get("epochs_done")
        about = ", ".join(
            part
            for part in (
                f"{done} epoch{'s' if done != 1 else ''}" if isinstance(done, int) else "",
                f"seed {seed}" if isinstance(seed, int) else "",
            )
            if part
        )
        return (
            f"note: {out_dir} already holds a model{f' ({about})' if about else ''}; this run replaces it "
            "when its first epoch ends (to keep it, stop now and train into another folder)"
        )

    @classmethod
    def field_comments(cls) -> dict[str, str]:
        """Each field's end-of-line comment in the class's source (the command line's help says it too)."""
        comments = {}
        for klass in reversed(cls.__mro__):  # a subclass's comment wins
            try:
                source = inspect.getsource(klass)
            except (OSError, TypeError):  # a built-in class, or no source file
                continue
            source = inspect.cleandoc("\n" + source) if source[:1].isspace() else source
            by_line = {
                token.start[0]: token.string.lstrip("# ").strip()
                for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT
            }
            body = ast.parse(source).body[0].body
            for node in body:
                if isinstance(node, ast.AnnAssign) and node.end_lineno in by_line:
                    comments[node.target.id] = by_line[node.end_lineno]
        return comments


class EncoderDecoderConfig(LabConfig):
    """Base of the configurations of lab 2 and the homework, whose encoder reads the source both ways."""

    @property
    def decoder_units(self) -> int:
        """The decoder's width, 2u: as wide as the encoder's two directions (``units`` each) side by side."""
        return 2 * self.units
