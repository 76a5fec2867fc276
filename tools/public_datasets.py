"""The public splits under ``datasets/``: every task's :class:`labs.tasks.Dataset`, with these seeds.

``python -m labs data build`` rewrites every task's splits from its generator; the same code and
the same seeds give the same bytes, which a test checks against the shipped files.
The counts table in ``datasets/README.md`` (between the ``counts`` markers) is rewritten from
the files themselves, so the datasheet cannot drift from the data.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Callable

from labs import tasks
from labs.common.errors import InputError
from labs.common.files import read_csv, write_csv, write_text
from labs.common.paths import DATASETS_DIR
from labs.common.vocab import save_vocabularies

SPLIT_SEEDS = {"train": 1, "dev": 2, "test": 3}


def build(out_dir: str | Path = DATASETS_DIR, log: Callable[[str], None] = print) -> list[Path]:
    """Write every public split and vocabulary under ``out_dir``; return the paths written."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise InputError(f"output folder {str(out_dir)!r} does not exist; create it first")
    written = []
    for task in tasks.all_tasks():
        dataset = task.dataset
        folder = out_dir / dataset.name
        folder.mkdir(exist_ok=True)
        for split, n in dataset.sizes.items():
            path = folder / f"{split}.csv"
            write_csv(path, dataset.columns, dataset.generate(n, SPLIT_SEEDS[split], split))
            log(f"wrote {path} ({n:,} rows, seed {SPLIT_SEEDS[split]})")
            written.append(path)
        path = folder / "vocab.json"
        save_vocabularies(path, task.name, task.vocabularies())
        log(f"wrote {path}")
        written.append(path)
    return written


def counts_markdown(datasets_dir: str | Path = DATASETS_DIR) -> str:
    """The counts table of the datasheet, computed from the files in ``datasets_dir``."""
    datasets_dir = Path(datasets_dir)
    lines = ["| dataset | split | rows | seed | breakdown |", "|---|---|---:|---:|---|"]
    for dataset in (task.dataset for task in tasks.all_tasks()):
        for split in dataset.sizes:
            rows = read_csv(datasets_dir / dataset.name / f"{split}.csv")
            lines.append(
                f"| {dataset.name} | {split} | {len(rows):,} | {SPLIT_SEEDS[split]} | "
                f"{_breakdown(dataset, rows)} |"
            )
    return "\n".join(lines)


def _breakdown(dataset, rows: list[dict]) -> str:
    """Distinct inputs, then each of the dataset's ``breakdown`` columns: counts per value, or how many
    values."""
    parts = [f"{len({r[dataset.input_column] for r in rows}):,} distinct inputs"]
    for column in dataset.breakdown:
        counts = collections.Counter(r[column] for r in rows)
        parts.append(
            ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))
            if len(counts) <= 6
            else f"{len(counts)} {column} values"
        )
    return "; ".join(parts)


_COUNTS_BLOCK = re.compile(r"(<!-- counts:begin -->\n)(?:.*?\n)?(<!-- counts:end -->)", re.S)


def update_datasheet(datasets_dir: str | Path = DATASETS_DIR) -> Path:
    """Rewrite the counts block of ``datasets_dir/README.md`` from the files on disk."""
    readme = Path(datasets_dir) / "README.md"
    if not readme.is_file():
        return readme
    text = readme.read_text(encoding="utf-8")
    if not _COUNTS_BLOCK.search(text):
        raise InputError(f"{readme} has no '<!-- counts:begin -->' ... '<!-- counts:end -->' block to update")
    write_text(
        readme,
        _COUNTS_BLOCK.sub(lambda m: m.group(1) + counts_markdown(datasets_dir) + "\n" + m.group(2), text),
    )
    return readme
