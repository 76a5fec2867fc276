"""Judge a date-generation model; the autograder scores with these same functions.

- **validity**: share of samples that are real calendar dates in strict ``YYYY-MM-DD``
  (29 February only in leap years);
- **uniqueness**: distinct samples / samples;
- **copied**: share of samples that occur verbatim in the training set;
- **distribution match**: total-variation distance between the sampled and the true
  distributions of year, month and day (over the valid samples). Even a perfect sampler has
  some distance from finite-sample noise (about 0.08 for 400 years and 10,000 samples), so the
  report gives the distance a perfect sampler gets with the same number of samples beside it;
- **held-out cross-entropy** in bits per token, beside the exact lower bound, the entropy of
  the generator's distribution divided by 11 tokens per date.

:func:`grading_metrics` gives the autograder the same figures from what the sandboxed model returned (its
samples, and the probability it gave each true next character of the hidden dates)."""

from __future__ import annotations

import math
from datetime import date, timedelta
from pathlib import Path
from typing import Iterable

import numpy as np

from labs.common.isodate import parse_iso_date
from labs.common.metrics import bits_per_token, distribution, percent, share, total_variation
from labs.date_generation.data import IsoDateDistribution

FIELDS = ("year", "month", "day")


def validity(samples: list[str]) -> float:
    """Share of samples that are real calendar dates in strict ``YYYY-MM-DD`` form."""
    return share(parse_iso_date(s) is not None for s in samples)


def uniqueness(samples: list[str]) -> float:
    """Distinct samples divided by samples (1.0 when no sample repeats)."""
    return len(set(samples)) / len(samples) if samples else 0.0


def copied_share(samples: list[str], training_dates: Iterable[str]) -> float:
    """Share of samples that occur verbatim in the training set."""
    training = set(training_dates)
    return share(s in training for s in samples)


def field_distributions(days: Iterable[date]) -> dict[str, dict[int, float]]:
    """The empirical distributions of year, month and day of ``days``."""
    days = list(days)
    return {
        "year": distribution(d.year for d in days),
        "month": distribution(d.month for d in days),
        "day": distribution(d.day for d in days),
    }


def true_field_distributions(dist: IsoDateDistribution) -> dict[str, dict[int, float]]:
    """The exact distributions of year, month and day under ``dist`` (every day counted once)."""
    return field_distributions(dist.start + timedelta(days=i) for i in range(dist.n_days))


def field_distances(samples: list[str], dist: IsoDateDistribution) -> dict[str, float]:
    """Total-variation distance per field between the valid samples and ``dist``."""
    days = [d for d in map(parse_iso_date, samples) if d is not None]
    if not days:
        return {field: 1.0 for field in FIELDS}
    sampled, true = field_distributions(days), true_field_distributions(dist)
    return {field: total_variation(sampled[field], true[field]) for field in FIELDS}


def heldout_bits_per_token(model, vocab, dates: list[str], batch_size: int = 1_000) -> float:
    """Teacher-forced cross-entropy of held-out ``dates``, in bits per predicted token."""
    from labs.common.pipeline import language_model_arrays

    inputs, targets = language_model_arrays(dates, vocab)
    probabilities = model.predict(inputs, batch_size=batch_size, verbose=0)  # (n, 11, vocab)
    return bits_per_token(probabilities, targets)


def evaluate(
    model,
    vocabs,
    config,
    *,
    n: int = 10_000,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
    training_dates: list[str] | None = None,
    held_out: int = 10_000,
) -> dict:
    """All of lab 1's metrics for ``model`` as one flat dict (what ``evaluate`` prints and saves).

    ``training_dates``: to measure copying (default: the dates the run's seed trained on).
    """
    from labs.date_generation.sampling import sample
    from labs.date_generation.train import HELD_OUT_SEED_OFFSET, distribution

    dist = distribution(config)
    samples = sample(model, vocabs, n, temperature=temperature, top_k=top_k, seed=seed)
    if training_dates is None:
        training_dates = dist.sample(config.train_size, config.seed)
    held_out_dates = dist.sample(held_out, config.seed + HELD_OUT_SEED_OFFSET)
    bits = heldout_bits_per_token(model, vocabs["target"], held_out_dates)
    report = {
        "samples": n,
        "temperature": temperature,
        "top_k": top_k,
        "validity": validity(samples),
        "uniqueness": uniqueness(samples),
        "copied_from_training": copied_share(samples, training_dates),
        "heldout_bits_per_token": bits,
        "entropy_bound_bits_per_token": dist.entropy_bits_per_token,
        "heldout_over_bound": bits / dist.entropy_bits_per_token - 1.0,
    }
    perfect = dist.sample(n, seed=10_007)  # what an ideal sampler gets with the same n
    for field, distance in field_distances(samples, dist).items():
        report[f"tv_{field}"] = distance
    for field, distance in field_distances(perfect, dist).items():
        report[f"tv_{field}_perfect_sampler"] = distance
    report["examples"] = samples[:10]
    return report


def format_report(report: dict) -> str:
    """A small table of the report for the terminal and the notebook."""
    lines = [
        f"samples                      {report['samples']:,} at temperature {report['temperature']}"
        + (f", top-k {report['top_k']}" if report["top_k"] else ""),
        f"validity                     {percent(report['validity'])}",
        f"uniqueness                   {percent(report['uniqueness'])}",
        f"copied from training set     {percent(report['copied_from_training'])}",
    ]
    for field in FIELDS:
        lines.append(
            f"TV distance, {field:5}            {report[f'tv_{field}']:.4f}"
            f"   (a perfect sampler: {report[f'tv_{field}_perfect_sampler']:.4f})"
        )
    lines.append(
        f"held-out cross-entropy       {report['heldout_bits_per_token']:.4f} bits/token"
        f"   (lower bound {report['entropy_bound_bits_per_token']:.4f}; "
        f"{report['heldout_over_bound']:+.2%})"
    )
    return "\n".join(lines)


def cross_entropy_gap(next_token_probabilities: list[list[float]], bound_bits: float) -> float:
    """Held-out cross-entropy in bits per token, relative to the entropy bound: 0 is as good as it gets."""
    probabilities = [p for row in next_token_probabilities for p in row]
    bits = -sum(math.log2(min(max(p, 1e-30), 1.0)) for p in probabilities) / max(len(probabilities), 1)
    return bits / bound_bits - 1


def grading_metrics(result: dict, targets: list[dict]) -> dict:
    """The rubric's metrics of a graded model: validity and uniqueness of its samples, and its cross-entropy
    gap on the hidden dates (from the probability it gave each of their true next characters)."""
    samples = result["samples"]
    return {
        "validity": validity(samples),
        "uniqueness": uniqueness(samples),
        "cross_entropy_gap": cross_entropy_gap(
            result["next_token_probabilities"], IsoDateDistribution().entropy_bits_per_token
        ),
        "samples": len(samples),
    }


def graded_answers(result: dict, targets: list[dict]) -> dict:
    """What the model answered on each hidden item, and whether it was right: for a language model, its most
    likely next character after every prefix of the scored dates (teacher forced). Model similarity
    (:mod:`autograder.similarity`) compares these answers between students."""
    from labs.date_generation.data import vocabularies

    vocab = vocabularies()["target"]
    tokens = vocab.to_list()
    items, answers, right = [], [], []
    for guesses, row in zip(result["next_token_guesses"], targets):
        truth = vocab.encode(row["target"], add_end=True, unknown="unk")
        items += [f"{row['target'][:position]}…" for position in range(len(truth))]
        answers += [tokens[g] if g < len(tokens) else f"#{g}" for g in guesses]
        right += [g == t for g, t in zip(guesses, truth)]
    return {"items": items, "answers": answers, "right": right}


def showcase(run, tiny: bool):
    """What ``make demo`` shows of a trained run: its metrics and a few samples."""
    from labs.tasks import Showcase

    report = evaluate(run.model, run.vocabs, run.config, n=2000, training_dates=[], held_out=2000)
    lines = [
        f"validity {percent(report['validity'])}, uniqueness {percent(report['uniqueness'])} "
        "(2,000 samples at t = 1.0)",
        f"held-out cross-entropy {report['heldout_bits_per_token']:.4f} bits/token "
        f"(bound {report['entropy_bound_bits_per_token']:.4f})",
    ]
    return Showcase(lines, samples=report["examples"])


def save_report(report: dict, path: str | Path) -> None:
    from labs.common.files import write_json

    write_json(path, {k: (float(v) if isinstance(v, (np.floating,)) else v) for k, v in report.items()})
