"""The lecture's attention family on lab 2's data: one run, same data, same seeds, same CPU.

    python benchmarks/attention_variants.py                      # every variant (about 45 minutes on a 2-core
    CPU)
    python benchmarks/attention_variants.py --attention bahdanau,transformer
    python benchmarks/attention_variants.py --default-size-only        # make demo's budget only (20 min)

Per variant (``--attention``, default all):
1. default size on ``make demo``'s budget (``DateTranslationConfig.demo()``: 64 units, 30,000 pairs,
   4 epochs; seven default-budget runs would take over an hour on a 2-core CPU): parameters,
   training time, exact match on 10,000
   held-out pairs (greedy and beam 4), decoding time for those 10,000 inputs (greedy, beam 4,
   after a warm-up);
2. small size (``DateTranslationConfig.small()``, 16 units), where one fixed vector is a
   bottleneck: the same, and exact match by source length;
3. the cost of attention as the source grows: milliseconds per output step of the step decoder
   (256 inputs) for sources of 20, 40, 80 and 160 characters (default size);
4. one figure: heatmaps side by side, one column per variant, for an English date and a Thai
   Buddhist-era date (``benchmarks/results/attention_variants.png``).

Writes benchmarks/results/attention_variants.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import write_results  # noqa: E402

from labs.common.plots import plot_attention_grid  # noqa: E402
from labs.date_translation import compare  # noqa: E402
from labs.date_translation.config import DateTranslationConfig  # noqa: E402
from labs.date_translation.data import sample_pairs  # noqa: E402
from labs.date_translation.translate import translate  # noqa: E402
from labs.date_translation.variants import VARIANTS  # noqa: E402

HELD_OUT = 10_000
HEATMAP_SOURCES = ["Saturday, 27 January 2018", "วันเสาร์ที่ 27 มกราคม พ.ศ. 2561"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--attention", default=",".join(VARIANTS), help="comma-separated variants (default: all)"
    )
    parser.add_argument(
        "--default-size-only",
        action="store_true",
        help="skip the small size; write results/attention_variants_default.json (a quick re-check)",
    )
    args = parser.parse_args(argv)
    chosen = [a.strip() for a in args.attention.split(",") if a.strip()]
    unknown = sorted(set(chosen) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown attention {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")

    pairs = sample_pairs(HELD_OUT, seed=3, split="test")
    config = DateTranslationConfig.demo()
    print(
        f"default size ({config.units} units, {config.train_size:,} pairs, {config.epochs} epochs), "
        f"{HELD_OUT:,} held-out pairs:"
    )
    default_rows, runs = compare.compare(config, pairs, chosen)
    small_rows = []
    if not args.default_size_only:
        print("\nsmall size (16 units):")
        small_rows, _ = compare.compare(DateTranslationConfig.small(), pairs, chosen)
    print("\nmilliseconds per output step (256 inputs), by source length:")
    for row in default_rows:
        run = runs[row["attention"]]
        row["ms_per_step_by_source_length"] = compare.step_cost(run.model, run.vocabs)
        print(
            f"{row['attention']:15} "
            + "  ".join(
                f"{length:>3}: {ms:7.2f}" for length, ms in row["ms_per_step_by_source_length"].items()
            )
        )
    name = "attention_variants_default" if args.default_size_only else "attention_variants"
    figure_path = Path(__file__).resolve().parent / "results" / f"{name}.png"
    plot_attention_grid(
        {name: translate(run.model, run.vocabs, HEATMAP_SOURCES) for name, run in runs.items()},
        path=figure_path,
    )
    print(f"wrote {figure_path}")
    device = next(iter(runs.values())).device
    report = {
        "held_out": HELD_OUT,
        "scores": {a: VARIANTS[a].formula for a in chosen},
        "default": default_rows,
        "small": small_rows,
        "heatmaps": figure_path.name,
    }
    checks = {f"{row['attention']}_trains_and_translates": row["exact_match"] > 0.5 for row in default_rows}
    write_results(name, config.to_dict(), report, checks, device)


if __name__ == "__main__":
    main()
