"""The kit's command line: ``python -m labs <command> ...``.

Mistakes in what the user typed (a bad number, an unknown locale, a folder that does not
exist) end with one line on stderr and exit status 2, never a traceback, and never a partial
output file.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from labs.common.errors import InputError
from labs.common.isodate import parse_date_argument
from labs.common.paths import DATASETS_DIR, REPO_ROOT

DATASET_NAMES = ("iso-dates", "date-pairs", "thai-names")


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake on one line instead of a usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _config_class(task: str):
    """The configuration dataclass of a lab, imported only when needed (TensorFlow is slow to import)."""
    if task == "date-generation":
        from labs.date_generation.config import DateGenerationConfig as config_class
    elif task == "date-translation":
        from labs.date_translation.config import DateTranslationConfig as config_class
    else:
        from labs.name_transliteration.config import NameTransliterationConfig as config_class
    return config_class


# task -> (help, description) of `train TASK`
TRAINABLE = {
    "date-generation": ("lab 1: the date language model", "Train lab 1's character RNN on generated ISO dates."),
    "date-translation": ("lab 2: human dates to ISO with attention",
                         "Train lab 2's encoder-decoder (or, with --no-attention, its baseline)."),
    "name-transliteration": ("homework 3.1: Thai names to English with key-value attention",
                             "Train homework 3.1's encoder-decoder with the key-value attention layer of "
                             "homework/kv_attention.py."),
}


def _add_config_flags(parser: argparse.ArgumentParser, config_class) -> None:
    """One ``--flag`` per field of a lab's config dataclass, so the CLI cannot drift from it."""
    defaults = config_class()
    for field in dataclasses.fields(config_class):
        default = getattr(defaults, field.name)
        if isinstance(default, bool):
            parser.add_argument("--" + field.name.replace("_", "-"), dest=f"config_{field.name}", default=None,
                                action=argparse.BooleanOptionalAction, help=f"(default {'on' if default else 'off'})")
            continue
        parser.add_argument("--" + field.name.replace("_", "-"), dest=f"config_{field.name}", type=type(default),
                            metavar=field.name.upper(), default=None, help=f"(default {default})")


def _config_from_args(args, config_class):
    overrides = {k.removeprefix("config_"): v for k, v in vars(args).items() if k.startswith("config_") and v is not None}
    base = config_class.tiny() if args.tiny else config_class()
    return dataclasses.replace(base, **overrides)


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

    train = commands.add_parser("train", help="train a lab's model", description="Train a lab's model and save the run.")
    tasks = train.add_subparsers(dest="task", required=True, parser_class=_Parser)
    for task, (help_text, description) in TRAINABLE.items():
        sub = tasks.add_parser(task, help=help_text, description=description)
        sub.add_argument("--out", required=True, help="run folder for model.keras, vocab.json, metrics.json, training_curve.png")
        sub.add_argument("--tiny", action="store_true", help="a seconds-long configuration (for a smoke test)")
        sub.add_argument("--quiet", action="store_true", help="no progress bars")
        _add_config_flags(sub, _config_class(task))

    translate = commands.add_parser("translate", help="translate dates (lab 2) or Thai names (homework 3.1) with a trained model")
    translate.add_argument("--model", required=True, help="run folder written by `train date-translation` or `train name-transliteration`")
    translate.add_argument("texts", nargs="+", help='dates or names, e.g. "27 January 2018" "๒๗ ม.ค. ๖๑" or "สมชาย ใจดี"')
    translate.add_argument("--beam", type=int, default=1, help="beam width (default 1: greedy); shows the top BEAM outputs")
    translate.add_argument("--plot", default=None, help="save attention heatmaps to this PNG (one file per text)")

    sample = commands.add_parser("sample", help="print dates sampled from a trained lab 1 model")
    sample.add_argument("--model", required=True, help="run folder written by `train date-generation`")
    sample.add_argument("--n", type=int, default=20, help="how many dates (default 20)")
    sample.add_argument("--temperature", type=float, default=1.0, help="softmax temperature (default 1.0)")
    sample.add_argument("--top-k", type=int, default=None, help="sample among the k most probable characters")
    sample.add_argument("--greedy", action="store_true", help="always take the most probable character")
    sample.add_argument("--seed", type=int, default=0, help="random seed (default 0)")

    evaluate = commands.add_parser("evaluate", help="measure a trained model")
    evaluate_tasks = evaluate.add_subparsers(dest="task", required=True, parser_class=_Parser)
    evaluate_dates = evaluate_tasks.add_parser("date-generation", help="lab 1: validity, uniqueness, distribution, cross-entropy")
    evaluate_dates.add_argument("--model", required=True, help="run folder written by `train date-generation`")
    evaluate_dates.add_argument("--n", type=int, default=10_000, help="samples to draw (default 10,000)")
    evaluate_dates.add_argument("--temperature", type=float, default=1.0, help="softmax temperature (default 1.0)")
    evaluate_dates.add_argument("--top-k", type=int, default=None, help="sample among the k most probable characters")
    evaluate_dates.add_argument("--seed", type=int, default=0, help="random seed (default 0)")

    evaluate_translation = evaluate_tasks.add_parser("date-translation", help="lab 2: exact match per format, locale, field, length")
    evaluate_translation.add_argument("--model", required=True, help="run folder written by `train date-translation`")
    evaluate_translation.add_argument("--baseline", default=None, help="a baseline run folder to compare by input length")
    evaluate_translation.add_argument("--n", type=int, default=10_000, help="held-out pairs from the test split (default 10,000)")
    evaluate_translation.add_argument("--beam", type=int, default=1, help="beam width (default 1: greedy)")

    evaluate_names = evaluate_tasks.add_parser("name-transliteration",
                                               help="homework 3.1: accuracy, CER, mean F, MRR, per stratum and length")
    evaluate_names.add_argument("--model", required=True, help="run folder written by `train name-transliteration`")
    evaluate_names.add_argument("--data", default=str(DATASETS_DIR / "thai-names" / "test.csv"),
                                help="CSV of names to score (default: the public test split)")
    evaluate_names.add_argument("--beam", type=int, default=3, help="beam width; MRR and top-k use the beams (default 3)")

    release = commands.add_parser("release", help="write the student version of the homework (solutions stripped)")
    release.add_argument("what", choices=["homework"], help="what to release")
    release.add_argument("--out", required=True, help="an empty or new folder for the student kit")
    release.add_argument("--colab-repo", metavar="OWNER/NAME",
                         help="the GitHub repository the student kit will be pushed to: adds Open-in-Colab links")
    release.add_argument("--colab-branch", default="main", help="its branch (default main)")
    colab = commands.add_parser("colab-links", help="point the notebooks' Open-in-Colab links at the kit's GitHub repository",
                                description="Write the repository into README.md's notebook table (Colab badges) "
                                            "and into each notebook's setup cell, which clones the kit in Colab.")
    colab_target = colab.add_mutually_exclusive_group(required=True)
    colab_target.add_argument("--repo", metavar="OWNER/NAME", help="the GitHub repository that holds this kit")
    colab_target.add_argument("--remove", action="store_true", help="take the links out again")
    colab.add_argument("--branch", default="main", help="the branch Colab opens (default main)")
    selftest = commands.add_parser("selftest", help="check your key-value attention layer (homework 3.1)")
    selftest.add_argument("what", choices=["homework"], help="what to check")

    commands.add_parser("formats", help="list the date formats of lab 2 with an example each")
    demo = commands.add_parser("demo", help="the whole kit end to end: data, three models, bundles, grading, a report",
                               description="Build the datasets, train the three reference models (demo "
                                           "configuration), export them as bundles, grade them against fresh "
                                           "hidden sets and write runs/demo/report.html.")
    demo.add_argument("--tiny", action="store_true", help="tiny configurations (a smoke test: about a minute)")
    demo.add_argument("--out", default=str(REPO_ROOT / "runs" / "demo"), help="output folder (default runs/demo)")
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


def _train(args) -> None:
    config = _config_from_args(args, _config_class(args.task))
    verbose = 0 if args.quiet else 1
    if args.task == "date-generation":
        from labs.date_generation.train import train

        run = train(config, out_dir=args.out, verbose=verbose)
        print(f"Trained in {run.seconds:.1f} s on the {run.device}; "
              f"validation cross-entropy {run.history['validation'][-1]:.4f} bits/token.")
        next_step = f"python -m labs sample --model {args.out} --n 20 --temperature 0.8"
    else:
        if args.task == "date-translation":
            from labs.date_translation.train import train

            example = '"27 January 2018" "๒๗ ม.ค. ๖๑"'
        else:
            from labs.name_transliteration.train import train

            example = '"สมชาย ใจดี" --beam 3'
        run = train(config, out_dir=args.out, verbose=verbose)
        print(f"Trained in {run.seconds:.1f} s on the {run.device}; validation loss {run.history['validation'][-1]:.4f}.")
        next_step = f"python -m labs translate --model {args.out} {example} --plot attention.png"
    print(f"Saved model.keras, vocab.json, metrics.json and training_curve.png in {args.out}")
    print(f"Next: {next_step}")


def _run_task(model_dir: str) -> str:
    """The task of a run folder, read from its ``vocab.json``."""
    import json

    path = Path(model_dir) / "vocab.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))["task"]
    except FileNotFoundError:
        raise InputError(f"{model_dir!r} is not a run folder (no vocab.json); "
                         "train one with `python -m labs train ...`") from None
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{str(path)!r} is not an Attention Lab vocabulary file") from None


def _translate(args) -> None:
    from labs.common.files import check_writable

    if args.beam < 1:
        raise InputError(f"--beam must be 1 or more, got {args.beam}")
    task = _run_task(args.model)
    if task == "date-translation":
        from labs.date_translation.train import load_run
        from labs.date_translation.translate import translate
    elif task == "name-transliteration":
        from labs.name_transliteration.train import load_run
        from labs.name_transliteration.transliterate import transliterate as translate
    else:
        raise InputError(f"{args.model} holds a {task} model; translate works with date-translation "
                         "and name-transliteration models")
    plot_paths = []
    if args.plot:
        base = Path(args.plot)
        plot_paths = [base] if len(args.texts) == 1 else \
            [base.with_name(f"{base.stem}-{i}{base.suffix or '.png'}") for i in range(1, len(args.texts) + 1)]
        for path in plot_paths:
            check_writable(path)
    model, vocabs, _ = load_run(args.model)
    unknown = sorted({c for text in args.texts for c in text if c not in vocabs["source"]})
    if unknown:
        print(f"note: not in the model's vocabulary, read as <unk>: {', '.join(map(repr, unknown))}",
              file=sys.stderr)
    for i, result in enumerate(translate(model, vocabs, args.texts, beam=args.beam)):
        others = f"   (other beams: {', '.join(result.alternatives[1:])})" if len(result.alternatives) > 1 else ""
        print(f"{result.source}  ->  {result.output}{others}")
        if plot_paths:
            if result.attention is None:
                raise InputError(f"{args.model} is a model without attention; there is nothing to plot")
            from labs.common.plots import plot_attention

            plot_attention(result.source, result.output, result.attention, path=plot_paths[i])
            print(f"   attention heatmap: {plot_paths[i]}")


def _check_count(n: int, name: str = "--n") -> None:
    from labs.common.validation import check_row_count

    if n < 1:
        raise InputError(f"{name} must be 1 or more, got {n}")
    check_row_count(n)


def _sample(args) -> None:
    from labs.date_generation.sampling import sample_dates
    from labs.date_generation.train import load_run

    _check_count(args.n)
    model, vocab, _ = load_run(args.model)
    for text in sample_dates(model, vocab, args.n, temperature=args.temperature, top_k=args.top_k,
                             greedy=args.greedy, seed=args.seed):
        print(text)


def _evaluate_translation(args) -> None:
    from labs.common.files import write_json
    from labs.date_translation import evaluate
    from labs.date_translation.data import sample_pairs
    from labs.date_translation.train import load_run
    from labs.date_translation.translate import translate

    _check_count(args.n)
    pairs = sample_pairs(args.n, seed=3, split="test")  # seed 3: the public test split's rows come first
    tables = {}
    for name, folder in (("attention", args.model), ("baseline", args.baseline)):
        if folder is None:
            continue
        model, vocabs, _ = load_run(folder)
        predictions = [t.output for t in translate(model, vocabs, [p["source"] for p in pairs], beam=args.beam)]
        tables[name] = evaluate.results_table(pairs, predictions)
    result = evaluate.summary(tables["attention"])
    print(evaluate.format_summary(result))
    print("\nexact match per format (worst first):")
    print(evaluate.breakdown(tables["attention"], "format_id").head(12).to_string(float_format="{:.2%}".format))
    if "baseline" in tables:
        result["baseline"] = evaluate.summary(tables["baseline"])
        print("\n" + evaluate.format_summary(result["baseline"], "baseline (no attention)"))
        print("\nexact match by source length (characters):")
        print(evaluate.compare_by_length(tables).to_string(float_format="{:.2%}".format))
    write_json(Path(args.model) / "evaluation.json", result)
    print(f"\nSaved {Path(args.model) / 'evaluation.json'}")


def _evaluate_names(args) -> None:
    from labs.common.files import read_csv, write_json
    from labs.name_transliteration import evaluate
    from labs.name_transliteration.data import COLUMNS
    from labs.name_transliteration.train import load_run
    from labs.name_transliteration.transliterate import transliterate

    if args.beam < 1:
        raise InputError(f"--beam must be 1 or more, got {args.beam}")
    if not Path(args.data).is_file():
        raise InputError(f"no CSV file at {args.data!r}")
    rows = read_csv(args.data)
    missing = [c for c in ("source", "target") if rows and c not in rows[0]]
    if not rows or missing:
        raise InputError(f"{args.data!r} holds no names (expected the columns {', '.join(COLUMNS)})")
    model, vocabs, _ = load_run(args.model)
    results = transliterate(model, vocabs, [r["source"] for r in rows], beam=args.beam)
    table = evaluate.results_table(rows, [r.alternatives for r in results])
    result = evaluate.summary(table)
    print(evaluate.format_summary(result))
    wrong = table[~table["correct"]].head(8)
    if len(wrong):
        print("\nsome wrong outputs:")
        for _, row in wrong.iterrows():
            print(f"  {row['source']}  ->  {row['prediction']}   (expected {row['target']}, {row['stratum']} words)")
    write_json(Path(args.model) / "evaluation.json", result)
    print(f"\nSaved {Path(args.model) / 'evaluation.json'}")


def _evaluate(args) -> None:
    if args.task == "date-translation":
        return _evaluate_translation(args)
    if args.task == "name-transliteration":
        return _evaluate_names(args)
    from labs.date_generation.evaluate import evaluate, format_report, save_report
    from labs.date_generation.train import load_run

    _check_count(args.n)
    model, vocab, config = load_run(args.model)
    report = evaluate(model, vocab, config, n=args.n, temperature=args.temperature, top_k=args.top_k, seed=args.seed)
    print(format_report(report))
    save_report(report, Path(args.model) / "evaluation.json")
    print(f"Saved {Path(args.model) / 'evaluation.json'}")


def _formats() -> None:
    import random
    from datetime import date

    from labs.date_translation.formats import FORMATS, render

    rng = random.Random(0)
    for fmt in FORMATS:
        print(f"{fmt.id:24} {fmt.locale}  {render(fmt, date(2018, 1, 27), rng)}")


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
        elif args.command == "train":
            _train(args)
        elif args.command == "sample":
            _sample(args)
        elif args.command == "translate":
            _translate(args)
        elif args.command == "evaluate":
            _evaluate(args)
        elif args.command == "release":
            from labs.release import release_homework

            colab = None
            if args.colab_repo:
                from labs.colab import parse_repository

                colab = parse_repository(args.colab_repo, args.colab_branch)
            release_homework(args.out, colab=colab)
        elif args.command == "colab-links":
            from labs.colab import parse_repository, write_colab_links

            write_colab_links(REPO_ROOT, None if args.remove else parse_repository(args.repo, args.branch))
        elif args.command == "selftest":
            from labs.name_transliteration.selftest import main as selftest

            return selftest()
        elif args.command == "formats":
            _formats()
        elif args.command == "demo":
            from labs.demo import run as run_demo

            run_demo(tiny=args.tiny, out=Path(args.out))
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
