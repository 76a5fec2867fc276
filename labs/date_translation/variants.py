"""The attention family side by side: train each variant on the same data with the same seed, and measure it.

Used by ``demos/demo3_attention_variants`` (tiny configurations) and
``benchmarks/attention_variants.py`` (the default and small sizes).

    from labs.date_translation import variants
    table, runs = variants.compare(DateTranslationConfig.tiny(), pairs)
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from labs.date_translation.config import ATTENTIONS

# Each variant's score in the lecture's notation (Bahdanau's uses the previous state s_{t-1}).
SCORES = {
    "none": "no attention: the decoder sees only the encoder's final state",
    "bahdanau": "e_tj = v_a . tanh(W_a s_{t-1} + U_a h_j); s_t = RNN(s_{t-1}, [y_{t-1}; c_t])",
    "luong-additive": "e_tj = v_a . tanh(W_a s_t + U_a h_j)",
    "luong-general": "e_tj = s_t^T W_a h_j",
    "scaled-dot": "e_tj = (W_q s_t) . (W_k h_j) / sqrt(d)",
    "multi-head": "H heads of (W_q^i s_t) . (W_k^i h_j) / sqrt(d_k); c_t = W_O [c_t^1; ...; c_t^H], c_t^i = "
    "sum_j a_tj^i W_v^i h_j",
    "transformer": "self-attention encoder and causal decoder, cross-attention softmax(QK^T / sqrt(d_k)) V",
}


def compare(
    config, pairs: list[dict], attentions=ATTENTIONS, *, beam: int = 4, verbose: int = 0, progress=print
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
    for attention in attentions:
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

    The sources are real date characters repeated to length; the encoder runs once, outside the
    timing; each figure is the best of ``repeats`` runs of ``steps`` greedy steps over ``batch`` inputs.
    """
    from labs.common.seq2seq import step_decoder
    from labs.common.vocab import START_ID

    characters = list("27 January 2018, ๒๗ ม.ค. ๖๑ ")
    result = {}
    for length in lengths:
        text = "".join(characters[i % len(characters)] for i in range(length))
        source = vocabs["source"].encode_batch([text] * batch, unknown="unk")  # (batch, length)
        best = float("inf")
        for _ in range(repeats + 1):  # the first run compiles
            step, state = step_decoder(model, source)
            tokens = np.full((batch,), START_ID, dtype=np.int32)
            started = time.perf_counter()
            for _ in range(steps):
                probabilities, state, _ = step(tokens, state)
                tokens = probabilities.argmax(-1).astype(np.int32)
            best = min(best, time.perf_counter() - started)
        result[str(length)] = round(1000 * best / steps, 3)
    return result


def head_maps(run, text: str) -> np.ndarray:
    """Each head's cross-attention for ``text`` (a Transformer's last decoder layer): (H, len(output) + 1,
    len(text))."""
    from labs.common.seq2seq import connect
    from labs.date_translation.translate import translate

    output = translate(run.model, run.vocabs, [text])[0].output
    source = run.vocabs["source"].encode_batch([text], unknown="unk")  # (1, S)
    target_in = run.vocabs["target"].encode_batch(
        [output], add_start=True
    )  # <s> + output: (1, len(output) + 1)
    import keras

    outputs = connect(
        run.model.get_layer("encoder"),
        run.model.get_layer("decoder"),
        keras.ops.convert_to_tensor(source),
        keras.ops.convert_to_tensor(target_in),
    )
    return np.asarray(outputs["heads"])[0, :, : len(output) + 1, : len(text)]
