"""Character vocabularies: the contract between a dataset, a model and the grader.

Layout (fixed, versioned): ``0 = <pad>``, ``1 = <s>``, ``2 = </s>``, ``3 = <unk>``, then the
characters in code-point order. A vocabulary is saved as JSON beside every dataset and every
submission, so that the grader encodes hidden inputs exactly as the student's model expects.

A task has one vocabulary file that may hold several named vocabularies: a translation task
has a ``source`` and a ``target`` vocabulary; the date-generation language model has only
``target``.

Characters are Unicode code points, so a Thai vowel or tone mark (``ี``, ``่``) is a token of
its own, as it is in the lecture's character models.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from labs.common.errors import InputError
from labs.common.files import write_json

PAD, START, END, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIAL_TOKENS = (PAD, START, END, UNK)
PAD_ID, START_ID, END_ID, UNK_ID = range(4)

FILE_FORMAT = "attention-lab-vocab"
FILE_VERSION = 1


class Vocabulary:
    """A character vocabulary with the kit's fixed special tokens.

    >>> vocab = Vocabulary.from_characters("0123456789-", name="iso")
    >>> vocab.encode("2018-03-19", add_end=True)[:3]
    [7, 5, 6]
    >>> vocab.decode(vocab.encode("2018-03-19", add_start=True, add_end=True))
    '2018-03-19'
    """

    def __init__(self, tokens: Sequence[str], name: str = "vocabulary"):
        tokens = list(tokens)
        if tuple(tokens[:4]) != SPECIAL_TOKENS:
            raise InputError(f"vocabulary {name!r} must start with {list(SPECIAL_TOKENS)}, got {tokens[:4]}")
        characters = tokens[4:]
        if any(len(c) != 1 for c in characters):
            bad = next(c for c in characters if len(c) != 1)
            raise InputError(
                f"vocabulary {name!r}: every entry after the special tokens must be one character, got "
                f"{bad!r}"
            )
        if len(set(characters)) != len(characters):
            raise InputError(f"vocabulary {name!r} lists a character twice")
        self.name = name
        self.tokens: list[str] = tokens
        self._ids = {token: i for i, token in enumerate(tokens)}

    @classmethod
    def from_characters(cls, characters: Iterable[str], name: str = "vocabulary") -> "Vocabulary":
        """Build the vocabulary of a set of characters (or of all characters in some strings)."""
        chars = sorted({c for text in characters for c in text})
        return cls(list(SPECIAL_TOKENS) + chars, name=name)

    def __len__(self) -> int:
        return len(self.tokens)

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocabulary) and self.tokens == other.tokens

    def __repr__(self) -> str:
        return f"Vocabulary(name={self.name!r}, size={len(self)})"

    @property
    def characters(self) -> list[str]:
        """The ordinary characters, without the special tokens."""
        return self.tokens[4:]

    def __contains__(self, character: str) -> bool:
        return character in self._ids and character not in SPECIAL_TOKENS

    def encode(
        self, text: str, *, add_start: bool = False, add_end: bool = False, unknown: str = "error"
    ) -> list[int]:
        """Turn ``text`` into token ids.

        ``unknown="error"`` (the default) raises InputError naming the first character that is
        not in the vocabulary; ``unknown="unk"`` maps such characters to ``<unk>`` (id 3).
        """
        if unknown not in ("error", "unk"):
            raise InputError(f"unknown={unknown!r}; choose 'error' or 'unk'")
        ids = [START_ID] if add_start else []
        for position, character in enumerate(text):
            token_id = self._ids.get(character)
            if token_id is None or token_id < len(SPECIAL_TOKENS):
                if unknown == "error":
                    raise InputError(
                        f"character {character!r} (U+{ord(character):04X}) at position {position} of "
                        f"{text!r} "
                        f"is not in the {self.name} vocabulary; pass unknown='unk' to map it to {UNK}"
                    )
                token_id = UNK_ID
            ids.append(token_id)
        if add_end:
            ids.append(END_ID)
        return ids

    def decode(self, ids: Iterable[int], *, stop_at_end: bool = True, keep_unknown: bool = True) -> str:
        """Turn token ids back into text.

        Skips ``<pad>`` and ``<s>``; stops at the first ``</s>`` when ``stop_at_end`` (what a
        decoder wants); writes ``<unk>`` as the replacement character U+FFFD unless
        ``keep_unknown`` is false, in which case unknown tokens are dropped.
        """
        characters = []
        for token_id in ids:
            token_id = int(token_id)
            if not 0 <= token_id < len(self.tokens):
                raise InputError(
                    f"token id {token_id} is outside the {self.name} vocabulary (size {len(self)})"
                )
            if token_id == END_ID:
                if stop_at_end:
                    break
                continue
            if token_id in (PAD_ID, START_ID):
                continue
            if token_id == UNK_ID:
                if keep_unknown:
                    characters.append("\ufffd")
                continue
            characters.append(self.tokens[token_id])
        return "".join(characters)

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        add_start: bool = False,
        add_end: bool = False,
        length: int | None = None,
        unknown: str = "error",
    ) -> np.ndarray:
        """Encode ``texts`` into one ``int32`` array of shape ``(len(texts), length)``, padded with 0.

        ``length`` defaults to the longest encoded text; a text longer than ``length`` is an
        error rather than silently cut.
        """
        encoded = [self.encode(t, add_start=add_start, add_end=add_end, unknown=unknown) for t in texts]
        longest = max((len(e) for e in encoded), default=0)
        if length is None:
            length = longest
        elif longest > length:
            too_long = next(t for t, e in zip(texts, encoded) if len(e) > length)
            raise InputError(f"{too_long!r} needs {longest} tokens but length={length}; raise length")
        batch = np.zeros((len(texts), length), dtype=np.int32)  # (batch, length)
        for row, ids in enumerate(encoded):
            batch[row, : len(ids)] = ids
        return batch

    def to_list(self) -> list[str]:
        return list(self.tokens)


def save_vocabularies(path: str | os.PathLike, task: str, vocabularies: Mapping[str, Vocabulary]) -> None:
    """Save a task's named vocabularies (for example ``source`` and ``target``) as one JSON file."""
    write_json(
        path,
        {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "task": task,
            "vocabularies": {name: vocab.to_list() for name, vocab in vocabularies.items()},
        },
    )


def load_vocabularies(path: str | os.PathLike, task: str | None = None) -> dict[str, Vocabulary]:
    """Load the vocabularies saved by :func:`save_vocabularies`, checking format and task."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no vocabulary file at {str(path)!r}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{str(path)!r} is not a valid vocabulary JSON file: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FILE_FORMAT:
        raise InputError(
            f"{str(path)!r} is not an Attention Lab vocabulary file (expected format {FILE_FORMAT!r})"
        )
    if data.get("version") != FILE_VERSION:
        raise InputError(
            f"{str(path)!r} has vocabulary version {data.get('version')!r}; this kit reads version "
            f"{FILE_VERSION}"
        )
    if task is not None and data.get("task") != task:
        raise InputError(f"{str(path)!r} is the vocabulary of task {data.get('task')!r}, not {task!r}")
    vocabularies = data.get("vocabularies")
    if not isinstance(vocabularies, dict) or not vocabularies:
        raise InputError(f"{str(path)!r} holds no vocabularies")
    return {name: Vocabulary(tokens, name=f"{data['task']} {name}") for name, tokens in vocabularies.items()}
