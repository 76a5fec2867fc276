"""Rows per second of the three data generators, side by side on one machine.

    python benchmarks/generators.py            # prints a table, writes benchmarks/results/generators.json

Each generator writes the same number of rows, timed after one warm-up call (which builds the
date-split and word tables once per process); the best of three runs is reported.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import write_results  # noqa: E402

from labs.common.training import device_description  # noqa: E402
from labs.date_generation import data as iso_dates  # noqa: E402
from labs.date_translation import data as date_pairs  # noqa: E402
from labs.name_transliteration import data as thai_names  # noqa: E402

ROWS = 50_000
GENERATORS = {
    "iso-dates": lambda n, seed: iso_dates.generate(n, seed),
    "date-pairs": lambda n, seed: date_pairs.generate(n, seed, split="train"),
    "thai-names": lambda n, seed: thai_names.generate(n, seed, split="train"),
}


def measure(generate, rows: int = ROWS, repeats: int = 3) -> float:
    generate(100, 0)  # warm-up: builds cached split tables
    best = min(_timed(generate, rows, seed) for seed in range(1, repeats + 1))
    return rows / best


def _timed(generate, rows: int, seed: int) -> float:
    started = time.perf_counter()
    generate(rows, seed)
    return time.perf_counter() - started


def main() -> None:
    results = {name: round(measure(generate)) for name, generate in GENERATORS.items()}
    print(f"{'generator':12} {'rows/s':>10}   ({ROWS:,} rows, best of 3, one process)")
    for name, rate in results.items():
        print(f"{name:12} {rate:>10,}")
    write_results(
        "generators",
        {"rows": ROWS, "repeats": 3},
        {"rows_per_second": results},
        {},
        device=device_description(),
    )


if __name__ == "__main__":
    main()
