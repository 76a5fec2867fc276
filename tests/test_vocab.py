"""Vocabularies: fixed layout, round trips on every generated string, and clear unknown handling."""

import json

import numpy as np
import pytest

from labs.common.errors import InputError
from labs.common.files import read_csv
from labs.common.vocab import (
    END_ID,
    PAD_ID,
    START_ID,
    UNK_ID,
    Vocabulary,
    load_vocabularies,
    save_vocabularies,
)
from tests.conftest import DATASETS

COLUMNS = {
    "iso-dates": {"target": "date"},
    "date-pairs": {"source": "source", "target": "target"},
    "thai-names": {"source": "source", "target": "target"},
}
TASKS = {
    "iso-dates": "date-generation",
    "date-pairs": "date-translation",
    "thai-names": "name-transliteration",
}


def test_special_tokens_come_first_in_the_documented_order():
    vocab = Vocabulary.from_characters(["ab"])
    assert vocab.tokens[:4] == ["<pad>", "<s>", "</s>", "<unk>"]
    assert (PAD_ID, START_ID, END_ID, UNK_ID) == (0, 1, 2, 3)
    assert vocab.encode("ab", add_start=True, add_end=True) == [1, 4, 5, 2]


@pytest.mark.parametrize("dataset", sorted(COLUMNS))
def test_every_shipped_string_round_trips_through_its_vocabulary(dataset):
    vocabularies = load_vocabularies(DATASETS / dataset / "vocab.json", task=TASKS[dataset])
    for split in ("train", "dev", "test"):
        rows = read_csv(DATASETS / dataset / f"{split}.csv")
        for name, column in COLUMNS[dataset].items():
            vocab = vocabularies[name]
            for row in rows:
                ids = vocab.encode(row[column], add_start=True, add_end=True)
                assert UNK_ID not in ids
                assert vocab.decode(ids) == row[column]


def test_alternative_spellings_are_in_the_target_vocabulary():
    target = load_vocabularies(DATASETS / "thai-names" / "vocab.json")["target"]
    for row in read_csv(DATASETS / "thai-names" / "test.csv"):
        for spelling in filter(None, row["alternatives"].split("|")):
            assert target.decode(target.encode(spelling)) == spelling


def test_shipped_vocabularies_equal_the_ones_the_code_builds():
    from labs.date_generation.data import vocabularies as iso
    from labs.date_translation.data import vocabularies as pairs
    from labs.name_transliteration.data import vocabularies as names

    for dataset, build in (("iso-dates", iso), ("date-pairs", pairs), ("thai-names", names)):
        assert load_vocabularies(DATASETS / dataset / "vocab.json") == build()


def test_unknown_character_is_an_error_that_names_it_or_maps_to_unk():
    vocab = Vocabulary.from_characters(["0123456789-"], name="iso")
    with pytest.raises(InputError, match=r"'x' \(U\+0078\) at position 4 of '2018x'.*unknown='unk'"):
        vocab.encode("2018x")
    assert vocab.encode("2018x", unknown="unk")[-1] == UNK_ID
    assert vocab.decode(vocab.encode("2x", unknown="unk")) == "2\ufffd"
    assert vocab.decode(vocab.encode("2x", unknown="unk"), keep_unknown=False) == "2"


def test_special_token_names_in_text_are_characters_not_tokens():
    vocab = Vocabulary.from_characters(["<s>"])
    assert vocab.encode("<s>") == [vocab.tokens.index("<"), vocab.tokens.index("s"), vocab.tokens.index(">")]


def test_decode_stops_at_end_and_skips_padding():
    vocab = Vocabulary.from_characters(["ab"])
    assert vocab.decode([START_ID, 4, 5, END_ID, 4, PAD_ID]) == "ab"
    assert vocab.decode([4, END_ID, 5], stop_at_end=False) == "ab"
    with pytest.raises(InputError, match="outside"):
        vocab.decode([99])


def test_encode_batch_pads_with_zeros_and_refuses_to_truncate():
    vocab = Vocabulary.from_characters(["abc"])
    batch = vocab.encode_batch(["a", "abc"], add_end=True)
    assert batch.dtype == np.int32 and batch.shape == (2, 4)
    assert batch.tolist() == [[4, END_ID, 0, 0], [4, 5, 6, END_ID]]
    with pytest.raises(InputError, match="length=2"):
        vocab.encode_batch(["abc"], length=2)


def test_save_and_load_round_trip_and_checks(tmp_path):
    vocab = Vocabulary.from_characters(["สมชาย "])
    path = tmp_path / "vocab.json"
    save_vocabularies(path, "name-transliteration", {"source": vocab})
    assert load_vocabularies(path, task="name-transliteration")["source"] == vocab
    with pytest.raises(InputError, match="not 'date-generation'"):
        load_vocabularies(path, task="date-generation")
    path.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(InputError, match="not an Attention Lab vocabulary"):
        load_vocabularies(path)
    path.write_text("{not json")
    with pytest.raises(InputError, match="not a valid vocabulary JSON"):
        load_vocabularies(path)
    with pytest.raises(InputError, match="must start with"):
        Vocabulary(["a", "b"])
