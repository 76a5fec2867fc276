"""The kit's command line: ``python -m labs <command> ...``.

Mistakes in what the user typed (a bad number, an unknown locale, a folder that does not
exist) end with one line on stderr and exit status 2, never a traceback, and never a partial
output file.
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import time
from pathlib import Path

from labs.common.errors import InputError
from labs.common.isodate import parse_date_argument
from labs.common.paths import DATASETS_DIR, REPO_ROOT

DATASET_NAMES = ("iso-dates", "date-pairs", "thai-names")


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake on one line instead of a usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _split_commas(values: list[str] | None) -> list[str] | None:
    """``--locale en_US,th_TH --locale en_GB`` -> ``['en_US', 'th_TH', 'en_GB']``."""
    if values is None:
        return None
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m labs", description="Attention Lab: RNN and attention course labs.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    data = commands.add_parser("data", help="generate synthetic datasets",
                               description="Generate synthetic data, or (re)build the public splits.")
    datasets = data.add_subparsers(dest="dataset", required=True, parser_class=_Parser)
    for name, help_text in (("iso-dates", "ISO dates for lab 1 (date generation)"),
                            ("date-pairs", "human date -> ISO pairs for lab 2 (date translation)"),
                            ("thai-names", "Thai name -> English name pairs for homework 3.1")):
        sub = datasets.add_parser(name, help=help_text, description=f"Write {help_text} as CSV.")
        sub.add_argument("--n", type=int, required=True, help="number of rows")
        sub.add_argument("--seed", type=int, default=0, help="random seed (default 0); same seed, same bytes")
        sub.add_argument("--out", required=True, help="output CSV file")
        if name == "iso-dates":
            sub.add_argument("--start", default="1800-01-01", help="first date, YYYY-MM-DD (default 1800-01-01)")
            sub.add_argument("--end", default="2199-12-31", help="last date, YYYY-MM-DD (default 2199-12-31)")
        else:
            sub.add_argument("--split", default="train", help="train, dev or test (default train)")
        if name == "date-pairs":
            sub.add_argument("--locale", action="append", help="en_US, en_GB, th_TH (repeat or comma-separate)")
            sub.add_argument("--format", action="append", dest="formats",
                             help="format ids (repeat or comma-separate); see `python -m labs formats`")
        if name == "thai-names":
            sub.add_argument("--table", default=None, help="romanization table (default: the shipped one)")
    build = datasets.add_parser("build", help="(re)write the public splits under datasets/")
    build.add_argument("--out", default=str(DATASETS_DIR), help="output folder (default: the kit's datasets/)")
    table = datasets.add_parser("romanization-table", help="romanize every Thai name word (pythainlp, ~1 minute)")
    table.add_argument("--out", default=str(DATASETS_DIR / "thai-names" / "romanization.csv"), help="output CSV")
    show = datasets.add_parser("show", help="print a few rows of each public dataset")
    show.add_argument("--n", type=int, default=4, help="rows per dataset (default 4)")
    show.add_argument("--datasets", default=str(DATASETS_DIR), help="datasets folder (default: the kit's)")

    commands.add_parser("formats", help="list the date formats of lab 2 with an example each")
    commands.add_parser("demo", help="build the datasets, check them against the shipped ones, show examples")
    return parser


def _generate(args) -> None:
    from labs.common.files import check_writable, write_csv

    check_writable(args.out)  # fail before generating, not after
    if args.dataset == "iso-dates":
        from labs.date_generation import data

        start = parse_date_argument(args.start, "--start")
        end = parse_date_argument(args.end, "--end")
        rows = data.generate(args.n, args.seed, start=start, end=end)
    elif args.dataset == "date-pairs":
        from labs.date_translation import data

        rows = data.generate(args.n, args.seed, split=args.split, locales=_split_commas(args.locale),
                             format_ids=_split_commas(args.formats))
    else:
        from labs.name_transliteration import data

        rows = data.generate(args.n, args.seed, split=args.split, table=args.table or data.DEFAULT_TABLE)
    count = write_csv(args.out, data.COLUMNS, rows)
    print(f"wrote {count:,} rows to {args.out}", file=sys.stderr)


def _show(datasets_dir: Path, n: int) -> None:
    from labs.common.files import read_csv
    from labs.public_datasets import PUBLIC_DATASETS

    for dataset in PUBLIC_DATASETS:
        rows = read_csv(datasets_dir / dataset.name / "train.csv")
        print(f"\n{dataset.name} ({dataset.task}), first {n} of {len(rows):,} training rows:")
        for row in rows[:n]:
            print("  " + _describe(row))


def _describe(row: dict) -> str:
    """One readable line per row: ``source -> target  [details]``."""
    if "source" not in row:
        return row["date"]
    if "format_id" in row:
        details = f"{row['format_id']}, {row['locale']}"
    else:
        also = row["alternatives"].replace("|", ", ")
        details = (f"also {also}; " if also else "") + f"{row['gender']}, {row['stratum']}"
    return f"{row['source']}  ->  {row['target']}   [{details}]"


def _formats() -> None:
    import random
    from datetime import date

    from labs.date_translation.formats import FORMATS, render

    rng = random.Random(0)
    for fmt in FORMATS:
        print(f"{fmt.id:24} {fmt.locale}  {render(fmt, date(2018, 1, 27), rng)}")


def _demo() -> None:
    from labs.public_datasets import build

    started = time.perf_counter()
    out = REPO_ROOT / "runs" / "demo" / "datasets"
    out.mkdir(parents=True, exist_ok=True)
    print(f"Building the public datasets into {out} ...")
    written = build(out, log=lambda line: print("  " + line))
    different = [p.relative_to(out) for p in written if not filecmp.cmp(p, DATASETS_DIR / p.relative_to(out), shallow=False)]
    if different:
        print(f"\nThese files differ from the shipped ones in datasets/: {', '.join(map(str, different))}.\n"
              "A different babel version can change CLDR month names; the shipped files are the reference.")
    else:
        print(f"\nAll {len(written)} files are byte-identical to the shipped ones in datasets/ (same seeds, same bytes).")
    _show(out, 4)
    print(f"\nDone in {time.perf_counter() - started:.1f} s. Training and grading join `make demo` in later labs.")


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        if args.command == "data" and args.dataset in DATASET_NAMES:
            _generate(args)
        elif args.command == "data" and args.dataset == "build":
            from labs.public_datasets import build, update_datasheet

            build(args.out)
            readme = update_datasheet(args.out)
            if readme.is_file():
                print(f"updated the counts in {readme}")
        elif args.command == "data" and args.dataset == "romanization-table":
            from labs.name_transliteration.romanization import build_table

            print(f"wrote {build_table(args.out):,} words to {args.out}")
        elif args.command == "data" and args.dataset == "show":
            if args.n < 1:
                raise InputError(f"--n must be 1 or more, got {args.n}")
            _show(Path(args.datasets), args.n)
        elif args.command == "formats":
            _formats()
        elif args.command == "demo":
            _demo()
    except InputError as error:
        print(f"python -m labs: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"python -m labs: error: {error.strerror or error}: {error.filename or ''}".rstrip(": "), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("python -m labs: interrupted; no partial file was left behind", file=sys.stderr)
        return 130
    return 0
