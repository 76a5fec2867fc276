"""The public splits under ``datasets/``: what is generated, with which seeds, and how.

``python -m labs data build`` rewrites every file listed here from the generators; the same
code and the same seeds give the same bytes, which a test checks against the shipped files.
The counts table in ``datasets/README.md`` (between the ``counts`` markers) is rewritten from
the files themselves, so the datasheet cannot drift from the data.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from labs.common.errors import InputError
from labs.common.files import read_csv, write_csv, write_text
from labs.common.paths import DATASETS_DIR
from labs.common.vocab import save_vocabularies
from labs.date_generation import data as iso_dates
from labs.date_translation import data as date_pairs
from labs.name_transliteration import data as thai_names

SPLIT_SEEDS = {"train": 1, "dev": 2, "test": 3}


@dataclass(frozen=True)
class PublicDataset:
    """One dataset folder: its generator, the rows per split, and the task's vocabularies."""

    name: str  # the folder and the command-line name
    task: str
    columns: tuple[str, ...]
    sizes: dict[str, int]
    generate: Callable[[int, int, str], list[dict]]
    vocabularies: Callable[[], dict]


PUBLIC_DATASETS = (
    PublicDataset("iso-dates", iso_dates.TASK, iso_dates.COLUMNS, {"train": 30_000, "dev": 5_000, "test": 10_000},
                  lambda n, seed, split: iso_dates.generate(n, seed), iso_dates.vocabularies),
    PublicDataset("date-pairs", date_pairs.TASK, date_pairs.COLUMNS, {"train": 30_000, "dev": 5_000, "test": 10_000},
                  lambda n, seed, split: date_pairs.generate(n, seed, split=split), date_pairs.vocabularies),
    PublicDataset("thai-names", thai_names.TASK, thai_names.COLUMNS, {"train": 15_000, "dev": 2_000, "test": 4_000},
                  lambda n, seed, split: thai_names.generate(n, seed, split=split), thai_names.vocabularies),
)


def build(out_dir: str | Path = DATASETS_DIR, log: Callable[[str], None] = print) -> list[Path]:
    """Write every public split and vocabulary under ``out_dir``; return the paths written."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise InputError(f"output folder {str(out_dir)!r} does not exist; create it first")
    written = []
    for dataset in PUBLIC_DATASETS:
        folder = out_dir / dataset.name
        folder.mkdir(exist_ok=True)
        for split, n in dataset.sizes.items():
            path = folder / f"{split}.csv"
            write_csv(path, dataset.columns, dataset.generate(n, SPLIT_SEEDS[split], split))
            log(f"wrote {path} ({n:,} rows, seed {SPLIT_SEEDS[split]})")
            written.append(path)
        path = folder / "vocab.json"
        save_vocabularies(path, dataset.task, dataset.vocabularies())
        log(f"wrote {path}")
        written.append(path)
    return written


def counts_markdown(datasets_dir: str | Path = DATASETS_DIR) -> str:
    """The counts table of the datasheet, computed from the files in ``datasets_dir``."""
    datasets_dir = Path(datasets_dir)
    lines = ["| dataset | split | rows | seed | breakdown |", "|---|---|---:|---:|---|"]
    for dataset in PUBLIC_DATASETS:
        for split in dataset.sizes:
            rows = read_csv(datasets_dir / dataset.name / f"{split}.csv")
            lines.append(f"| {dataset.name} | {split} | {len(rows):,} | {SPLIT_SEEDS[split]} | {_breakdown(dataset.name, rows)} |")
    return "\n".join(lines)


def _breakdown(name: str, rows: list[dict]) -> str:
    if name == "iso-dates":
        return f"{len({r['date'] for r in rows}):,} distinct dates"
    if name == "date-pairs":
        locales = collections.Counter(r["locale"] for r in rows)
        formats = len({r["format_id"] for r in rows})
        return f"{formats} formats; " + ", ".join(f"{k} {v:,}" for k, v in sorted(locales.items()))
    strata = collections.Counter(r["stratum"] for r in rows)
    genders = collections.Counter(r["gender"] for r in rows)
    return ", ".join(f"{k} {v:,}" for k, v in sorted((strata + genders).items()))


_COUNTS_BLOCK = re.compile(r"(<!-- counts:begin -->\n)(?:.*?\n)?(<!-- counts:end -->)", re.S)


def update_datasheet(datasets_dir: str | Path = DATASETS_DIR) -> Path:
    """Rewrite the counts block of ``datasets_dir/README.md`` from the files on disk."""
    readme = Path(datasets_dir) / "README.md"
    if not readme.is_file():
        return readme
    text = readme.read_text(encoding="utf-8")
    if not _COUNTS_BLOCK.search(text):
        raise InputError(f"{readme} has no '<!-- counts:begin -->' ... '<!-- counts:end -->' block to update")
    write_text(readme, _COUNTS_BLOCK.sub(lambda m: m.group(1) + counts_markdown(datasets_dir) + "\n" + m.group(2), text))
    return readme
