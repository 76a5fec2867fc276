"""Lab 2's commands: ``data date-pairs``, ``formats`` and ``evaluate date-translation``."""

from __future__ import annotations

import sys
from pathlib import Path

from labs.common.arguments import Commands, positive_int
from labs.date_translation.task import TASK


def add_commands(commands: Commands) -> None:
    data = commands.add_generator(
        "date-pairs", generate_csv, "human date -> ISO pairs for lab 2 (date translation)"
    )
    data.add_argument("--split", default="train", help="train, dev or test (default train)")
    data.add_argument("--locale", action="append", help="en_US, en_GB, th_TH (repeat or comma-separate)")
    data.add_argument(
        "--format",
        action="append",
        dest="formats",
        help="format ids (repeat or comma-separate); see `python -m labs formats`",
    )

    commands.add("top", "formats", list_formats, help="list the date formats of lab 2 with an example each")

    evaluate = commands.add(
        "evaluate", TASK.name, evaluate_command, help="lab 2: exact match per format, locale, field, length"
    )
    evaluate.add_argument("--model", required=True, help="run folder written by `train date-translation`")
    evaluate.add_argument("--baseline", default=None, help="a baseline run folder to compare by input length")
    evaluate.add_argument(
        "--n", type=positive_int, default=10_000, help="held-out pairs from the test split (default 10,000)"
    )
    evaluate.add_argument("--beam", type=positive_int, default=1, help="beam width (default 1: greedy)")


def _split_commas(values: list[str] | None) -> list[str] | None:
    """``--locale en_US,th_TH --locale en_GB`` -> ``['en_US', 'th_TH', 'en_GB']``."""
    if values is None:
        return None
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def generate_csv(args) -> None:
    from labs.common.files import check_writable, write_csv
    from labs.date_translation.data import COLUMNS, generate

    check_writable(args.out)  # fail before generating, not after
    rows = generate(
        args.n,
        args.seed,
        split=args.split,
        locales=_split_commas(args.locale),
        format_ids=_split_commas(args.formats),
    )
    print(f"wrote {write_csv(args.out, COLUMNS, rows):,} rows to {args.out}", file=sys.stderr)


def list_formats(args) -> None:
    import random
    from datetime import date

    from labs.date_translation.formats import FORMATS, render

    rng = random.Random(0)
    for fmt in FORMATS:
        print(f"{fmt.id:24} {fmt.locale}  {render(fmt, date(2018, 1, 27), rng)}")


def evaluate_command(args) -> None:
    from labs.common.config import TINY_FIGURES
    from labs.common.files import write_json
    from labs.common.validation import check_row_count
    from labs.date_translation import evaluate
    from labs.date_translation.data import sample_pairs
    from labs.date_translation.train import load_run
    from labs.date_translation.translate import translate

    check_row_count(args.n)
    pairs = sample_pairs(args.n, seed=3, split="test")  # seed 3: the public test split's rows come first
    tables, notes = {}, []
    for name, folder in (("attention", args.model), ("baseline", args.baseline)):
        if folder is None:
            continue
        model, vocabs, config = load_run(folder)
        notes.append(config.tiny_run_note(TINY_FIGURES, run=f"the {name} model ({folder})"))
        sources = [p["source"] for p in pairs]
        decoded = translate(model, vocabs, sources, beam=args.beam, progress=f"dates with the {name} model")
        predictions = [t.output for t in decoded]
        tables[name] = evaluate.results_table(pairs, predictions)
    result = evaluate.summary(tables["attention"])
    print(evaluate.format_summary(result))
    print("\nexact match per format (worst first):")
    print(
        evaluate.breakdown(tables["attention"], "format_id").head(12).to_string(float_format="{:.2%}".format)
    )
    if "baseline" in tables:
        result["baseline"] = evaluate.summary(tables["baseline"])
        print("\n" + evaluate.format_summary(result["baseline"], "baseline (no attention)"))
        print("\nexact match by source length (characters):")
        print(evaluate.compare_by_length(tables).to_string(float_format="{:.2%}".format))
    for note in filter(None, notes):
        print("\n" + note)
    write_json(Path(args.model) / "evaluation.json", result)
    print(f"\nSaved {Path(args.model) / 'evaluation.json'}")
