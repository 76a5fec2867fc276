"""Homework 3.1: the names a trained model never saw and writes wrong, sorted by why (issue 29).

    python -m labs train name-transliteration --out runs/default    # the default configuration, 10-15 min
    python benchmarks/name_transliteration_errors.py runs/default [--show 12] [--length-penalties 0 0.5 1 2 3]

Decodes the public test split's ``unseen`` names with beam 3, as the benchmark and the experiments do, and
sorts each name it writes wrong by its first wrong word:

- ``malformed target``: the base spelling that the word's spellings come from (pythainlp's neural
  ``thai2rom_onnx``, or its ``royin`` where the neural output is unusable) is no string of RTGS
  syllables (``บุญเรือง`` bunr, ``ธรรมสรณ์`` thamm): a model that learned to spell cannot write it.
- ``rule reading``: the model wrote one of the spellings of pythainlp's rule-based ``royin`` (RTGS)
  reading of the word, through the kit's own repairs and name rules, where the neural reading differs
  (``ยลรดี`` Yonradee against Yondee, ``ดลลดา`` Donlada against Donda): which syllables an unwritten vowel
  makes is the neural romanizer's habit word by word, which letters alone do not settle.
- ``in the top 3``: none of those, and a right spelling is among the beam's three. For these it also
  prints how much likelier the model finds what it wrote than the first right spelling of the three: the
  margin ``log p(written | x) - log p(right | x)`` in nats, where ``log p(y | x) = sum_t log p_t(y_t | y_<t,
  x)``, teacher-forced. Small margins are near coin flips that a better ranking might settle; large ones
  are readings the model prefers; a negative one, a right spelling ranked second only by the beam's length
  normalisation.
- ``other``: the rest, a name written with another number of words among them.

It also grades the same outputs as if every spelling of the rule reading were accepted too, and counts the
accepted spellings per name word with and without them: what accepting that reading would buy, and what it
would cost in leniency (``royin`` misreads words the neural romanizer gets right: ``กกกอด`` kakakot).

With ``--length-penalties``, it decodes the same names again with the beam ranked by ``log p / length ** A``
for each ``A``, and grades them as the benchmark does: whether another length normalisation puts the right
spelling first.

Prints the counts and a few names of each kind; writes benchmarks/results/name_transliteration_errors.json.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import write_results  # noqa: E402

from labs.common.files import read_csv  # noqa: E402
from labs.common.paths import DATASETS_DIR  # noqa: E402
from labs.name_transliteration.romanization import is_rtgs  # noqa: E402

KINDS = ("malformed target", "rule reading", "in the top 3", "other")


def rule_reading(word: str, raw: dict) -> set[str]:
    """Every accepted spelling of ``royin``'s reading of ``word``, through the kit's repairs and rules."""
    from labs.name_transliteration.romanization import base_spelling, spelling_variants

    base = base_spelling({"royin": raw["royin"]})
    return set(spelling_variants(word, base)) if base else set()


def malformed(raw: dict) -> bool:
    """True if a word's base spelling (its table row ``raw``: the neural reading, or royin's where that is
    unusable) is no string of RTGS syllables."""
    from labs.name_transliteration.romanization import base_spelling

    return not is_rtgs(base_spelling(raw) or "")


def sort_error(words: list[str], written: str, top_3: list[str], accepted: list[set[str]], raw: dict) -> dict:
    """Why a name of Thai ``words`` is written wrong as ``written`` (``top_3``: the beam's three spellings):
    its first wrong word and the kind of error (one of ``KINDS``). ``accepted``: each word's accepted
    spellings; ``raw``: the table rows by word. A name written with another number of words is ``other``,
    with no word to blame."""
    parts = written.split(" ")
    if len(parts) != len(words):
        return {"word": None, "kind": "other"}
    i = next(i for i, (part, spellings) in enumerate(zip(parts, accepted)) if part not in spellings)
    word = words[i]
    right = {" ".join(name) for name in itertools.product(*accepted)}
    if malformed(raw[word]):
        kind = "malformed target"
    elif parts[i] in rule_reading(word, raw[word]):
        kind = "rule reading"
    elif right & set(top_3):
        kind = "in the top 3"
    else:
        kind = "other"
    return {"word": word, "kind": kind}


def log_probabilities(model, vocabs, pairs: list[dict]) -> np.ndarray:
    """log p(y | x) = sum_t log p_t(y_t | y_<t, x) of each pair's ``target`` given its ``source``: (n,)."""
    from labs.common.metrics import true_token_probabilities
    from labs.common.pipeline import language_model_arrays

    # source (n, S): characters outside the vocabulary become <unk>, as when decoding
    source = vocabs["source"].encode_batch([pair["source"] for pair in pairs], unknown="unk")
    # target_in = <s> + spelling, target_out = spelling + </s>: (n, T) each
    target_in, target_out = language_model_arrays([pair["target"] for pair in pairs], vocabs["target"], "unk")
    # p_t (n, T, V): every step's distribution over the letters, the true letters fed in (teacher forcing)
    p = model.predict((source, target_in), verbose=0, batch_size=512)
    # (n, T): the probability of each true letter and of </s> after the last; 1 (log 0) on padding
    p_true = true_token_probabilities(p, target_out)
    return np.log(np.clip(p_true, 1e-30, None)).sum(axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "run", type=Path, help="a homework run folder (python -m labs train name-transliteration)"
    )
    parser.add_argument(
        "--show", type=int, default=12, help="names of each kind to print and keep (default 12)"
    )
    parser.add_argument(
        "--length-penalties",
        type=float,
        nargs="+",
        default=[],
        metavar="A",
        help="decode again with the beam ranked by log p / length ** A, for each A (e.g. 0 0.5 1 2), and "
        "print each one's accuracy (give the run folder first)",
    )
    args = parser.parse_args()

    from labs.name_transliteration import evaluate
    from labs.name_transliteration.data import DEFAULT_TABLE, load_lexicon
    from labs.name_transliteration.train import load_run
    from labs.name_transliteration.transliterate import transliterate

    model, vocabs, config = load_run(args.run)
    rows = [r for r in read_csv(DATASETS_DIR / "thai-names" / "test.csv") if r["stratum"] == "unseen"]
    raw = {r["word"]: r for r in read_csv(DEFAULT_TABLE)}
    lexicon = load_lexicon()
    beams = transliterate(model, vocabs, [r["source"] for r in rows], beam=3)

    wrong = {kind: [] for kind in KINDS}
    right = right_if_rule_readings = 0
    second_best = []  # the "in the top 3" names: (source, written, the first right spelling of the three)
    for row, beam in zip(rows, beams):
        words, parts = row["source"].split(" "), beam.output.split(" ")
        accepted = [set(lexicon.words[w].spellings) for w in words]
        if len(parts) == len(words) and all(part in a for part, a in zip(parts, accepted)):
            right += 1
            right_if_rule_readings += 1
            continue
        readings = [a | rule_reading(w, raw[w]) for w, a in zip(words, accepted)]
        if len(parts) == len(words) and all(part in r for part, r in zip(parts, readings)):
            right_if_rule_readings += 1
        error = sort_error(words, beam.output, list(beam.alternatives), accepted, raw)
        if error["kind"] == "in the top 3":
            right_names = {" ".join(name) for name in itertools.product(*accepted)}
            first_right = next(spelling for spelling in beam.alternatives if spelling in right_names)
            second_best.append((row["source"], beam.output, first_right))
        word = error["word"]
        wrong[error["kind"]].append(
            {
                "source": row["source"],
                "written": beam.output,
                "target": row["target"],
                "word": word,
                "thai2rom_onnx": raw[word]["thai2rom_onnx"] if word else None,
                "royin": raw[word]["royin"] if word else None,
            }
        )

    n = len(rows)
    name_words = [w for w in lexicon.words if not lexicon.is_dictionary_word(w)]
    per_word = sum(len(lexicon.words[w].spellings) for w in name_words) / len(name_words)
    per_word_with = sum(
        len(set(lexicon.words[w].spellings) | rule_reading(w, raw[w])) for w in name_words
    ) / len(name_words)
    malformed_words = sum(malformed(raw[w]) for w in name_words)
    print(f"{args.run}: {n:,} unseen names of the test split, beam 3: {right:,} right ({right / n:.2%})")
    for kind in KINDS:
        print(f"  wrong, {kind}: {len(wrong[kind]):,} ({len(wrong[kind]) / n:.2%} of the names)")
        for example in wrong[kind][: args.show]:
            print(
                f"    {example['source']}: wrote {example['written']}, target {example['target']} "
                f"(thai2rom_onnx {example['thai2rom_onnx']!r}, royin {example['royin']!r})"
            )
    margins = np.array([])
    if second_best:
        pairs = [{"source": s, "target": t} for s, written, first in second_best for t in (written, first)]
        # (names, 2): log p of the written spelling, then of the right one
        log_p = log_probabilities(model, vocabs, pairs).reshape(-1, 2)
        margins = log_p[:, 0] - log_p[:, 1]
        print(
            f"  in the top 3: the written spelling is likelier than the right one by a median "
            f"{np.median(margins):.2f} nats ({np.exp(np.median(margins)):.1f} times as probable); within 0.5 "
            f"nats for {np.mean(np.abs(margins) < 0.5):.0%} of them, within 1 for "
            f"{np.mean(np.abs(margins) < 1):.0%}; the right one is the more probable for "
            f"{np.sum(margins < 0)} (ranked second by log p / length)."
        )
    print(
        f"If the rule reading's spellings were accepted too: {right_if_rule_readings / n:.2%}, with "
        f"{per_word_with:.2f} accepted spellings per name word instead of {per_word:.2f}."
    )
    print(
        f"Name words whose base spelling is not RTGS syllables: {malformed_words:,} of {len(name_words):,}."
    )
    by_penalty = {}
    for penalty in args.length_penalties:  # graded as the benchmark grades (evaluate.summary)
        ranked = transliterate(model, vocabs, [r["source"] for r in rows], beam=3, length_penalty=penalty)
        summary = evaluate.summary(rows, [r.alternatives for r in ranked])
        key = f"{penalty:g}"
        by_penalty[key] = summary["per_stratum"]["unseen"]["accuracy"]
        print(f"Beam 3 ranked by log p / length ** {key}: {by_penalty[key]:.2%} right.")
    write_results(
        "name_transliteration_errors",
        {"run": str(args.run), "run_config": config.to_dict(), "beam": 3, "show": args.show},
        {
            "unseen_names": n,
            "right": right,
            "accuracy": right / n,
            "wrong": {kind: len(examples) for kind, examples in wrong.items()},
            "examples": {kind: examples[: args.show] for kind, examples in wrong.items()},
            "accuracy_if_rule_readings_accepted": right_if_rule_readings / n,
            "accepted_spellings_per_name_word": per_word,
            "accepted_spellings_per_name_word_with_rule_readings": per_word_with,
            "name_words_with_malformed_base_spelling": malformed_words,
            "name_words": len(name_words),
            "accuracy_by_length_penalty": by_penalty,
            "in_top_3_margin_nats": {
                "names": int(margins.size),
                "median": float(np.median(margins)) if margins.size else None,
                "within_0.5": float(np.mean(np.abs(margins) < 0.5)) if margins.size else None,
                "within_1": float(np.mean(np.abs(margins) < 1)) if margins.size else None,
                "right_more_probable": int(np.sum(margins < 0)),
            },
        },
        {},
        "CPU",
        command=f"python benchmarks/name_transliteration_errors.py {args.run} --show {args.show}"
        + (" --length-penalties " + " ".join(by_penalty) if by_penalty else ""),
    )


if __name__ == "__main__":
    main()
