"""The attention family side by side: train each variant on the same data with the same seed, and measure it.

Used by ``demos/demo3_attention_variants`` (tiny configurations) and
``benchmarks/attention_variants.py`` (the default and small sizes); the variants are the records
of :mod:`labs.date_translation.variants`.

    from labs.date_translation import compare
    table, runs = compare.compare(DateTranslationConfig.tiny(), pairs)
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from labs.date_translation.task import TASK
from labs.date_translation.variants import VARIANTS


def compare(
    config, pairs: list[dict], attentions=None, *, beam: int = 4, verbose: int = 0, progress=print
) -> tuple[list[dict], dict]:
    """Train every variant of ``config`` (same data, same seed) and score it on ``pairs``.

    Returns one row per variant (parameters, training seconds, exact match, greedy and beam
    decoding seconds for all of ``pairs``) and the trained runs by variant.
    """
    from labs.date_translation import evaluate
    from labs.date_translation.train import train
    from labs.date_translation.translate import translate

    sources, targets = [p["source"] for p in pairs], [p["target"] for p in pairs]
    rows, runs = [], {}
    for attention in attentions or tuple(VARIANTS):
        run = train(replace(config, attention=attention), verbose=verbose)
        for warm_up in (
            sources[:64],
            sources[:65],
        ):  # compile the step graphs: a second shape makes them general
            translate(run.model, run.vocabs, warm_up)
            translate(run.model, run.vocabs, warm_up, beam=beam)
        started = time.perf_counter()
        greedy = [t.output for t in translate(run.model, run.vocabs, sources)]
        greedy_seconds = time.perf_counter() - started
        started = time.perf_counter()
        beamed = [t.output for t in translate(run.model, run.vocabs, sources, beam=beam)]
        beam_seconds = time.perf_counter() - started
        table = evaluate.results_table(pairs, greedy)
        rows.append(
            {
                "attention": attention,
                "parameters": run.model.count_params(),
                "training_seconds": round(run.seconds, 1),
                "exact_match": evaluate.exact_match(greedy, targets),
                f"beam{beam}_exact_match": evaluate.exact_match(beamed, targets),
                "greedy_seconds": round(greedy_seconds, 2),
                f"beam{beam}_seconds": round(beam_seconds, 2),
                "by_length": {
                    str(k): float(v)
                    for k, v in evaluate.breakdown(table, "length_bin")["exact_match"].items()
                },
            }
        )
        runs[attention] = run
        if progress:
            row = rows[-1]
            progress(
                f"{attention:15} {row['parameters']:>8,} parameters  trained {row['training_seconds']:6.1f} "
                f"s  "
                f"exact match {row['exact_match']:7.2%}  (beam {beam}: "
                f"{row[f'beam{beam}_exact_match']:7.2%})  "
                f"decoding {len(pairs):,}: {greedy_seconds:.2f} s greedy, {beam_seconds:.2f} s beam {beam}"
            )
    return rows, runs


def step_cost(
    model, vocabs, lengths=(20, 40, 80, 160), *, batch: int = 256, steps: int = 10, repeats: int = 3
) -> dict:
    """Milliseconds per output step of the step decoder, for sources of each length (the O(l1 . l2) of
    attention).

    The sources are real date characters repeated to length; the encoder runs once, outside the timing; each
    figure is the best of ``repeats`` runs of ``steps`` greedy steps over ``batch`` inputs."""
    from labs.common import seq2seq
    from labs.common.vocab import START_ID

    characters = list("27 January 2018, ๒๗ ม.ค. ๖๑ ")
    result = {}
    for length in lengths:
        text = "".join(characters[i % len(characters)] for i in range(length))
        # (batch, length)
        source = vocabs["source"].encode_batch([text] * batch, unknown="unk")
        best = float("inf")
        # the first run compiles
        for _ in range(repeats + 1):
            step, state = seq2seq.step_function(model, source)
            tokens = np.full((batch,), START_ID, dtype=np.int32)
            started = time.perf_counter()
            for _ in range(steps):
                probabilities, state, _ = step(tokens, state)
                tokens = probabilities.argmax(-1).astype(np.int32)
            best = min(best, time.perf_counter() - started)
        result[str(length)] = round(1000 * best / steps, 3)
    return result


def head_maps(run, text: str) -> np.ndarray | None:
    """Each head's attention for ``text`` (multi-head's; the Transformer's last decoder layer's
    cross-attention): (H, len(output) + 1, len(text)); None for a variant with one attention."""
    from labs.common.explorer import head_weights
    from labs.date_translation.translate import translate

    output = translate(run.model, run.vocabs, [text])[0].output
    return head_weights(run.model, run.vocabs, text, output, steps=TASK.max_output_length)
