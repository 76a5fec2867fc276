"""Homework 3.1's commands: ``data thai-names``, ``data romanization-table``, ``romanize``, ``selftest
homework`` and ``evaluate name-transliteration``."""

from __future__ import annotations

import sys
from pathlib import Path

from labs.common.arguments import Commands, positive_int
from labs.common.paths import DATASETS_DIR
from labs.name_transliteration.task import TASK


def add_commands(commands: Commands) -> None:
    data = commands.add_generator(
        "thai-names", generate_csv, "Thai name -> English name pairs for homework 3.1"
    )
    data.add_argument("--split", default="train", help="train, dev or test (default train)")
    data.add_argument("--table", default=None, help="romanization table (default: the shipped one)")

    table = commands.add(
        "data", "romanization-table", build_table, help="romanize every Thai name word (pythainlp, ~1 minute)"
    )
    table.add_argument(
        "--out", default=str(DATASETS_DIR / "thai-names" / "romanization.csv"), help="output CSV"
    )

    romanize = commands.add(
        "top",
        "romanize",
        romanize_command,
        help="print the kit's English spellings of Thai name words (CSV)",
        description="Print, as CSV (thai,spelling,alternatives), the kit's main English spelling "
        "and its accepted alternatives for Thai name words: from the shipped table "
        "where a word is there, romanized live otherwise.",
    )
    romanize.add_argument(
        "words", nargs="*", metavar="WORD", help="Thai words (a full name may be one quoted argument)"
    )
    romanize.add_argument(
        "--file", default=None, help="a UTF-8 text file of Thai words, separated by spaces or lines"
    )
    romanize.add_argument("--table", default=None, help="romanization table (default: the shipped one)")

    selftest = commands.add(
        "top", "selftest", selftest_command, help="check your key-value attention layer (homework 3.1)"
    )
    selftest.add_argument("what", choices=["homework"], help="what to check")

    evaluate = commands.add(
        "evaluate",
        TASK.name,
        evaluate_command,
        help="homework 3.1: accuracy, CER, mean F, MRR, per stratum and length",
    )
    evaluate.add_argument("--model", required=True, help="run folder written by `train name-transliteration`")
    evaluate.add_argument(
        "--data",
        default=str(DATASETS_DIR / "thai-names" / "test.csv"),
        help="CSV of names to score (default: the public test split)",
    )
    evaluate.add_argument(
        "--beam", type=positive_int, default=3, help="beam width; MRR and top-k use the beams (default 3)"
    )


def generate_csv(args) -> None:
    from labs.common.files import check_writable, write_csv
    from labs.name_transliteration.data import COLUMNS, DEFAULT_TABLE, generate

    check_writable(args.out)  # fail before generating, not after
    rows = generate(args.n, args.seed, split=args.split, table=args.table or DEFAULT_TABLE)
    print(f"wrote {write_csv(args.out, COLUMNS, rows):,} rows to {args.out}", file=sys.stderr)


def build_table(args) -> None:
    from labs.name_transliteration.romanization import build_table as build

    print(f"wrote {build(args.out):,} words to {args.out}")


def romanize_command(args) -> None:
    import csv

    from labs.common.errors import InputError
    from labs.name_transliteration.data import DEFAULT_TABLE, load_lexicon
    from labs.name_transliteration.romanization import ROMANIZE_COLUMNS, checked_words, romanize_table_or_live

    words = [w for text in args.words for w in text.split()]
    if args.file is not None:
        try:
            words += Path(args.file).read_text(encoding="utf-8").split()
        except (OSError, UnicodeDecodeError) as error:
            reason = (
                "it is not UTF-8 text"
                if isinstance(error, UnicodeDecodeError)
                else (error.strerror or str(error))
            )
            raise InputError(f"cannot read {args.file!r}: {reason}") from None
    words = checked_words(words)  # before the table's seconds of reading
    rows = romanize_table_or_live(words, load_lexicon(args.table or DEFAULT_TABLE).words)
    writer = csv.DictWriter(sys.stdout, ROMANIZE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def selftest_command(args) -> int:
    from labs.name_transliteration.selftest import main

    return main()


def evaluate_command(args) -> None:
    from labs.common.config import TINY_FIGURES
    from labs.common.errors import InputError
    from labs.common.files import read_csv, write_json
    from labs.name_transliteration import evaluate
    from labs.name_transliteration.data import COLUMNS
    from labs.name_transliteration.train import load_run
    from labs.name_transliteration.transliterate import transliterate

    if not Path(args.data).is_file():
        raise InputError(f"no CSV file at {args.data!r}")
    names = read_csv(args.data)
    missing = [c for c in ("source", "target") if names and c not in names[0]]
    if not names or missing:
        raise InputError(f"{args.data!r} holds no names (expected the columns {', '.join(COLUMNS)})")
    model, vocabs, config = load_run(args.model)
    sources = [r["source"] for r in names]
    decoded = transliterate(model, vocabs, sources, beam=args.beam, progress="names")
    candidates = [r.alternatives for r in decoded]
    result = evaluate.summary(names, candidates)
    print(evaluate.format_summary(result))
    best = [c[0] if c else "" for c in candidates]
    wrong = [(row, b) for row, b in zip(names, best) if b not in evaluate.accepted_spellings(row)][:8]
    if wrong:
        print("\nsome wrong outputs:")
        for row, written in wrong:
            stratum = row.get("stratum", "seen")
            print(f"  {row['source']}  ->  {written}   (expected {row['target']}, {stratum} words)")
    if note := config.tiny_run_note(TINY_FIGURES):
        print("\n" + note)
    write_json(Path(args.model) / "evaluation.json", result)
    print(f"\nSaved {Path(args.model) / 'evaluation.json'}")
