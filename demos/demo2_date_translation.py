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
# # Demo 2: translating dates with attention
#
# An encoder-decoder reads a date as people write it (`27 January 2018`, `27 JAN 2018`,
# `๒๗ ม.ค. ๖๑`, with its Buddhist-era year) and writes it as ISO 8601: `2018-01-27`.
#
# - The **encoder**, a bidirectional LSTM, turns every source character into a vector that
#   knows its neighbours on both sides.
# - The **decoder**, an LSTM, writes the output one character at a time (teacher forcing in
#   training, as in demo 1).
# - **Attention** (`keras.layers.AdditiveAttention`, Bahdanau's additive score
#   `v · tanh(W s + U h)`) lets each output step look back at *all* encoder vectors and take a
#   weighted average of the ones it needs, instead of squeezing the whole date into one vector.
#
# *Where this model sits:* the score is Bahdanau's; the placement is Luong's. The decoder attends
# with its **current** state and combines the context **after** the LSTM. Bahdanau attended with
# the **previous** state and fed the context **into** the LSTM. Luong's placement lets training
# run the decoder over the whole target at once; Bahdanau's needs a loop over time steps.

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
import os

TINY = os.environ.get("ATTENTION_LAB_TINY") == "1"  # CI runs a tiny configuration

from dataclasses import replace

from labs.common.metrics import percent
from labs.common.plots import plot_attention, plot_training_curves
from labs.common.training import device_description
from labs.date_translation import evaluate
from labs.date_translation.config import DateTranslationConfig
from labs.date_translation.data import sample_pairs, vocabularies
from labs.date_translation.formats import FORMATS
from labs.date_translation.model import build_model
from labs.date_translation.train import train
from labs.date_translation.translate import greedy_translate, translate

print("Running on the", device_description(), "(tiny configuration)" if TINY else "")

# %% [markdown]
# ## The data
#
# 40 formats over three locales. Splits are **by date**: no day in the test split ever appears
# in training, in any format, so the model cannot pass by remembering dates.

# %%
print(len(FORMATS), "formats")
for row in sample_pairs(12, seed=0, split="train"):
    print(f"{row['locale']}  {row['format_id']:22} {row['source']:34} -> {row['target']}")

# %% [markdown]
# ## The model

# %%
config = DateTranslationConfig.tiny() if TINY else DateTranslationConfig()
vocabs = vocabularies()
print(config)
build_model(config, len(vocabs["source"]), len(vocabs["target"])).summary()

# %% [markdown]
# ## Training

# %% [markdown]
# **On a GPU: mixed precision.** On a Colab GPU with tensor cores (T4, L4, A100), run
# `keras.mixed_precision.set_global_policy("mixed_float16")` before the model is built: layers
# compute in float16 (weights stay float32, the softmax output float32), which usually trains
# faster. On a CPU it does not help (float16 is slower there): leave it off, or set it back with
# `set_global_policy("float32")`. The bundle you export grades the same either way.

# %%
run = train(config, verbose=2)
print(f"trained in {run.seconds:.0f} s on the {run.device}")
plot_training_curves(run.history, unit="loss (nats per character)", title="Date translation");

# %% [markdown]
# ## How good is it? Held-out dates, per locale, per format, per field

# %%
test = sample_pairs(300 if TINY else 10_000, seed=3, split="test")
sources = [p["source"] for p in test]
table = evaluate.results_table(test, [t.output for t in translate(run.model, run.vocabs, sources)])
print(evaluate.format_summary(evaluate.summary(table), "attention model"))
evaluate.breakdown(table, "format_id").head(10)

# %% [markdown]
# ## One vector is a bottleneck
#
# The baseline has the same encoder and decoder but no attention: all its decoder knows about
# the source is the encoder's final state, one fixed-size vector. At the default size (128
# numbers) that vector can hold a whole date, but the baseline takes longer to learn to pack it:
# `benchmarks/date_translation.py` measured 97.18 % against the attention model's 100.00 % after
# the default 3 epochs, and 99.96 % after 6. Shrink the state to 16 units and train both
# briefly: now the single vector runs out of room, and attention's lead is plain, longest inputs
# included.

# %%
small = DateTranslationConfig.tiny() if TINY else DateTranslationConfig.small()
tables = {}
for name, small_config in (("attention", small), ("baseline", replace(small, attention="none"))):
    small_run = train(small_config, verbose=0)
    tables[name] = evaluate.results_table(test, [t.output for t in translate(small_run.model, small_run.vocabs, sources)])
    print(f"{name:9} ({small_run.model.count_params():,} parameters): exact match {tables[name]['correct'].mean():.2%}")
print(evaluate.compare_by_length(tables).to_string(float_format=percent))   # exact match by length, in percent as everywhere

# %% [markdown]
# ## The decoding loop, written out
#
# At inference there is no true previous character: the decoder writes one, and it becomes the
# next step's input. Here is that loop for one date, as the slide draws it: the encoder once, then
# one decoder step per character. `translate`, used everywhere else, runs the same steps for many
# dates at once (and beam search) in the decoding engine; both write the same dates.

# %%
import inspect

print(inspect.getsource(greedy_translate))
for text in ["27 January 2018", "๒๗ ม.ค. ๖๑"]:
    looped, engine = greedy_translate(run.model, run.vocabs, text), translate(run.model, run.vocabs, [text])[0]
    print(f"{text:20} loop: {looped}   engine: {engine.output}")

# %% [markdown]
# ## Where does the decoder look?
#
# Each row is one output character; each column one source character. Bright cells are where
# the decoder looked while writing that character. Watch the year: for `๒๕๖๑` (2561, Buddhist
# era) the model must read all four digits and subtract 543.

# %%
examples = ["Saturday, 27 January 2018", "27 JAN 2018", "๒๗ ม.ค. ๒๕๖๑", "วันเสาร์ที่ 27 มกราคม พ.ศ. 2561"]
for result in translate(run.model, run.vocabs, examples):
    plot_attention(result.source, result.output, result.attention)

# %% [markdown]
# ### Point at a character
#
# The same attention, to explore: point at (or tap) an output character and the source characters it
# read light up, with their weights; point at a source character to see which outputs read it. Start
# with the year: point at `2`, `0`, `1` and `8` in turn. To write 2018 from `๒๕๖๑` (2561), the model
# must read the Buddhist-era digits: which does each output digit read, and does `๒๗` (the day) ever
# light up while the year is written?

# %%
from labs.common.explorer import beam_search_view, explore
from labs.date_translation.task import TASK

thai_date = translate(run.model, run.vocabs, ["๒๗ ม.ค. ๒๕๖๑"])[0]
explore(run.model, run.vocabs, thai_date, steps=TASK.max_output_length)

# %% [markdown]
# ## Try your own
#
# Beam search keeps the `k` best partial outputs at every step; the top three are shown.

# %%
typed = ["1 April 1990", "december 25th, 2024", "3/5/07", "๑ เม.ย. ๒๕๓๓", "14.02.2001"]
for result in translate(run.model, run.vocabs, typed, beam=3):
    print(f"{result.source:24} -> {result.output}    beams: {', '.join(result.alternatives)}")

# %% [markdown]
# And one of them step by step: the hypotheses beam search kept at each step, the best it pruned
# (struck through), each with its log-probability, the greedy path shaded. Point at a hypothesis to
# see the ones it grew from. A date the model is sure of keeps one strong hypothesis all the way;
# try a harder one (`3/5/07`, or a typo of your own).

# %%
beam_search_view(run.model, run.vocabs, "3/5/07", beam=3, steps=TASK.max_output_length)

# %% [markdown]
# ## Things to try
#
# 1. Between 16 and 64 units, where does the baseline catch up with attention?
# 2. Find a format where the attention map is *not* a clean diagonal, and explain why.
# 3. `3/5/07` is read as month/day (en_US, two-digit year). What does the model do with
#    `3/5/2007`, and why is that the rule that keeps the data unambiguous?
