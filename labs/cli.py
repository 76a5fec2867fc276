"""The kit's command line: ``python -m labs <command> ...``.

The commands every lab has (``train``, ``translate``, ``export``) are built here from the task registry
(:mod:`labs.tasks`); each lab adds its own (``sample``, ``formats``, ``selftest``, ``evaluate TASK``, ``data
DATASET``) in its ``commands`` module; the kit's tooling (``demo``, ``release``, ``colab-links``, ``data
build``, ``data show``) lives in :mod:`tools`, which the student kit does not ship. Each command's handler is
bound with ``set_defaults``.

Mistakes in what the user typed (a bad number, an unknown locale, a folder that does not exist) end with one
line on stderr and exit status 2, never a traceback, and never a partial output file."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

import labs
from labs import tasks
from labs.common.arguments import Commands, Parser, checked, positive_int
from labs.common.errors import InputError
from labs.common.files import check_out_folder, check_run_folder, read_run_metrics, run_folder_hint
from labs.common.submission import check_layer_module, check_student_id


def _add_config_flags(parser: argparse.ArgumentParser, config_class) -> None:
    """One ``--flag`` per field of a lab's config dataclass, so the CLI cannot drift from it."""
    defaults, comments = config_class(), config_class.field_comments()
    for field in dataclasses.fields(config_class):
        default = getattr(defaults, field.name)
        what = f"{comments[field.name]} " if field.name in comments else ""
        if isinstance(default, bool):
            parser.add_argument(
                "--" + field.name.replace("_", "-"),
                dest=f"config_{field.name}",
                default=None,
                action=argparse.BooleanOptionalAction,
                help=f"{what}(default {'on' if default else 'off'})",
            )
            continue
        choices = field.metadata.get("choices")
        parser.add_argument(
            "--" + field.name.replace("_", "-"),
            dest=f"config_{field.name}",
            type=type(default),
            choices=choices,
            metavar=field.name.upper() if choices is None else None,
            default=None,
            help=f"{what}(default {default})".replace("%", "%%"),
        )
        for alias, value in field.metadata.get("aliases", {}).items():  # --no-attention: --attention none
            parser.add_argument(
                "--" + alias,
                dest=f"config_{field.name}",
                action="store_const",
                const=value,
                help=f"the same as --{field.name.replace('_', '-')} {value}",
            )


def _build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m labs", description="Attention Lab: RNN and attention course labs.")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show TensorFlow's start-up messages, which are hidden by default (as they are not when your "
        "environment sets TF_CPP_MIN_LOG_LEVEL to 0, 1 or 2)",
    )
    top = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    data = top.add_parser(
        "data",
        help="generate synthetic datasets",
        description="Generate synthetic data, or (re)build the public splits.",
    )
    train = top.add_parser(
        "train", help="train a lab's model", description="Train a lab's model and save the run."
    )
    evaluate = top.add_parser("evaluate", help="measure a trained model")
    commands = Commands(
        top=top,
        data=data.add_subparsers(dest="dataset", required=True, parser_class=Parser),
        evaluate=evaluate.add_subparsers(dest="task", required=True, parser_class=Parser),
    )
    trainable = train.add_subparsers(dest="task", required=True, parser_class=Parser)
    for task in tasks.all_tasks():
        sub = trainable.add_parser(task.name, help=task.title, description=task.description)
        sub.set_defaults(handler=train_command, task=task.name)
        sub.add_argument(
            "--out",
            required=True,
            help="run folder for model.keras, vocab.json, metrics.json, training_curve.png",
        )
        sub.add_argument(
            "--tiny", action="store_true", help="a seconds-long configuration (for a smoke test)"
        )
        sub.add_argument("--quiet", action="store_true", help="no progress bars")
        _add_config_flags(sub, task.config.resolve())
        if task.commands is not None:
            task.commands(commands)

    translate = commands.add(
        "top",
        "translate",
        translate_command,
        help="translate dates (lab 2) or Thai names (homework 3.1) with a trained model",
    )
    translate.add_argument(
        "--model", required=True, help="a run folder written by `train` for a translation task"
    )
    translate.add_argument(
        "texts", nargs="+", help='dates or names, e.g. "27 January 2018" "๒๗ ม.ค. ๖๑" or "สมชาย ใจดี"'
    )
    translate.add_argument(
        "--beam",
        type=positive_int,
        default=1,
        help="beam width (default 1: greedy); shows the top BEAM outputs",
    )
    translate.add_argument(
        "--plot", default=None, help="save attention heatmaps to this PNG (one file per text)"
    )

    export = commands.add(
        "top",
        "export",
        export_command,
        help="export a trained run as a submission bundle",
        description="Write a trained run's submission bundle (model.keras, vocab.json, meta.json "
        "and, for the homework, your layer module), checked as the grader will.",
    )
    export.add_argument("--model", required=True, help="the run folder written by `python -m labs train ...`")
    export.add_argument(
        "--student-id",
        required=True,
        type=checked(check_student_id),
        help="your university id, e.g. 6512345678",
    )
    export.add_argument("--out", required=True, help="submission.zip, or a new folder")
    export.add_argument(
        "--task",
        choices=tasks.names(),
        default=None,
        help="the run's task (default: read from the run folder)",
    )
    export.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier bundle at --out (it stays as it was if the export fails)",
    )

    try:  # the kit's tooling (demo, release, ...): the instructor's; the student kit ships without it
        from tools import commands as tool_commands
    except ModuleNotFoundError as error:
        if error.name != "tools":
            raise
    else:
        tool_commands.add_commands(commands)
    return parser


def _config(args, task: tasks.Task):
    overrides = {
        k.removeprefix("config_"): v
        for k, v in vars(args).items()
        if k.startswith("config_") and v is not None
    }
    return dataclasses.replace(task.config.tiny() if args.tiny else task.config(), **overrides)


def train_command(args) -> None:
    check_out_folder(args.out)  # before TensorFlow's seconds of start-up
    task = tasks.get(args.task)
    config = _config(args, task)
    config.replacing(args.out)  # a refusal comes now; the note, when training starts
    if config.is_tiny_run:
        print(
            f"note: a --tiny run ({config.train_size:,} examples) is a smoke test that learns next to "
            "nothing; train without --tiny for the model you hand in"
        )
    elif args.config_seed is None:
        print(
            f"note: no --seed: this run uses the default seed ({config.seed}), as does everyone's who sets "
            "none. To train a model you will hand in, use a seed of your own (the grader compares students' "
            "models): --seed 5678, say, the last four digits of your id"
        )
    run = task.train(config, out_dir=args.out, verbose=0 if args.quiet else 1)
    print(run.summary())
    print(f"Saved model.keras, vocab.json, metrics.json and training_curve.png in {args.out}")
    if run.interrupted:
        print(
            f"{args.out} holds the model of epoch {run.epochs_done} of {run.config.epochs}: export it as it "
            f"is, "
            "or train again for all the epochs."
        )
        return 130
    if task.next_step:
        print(f"Next: {task.next_step.format(out=args.out)}")


def run_task(model_dir: str) -> tasks.Task:
    """The task of a run folder, read from its ``vocab.json``."""
    path = Path(model_dir) / "vocab.json"
    check_run_folder(model_dir)
    try:
        return tasks.get(json.loads(path.read_text(encoding="utf-8"))["task"])
    except FileNotFoundError:
        raise InputError(
            f"{model_dir!r} is not a run folder (no vocab.json); {run_folder_hint(model_dir)}"
        ) from None
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{str(path)!r} is not an Attention Lab vocabulary file") from None


def translate_command(args) -> None:
    from labs.common.files import check_writable

    task = run_task(args.model)
    if not task.translates:
        raise InputError(
            f"{args.model} holds a {task.name} model; translate works with the translation tasks: "
            f"{', '.join(t.name for t in tasks.all_tasks() if t.translates)}"
        )
    plot_paths = []
    if args.plot:
        base = Path(args.plot)
        plot_paths = (
            [base]
            if len(args.texts) == 1
            else [
                base.with_name(f"{base.stem}-{i}{base.suffix or '.png'}")
                for i in range(1, len(args.texts) + 1)
            ]
        )
        for path in plot_paths:
            check_writable(path)
    model, vocabs, _ = task.load(args.model)
    unknown = sorted({c for text in args.texts for c in text if c not in vocabs["source"]})
    if unknown:
        print(
            f"note: not in the model's vocabulary, read as <unk>: {', '.join(map(repr, unknown))}",
            file=sys.stderr,
        )
    for i, result in enumerate(task.decode(model, vocabs, args.texts, beam=args.beam)):
        others = (
            f"   (other beams: {', '.join(result.alternatives[1:])})" if len(result.alternatives) > 1 else ""
        )
        print(f"{result.source}  ->  {result.output}{others}")
        if plot_paths:
            if result.attention is None:
                raise InputError(f"{args.model} is a model without attention; there is nothing to plot")
            from labs.common.plots import plot_attention

            plot_attention(result.source, result.output, result.attention, path=plot_paths[i])
            print(f"   attention heatmap: {plot_paths[i]}")


def export_command(args) -> None:
    from labs.common.submission import check_bundle_out, export

    replace_with = "add --overwrite (an earlier bundle stays as it was if the export fails)"
    check_bundle_out(Path(args.out), args.overwrite, replace_with)  # first: nothing to load for a refusal
    task = tasks.get(args.task) if args.task else run_task(args.model)
    if args.task and run_task(args.model).name != task.name:
        raise InputError(f"{args.model} holds a {run_task(args.model).name} model, not {task.name}")
    metrics = read_run_metrics(args.model)
    trained_with = metrics.get("layer_sha256")
    check_layer_module(
        task.name, trained_with=trained_with
    )  # before loading: a broken layer cannot load cleanly
    try:
        model, vocabs, config = task.load(args.model)
    except InputError:
        raise
    except Exception as error:
        raise InputError(
            f"cannot load the model in {args.model!r}: {type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}; train it again"
        ) from None
    done = metrics.get("epochs_done")
    if isinstance(done, int) and done < config.epochs:
        print(
            f"note: this run stopped after epoch {done} of {config.epochs}; exporting the model of epoch "
            f"{done}"
        )
    tiny = config.tiny_run_note("hand in a model trained with the real configuration")
    if tiny:
        print(tiny)
    elif config.seed == task.config().seed:  # a tiny run is no model to hand in: one note is enough
        print(
            f"note: this run used the default seed ({config.seed}), as does everyone's who sets none, and "
            "the grader compares students' models: train with --seed of your own (the last four digits of "
            "your id)"
        )
    out = export(
        model,
        vocabs,
        task=task.name,
        student_id=args.student_id,
        out=args.out,
        trained_with=trained_with,
        overwrite=args.overwrite,
    )
    print(f"wrote {out}; check it as the grader will: python -m autograder check {out} --task {task.name}")
    if out.suffix != ".zip":
        print(f"note: {out} is a folder; the file to hand in is a .zip: export again with --out {out}.zip")


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.verbose and not labs.TENSORFLOW_LOG_LEVEL_SET_BY_USER:
        from labs.common.quiet import show_start_up_lines

        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # TensorFlow is imported later, by the command
        show_start_up_lines()
    try:
        # A run folder that is not there is said before the command imports TensorFlow (seconds).
        for folder in (getattr(args, "model", None), getattr(args, "baseline", None)):
            if folder is not None:
                check_run_folder(folder)
        return args.handler(args) or 0
    except InputError as error:
        print(f"python -m labs: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(
            f"python -m labs: error: {error.strerror or error}: {error.filename or ''}".rstrip(": "),
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("python -m labs: interrupted; no partial file was left behind", file=sys.stderr)
        return 130
