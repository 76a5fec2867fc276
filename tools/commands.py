"""The tooling's commands in ``python -m labs``: ``demo``, ``release``, ``colab-links``, ``notebooks``,
``data build`` and ``data show``."""

from __future__ import annotations

from pathlib import Path

from labs.common.arguments import Commands, positive_int
from labs.common.paths import DATASETS_DIR, REPO_ROOT


def add_commands(commands: Commands) -> None:
    build = commands.add("data", "build", build_datasets, help="(re)write the public splits under datasets/")
    build.add_argument(
        "--out", default=str(DATASETS_DIR), help="output folder (default: the kit's datasets/)"
    )
    show = commands.add("data", "show", show_datasets, help="print a few rows of each public dataset")
    show.add_argument("--n", type=positive_int, default=4, help="rows per dataset (default 4)")
    show.add_argument("--datasets", default=str(DATASETS_DIR), help="datasets folder (default: the kit's)")

    release = commands.add(
        "top",
        "release",
        release_command,
        help="write the student version of the homework (solutions stripped)",
    )
    release.add_argument("what", choices=["homework"], help="what to release")
    release.add_argument("--out", required=True, help="an empty or new folder for the student kit")
    release.add_argument(
        "--colab-repo",
        metavar="OWNER/NAME",
        help="the GitHub repository the student kit will be pushed to: adds Open-in-Colab links",
    )
    release.add_argument("--colab-branch", default="main", help="its branch (default main)")

    colab = commands.add(
        "top",
        "colab-links",
        colab_command,
        help="point the notebooks' Open-in-Colab links at the kit's GitHub repository",
        description="Write the repository into README.md's notebook table (Colab badges) and into "
        "each notebook's setup cell, which clones the kit in Colab.",
    )
    target = colab.add_mutually_exclusive_group(required=True)
    target.add_argument("--repo", metavar="OWNER/NAME", help="the GitHub repository that holds this kit")
    target.add_argument("--remove", action="store_true", help="take the links out again")
    colab.add_argument("--branch", default="main", help="the branch Colab opens (default main)")

    commands.add(
        "top",
        "notebooks",
        notebooks_command,
        help="rebuild every notebook from its .py source",
        description="Rebuild each .ipynb from the jupytext .py beside it, with the kit's setup cell.",
    )

    demo = commands.add(
        "top",
        "demo",
        demo_command,
        help="the whole kit end to end: data, the reference models, bundles, grading, a report",
        description="Build the datasets, train every lab's reference model (demo configuration), "
        "export them as bundles, grade them against fresh hidden sets and write "
        "runs/demo/report.html.",
    )
    demo.add_argument(
        "--tiny", action="store_true", help="tiny configurations (a smoke test: about a minute)"
    )
    demo.add_argument(
        "--out", default=str(REPO_ROOT / "runs" / "demo"), help="output folder (default runs/demo)"
    )


def build_datasets(args) -> None:
    from tools.public_datasets import build, update_datasheet

    build(args.out)
    readme = update_datasheet(args.out)
    if readme.is_file():
        print(f"updated the counts in {readme}")


def show_datasets(args) -> None:
    from labs import tasks
    from labs.common.files import read_csv

    for task in tasks.all_tasks():
        dataset = task.dataset
        rows = read_csv(Path(args.datasets) / dataset.name / "train.csv")
        print(f"\n{dataset.name} ({task.name}), first {args.n} of {len(rows):,} training rows:")
        for row in rows[: args.n]:
            details = ", ".join(
                f"{value}"
                for column, value in row.items()
                if column not in (dataset.input_column, dataset.target_column) and value
            )
            pair = (
                row[dataset.input_column]
                if dataset.input_column == dataset.target_column
                else f"{row[dataset.input_column]}  ->  {row[dataset.target_column]}"
            )
            print(f"  {pair}" + (f"   [{details}]" if details else ""))


def release_command(args) -> None:
    from tools.colab import parse_repository
    from tools.release import release_homework

    colab = parse_repository(args.colab_repo, args.colab_branch) if args.colab_repo else None
    release_homework(args.out, colab=colab)


def colab_command(args) -> None:
    from tools.colab import parse_repository, write_colab_links

    write_colab_links(REPO_ROOT, None if args.remove else parse_repository(args.repo, args.branch))


def notebooks_command(args) -> None:
    from tools.notebooks import build_all

    changed = build_all(REPO_ROOT)
    print(f"{len(changed)} notebook(s) rebuilt" if changed else "every notebook is up to date")


def demo_command(args) -> None:
    from tools.demo import run

    run(tiny=args.tiny, out=Path(args.out))
