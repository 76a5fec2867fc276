"""Lab 1's commands: ``data iso-dates``, ``sample`` and ``evaluate date-generation``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from labs.common.arguments import Commands, checked, positive_float, positive_int
from labs.common.isodate import parse_date_argument
from labs.date_generation.task import TASK


def add_commands(commands: Commands) -> None:
    data = commands.add_generator("iso-dates", generate_csv, "ISO dates for lab 1 (date generation)")
    data.add_argument(
        "--start",
        type=checked(lambda text: parse_date_argument(text, "--start")),
        default="1800-01-01",
        help="first date, YYYY-MM-DD (default 1800-01-01)",
    )
    data.add_argument(
        "--end",
        type=checked(lambda text: parse_date_argument(text, "--end")),
        default="2199-12-31",
        help="last date, YYYY-MM-DD (default 2199-12-31)",
    )

    sample = commands.add(
        "top", "sample", sample_command, help="print dates sampled from a trained lab 1 model"
    )
    sample.add_argument("--model", required=True, help="run folder written by `train date-generation`")
    _sampling_arguments(sample, n=20)
    sample.add_argument("--greedy", action="store_true", help="always take the most probable character")

    evaluate = commands.add(
        "evaluate",
        TASK.name,
        evaluate_command,
        help="lab 1: validity, uniqueness, distribution, cross-entropy",
    )
    evaluate.add_argument("--model", required=True, help="run folder written by `train date-generation`")
    _sampling_arguments(evaluate, n=10_000)


def _sampling_arguments(parser: argparse.ArgumentParser, n: int) -> None:
    parser.add_argument("--n", type=positive_int, default=n, help=f"how many dates (default {n:,})")
    parser.add_argument(
        "--temperature", type=positive_float, default=1.0, help="softmax temperature (default 1.0)"
    )
    parser.add_argument(
        "--top-k", type=positive_int, default=None, help="sample among the k most probable characters"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")


def generate_csv(args) -> None:
    from labs.common.files import check_writable, write_csv
    from labs.date_generation.data import COLUMNS, generate

    check_writable(args.out)  # fail before generating, not after
    count = write_csv(args.out, COLUMNS, generate(args.n, args.seed, start=args.start, end=args.end))
    print(f"wrote {count:,} rows to {args.out}", file=sys.stderr)


def sample_command(args) -> None:
    from labs.common.validation import check_row_count
    from labs.date_generation.sampling import sample
    from labs.date_generation.train import load_run

    check_row_count(args.n)
    model, vocabs, _ = load_run(args.model)
    for text in sample(
        model,
        vocabs,
        args.n,
        temperature=args.temperature,
        top_k=args.top_k,
        greedy=args.greedy,
        seed=args.seed,
    ):
        print(text)


def evaluate_command(args) -> None:
    from labs.common.config import TINY_FIGURES
    from labs.common.validation import check_row_count
    from labs.date_generation.evaluate import evaluate, format_report, save_report
    from labs.date_generation.train import load_run

    check_row_count(args.n)
    model, vocabs, config = load_run(args.model)
    report = evaluate(
        model, vocabs, config, n=args.n, temperature=args.temperature, top_k=args.top_k, seed=args.seed
    )
    print(format_report(report))
    if note := config.tiny_run_note(TINY_FIGURES):
        print("\n" + note)
    save_report(report, Path(args.model) / "evaluation.json")
    print(f"Saved {Path(args.model) / 'evaluation.json'}")
