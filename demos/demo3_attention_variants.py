# ---
# jupyter:
#   jupytext:
#     formats: py:percent,ipynb
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Demo 3: the attention family on one task
#
# The lecture teaches several attentions. Here they all translate the same dates (demo 2's task),
# trained on the same data with the same seed, so that you can compare what each costs and what
# each looks at. Every variant has the same encoder (a bidirectional LSTM over the source, giving
# `h_1 ... h_S`) except the Transformer, and the same output: `p_t = softmax(W_o tanh(W_c [s_t; c_t]))`.
#
# | variant | score `e_tj` (how well source position j fits output step t) | where the context goes |
# |---|---|---|
# | `none` | no attention: the decoder sees only the encoder's final state | — |
# | `bahdanau` | `v_a · tanh(W_a s_{t-1} + U_a h_j)`: the **previous** state asks | **into** the RNN: `s_t = RNN(s_{t-1}, [y_{t-1}; c_t])` |
# | `luong-additive` | `v_a · tanh(W_a s_t + U_a h_j)` (demo 2's model) | after the RNN |
# | `luong-general` | `s_tᵀ W_a h_j` (multiplicative) | after the RNN |
# | `scaled-dot` | `(W_q s_t) · (W_k h_j) / √d` | after the RNN |
# | `multi-head` | H heads of scaled-dot, each with its own `W_q^i, W_k^i, W_v^i`; `c_t = W_O [c_t^1; …; c_t^H]` | after the RNN |
# | `transformer` | no RNN: self-attention in the encoder, causal self-attention and cross-attention in the decoder | — |
#
# For all of them `a_t = softmax_j(e_t)` over the real source positions and `c_t = Σ_j a_tj h_j`
# (multi-head: per head, over its own projection of `h_j`, then concatenated and projected).
# On the command line: `python -m labs train date-translation --attention NAME [--cell simple|gru|lstm]`.

# %% [markdown]
# ### Setup
#
# The notebook imports the kit's code (`labs/`), so the first cell finds it, here or above, and moves
# into it: the kit's folder is where the notebook's files go and where the README's commands run.
# Opened in Colab from the course's GitHub repository, the notebook arrives alone: then the cell
# fetches the kit and installs what Colab lacks (a minute, once per session).

# %%
KIT_REPOSITORY, KIT_BRANCH = "", ""

# %%
import inspect
import os

TINY = os.environ.get("ATTENTION_LAB_TINY") == "1"  # CI runs a tiny configuration

import pandas as pd

from labs.common.plots import plot_attention, plot_attention_grid
from labs.common.training import device_description
from labs.date_translation import attention, bahdanau, compare, transformer, variants
from labs.date_translation.config import DateTranslationConfig
from labs.date_translation.data import sample_pairs
from labs.date_translation.translate import translate

print("Running on the", device_description(), "(tiny configuration)" if TINY else "")

# %% [markdown]
# ## The variants: one record each
#
# Every variant is one record in one table (`labs/date_translation/variants.py`): its score in the
# lecture's letters, what the encoder computes once from `h_j` for that score (its *keys*), the
# score itself, and the encoder and decoder it runs on (so where the decoder attends). The model,
# the command line's `--attention` choices and this notebook all read the table.

# %%
pd.DataFrame([{"attention": v.name, "score": v.formula,
               "keys": v.keys.path.split(":")[1] if v.keys else "",
               "decoder": v.decoder.path.split(":")[0].rsplit(".", 1)[1],
               "longest source": v.max_source_length or "any"}
              for v in variants.VARIANTS.values()]).set_index("attention")

# %% [markdown]
# ## The scores, in code
#
# The four Luong-style scores differ in one call: the attention layer and what it is handed.
# Keras has a layer for each: `AdditiveAttention` (`v_a · tanh(query + key)`), `Attention`
# (`query · key`), `MultiHeadAttention`. Whatever depends on `h_j` alone (`U_a h_j`, `W_a h_j`,
# `W_k h_j`) is computed once per input by the encoder, not once per output step.

# %%
print(inspect.getsource(attention.additive_keys))
print(inspect.getsource(attention.additive_score))
print(inspect.getsource(attention.scaled_dot_score))

# %% [markdown]
# ### Bahdanau: the previous state, and the context into the RNN
#
# Step t needs `s_{t-1}`, which needs `c_{t-1}`: the decoder cannot run over the whole target in one
# RNN call. It is a one-step model, and training unrolls it over the 11 target positions.

# %%
print(inspect.getsource(bahdanau.build_decoder))

# %% [markdown]
# ### The Transformer: attention only, and positions added
#
# Attention is a weighted sum: it does not know which position came first. The Transformer adds
# a learned position embedding to each character's embedding.

# %%
print(inspect.getsource(transformer.embed))
print(inspect.getsource(transformer.build_decoder))

# %% [markdown]
# ## Train them all: same data, same seed
#
# Each variant trains on the same pairs for the same number of epochs, then translates the same
# held-out dates greedily and with beam search (width 4).

# %% [markdown]
# **On a GPU: mixed precision.** On a Colab GPU with tensor cores (T4, L4, A100), run
# `keras.mixed_precision.set_global_policy("mixed_float16")` before the model is built: layers
# compute in float16 (weights stay float32, the softmax output float32), which usually trains
# faster. On a CPU it does not help (float16 is slower there): leave it off, or set it back with
# `set_global_policy("float32")`. The bundle you export grades the same either way.

# %%
config = DateTranslationConfig.tiny(train_size=600) if TINY else DateTranslationConfig(train_size=30_000, epochs=4)
test = sample_pairs(100 if TINY else 5_000, seed=3, split="test")
rows, runs = compare.compare(config, test)
table = pd.DataFrame(rows).set_index("attention").drop(columns="by_length")
table

# %% [markdown]
# ## Where does each variant look?
#
# One column per variant, one row per date: a Gregorian date in English, and a Thai date with a
# Buddhist-era year (2561 = 2018 + 543). In every map, row t holds the weights used to write
# output character t. `bahdanau` chose them from the state *before* that character's RNN step,
# `luong-additive` from the state after it: do their maps differ, and where?

# %%
examples = ["Saturday, 27 January 2018", "วันเสาร์ที่ 27 มกราคม พ.ศ. 2561"]
plot_attention_grid({name: translate(run.model, run.vocabs, examples) for name, run in runs.items()});

# %% [markdown]
# ### Side by side, to explore
#
# `bahdanau` and `luong-additive` on the Thai date: point at the same output character in each (the
# year's `2`, say) and compare what they read. Then look at another pair: change `pair`.

# %%
from labs.common.explorer import attended, compare_attention
from labs.date_translation.task import TASK

pair = [name for name in ("bahdanau", "luong-additive") if name in runs]
compare_attention({name: attended(runs[name].model, runs[name].vocabs,
                                  translate(runs[name].model, runs[name].vocabs, examples[1:])[0],
                                  steps=TASK.max_output_length)
                   for name in pair}, title=examples[1])

# %% [markdown]
# ## What do different heads look at?
#
# The Transformer's last cross-attention layer has several heads, each with its own projections;
# the map above is their mean. Here they are one by one.

# %%
heads = compare.head_maps(runs["transformer"], examples[0])            # (H, T + 1, S)
translation = translate(runs["transformer"].model, runs["transformer"].vocabs, examples[:1])[0]
for i, head in enumerate(heads):
    plot_attention(translation.source, translation.output, head, title=f"head {i + 1}")

# %% [markdown]
# The same, to explore, for `multi-head` (heads over the LSTM's states) and the `transformer`: pick a
# head (or their average) above each map, and point at the output characters. Does one head follow
# the year while another follows the day?

# %%
compare_attention({name: attended(runs[name].model, runs[name].vocabs,
                                  translate(runs[name].model, runs[name].vocabs, examples[:1])[0],
                                  steps=TASK.max_output_length)
                   for name in ("multi-head", "transformer") if name in runs}, title=examples[0])

# %% [markdown]
# ## The cost of attention as the source grows
#
# Each output step scores every source position: O(l₁ · l₂) for the whole output. Milliseconds per
# output step of the step decoder (256 inputs at once), by source length:

# %%
lengths = (20, 40) if TINY else (20, 40, 80, 160)
pd.DataFrame({name: compare.step_cost(run.model, run.vocabs, lengths) for name, run in runs.items()}).T

# %% [markdown]
# ## Questions
#
# 1. Which variant needs the previous decoder state, and what does that cost in training time?
#    (Look at `training_seconds`: its decoder runs step by step even with teacher forcing.)
# 2. Why does the Transformer need positions? Remove them (`transformer.embed`) and predict what
#    happens to `27/01/2018` against `01/27/2018`.
# 3. What do the Transformer's heads look at? Do some follow the year and others the day?
# 4. `luong-general` has no `v_a` and no `tanh`: fewer parameters than `luong-additive`. Does it
#    lose anything on this task? At the small size (`DateTranslationConfig.small()`)?
# 5. Which variants pass the lab 2 rubric (it requires `AdditiveAttention`), and why does the
#    rubric ask for one layer rather than a score?

# %%
print("compared:", ", ".join(table.index))
