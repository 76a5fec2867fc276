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
# # Demo 1: a one-to-many RNN that writes dates
#
# A character-level RNN learns to write ISO dates such as `2018-03-19`. Its only real input is
# the start token `<s>`: one input, many outputs.
#
# The lecture's picture, in words:
#
# - **Training (teacher forcing).** At every step the RNN is fed the *true* previous
#   character and asked for the next one. One pass over `<s> 2 0 1 8 - 0 3 - 1 9` gives eleven
#   predictions, all trained at once.
# - **Inference (sampling).** There is no true previous character any more. The RNN draws the
#   next character from its own softmax, feeds that back in as the next input, and goes on
#   until it writes `</s>`.
#
# Because we generated the data ourselves, we know its exact entropy, and so the best
# cross-entropy any model could reach. We'll see how close a small LSTM gets.
#
# *Runs on a GPU when one is there (Colab: Runtime → Change runtime type → GPU) and on a CPU.*

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

# CI runs this notebook in a tiny configuration; you get the real one.
TINY = os.environ.get("ATTENTION_LAB_TINY") == "1"

from labs.common.pipeline import language_model_arrays
from labs.common.training import device_description
from labs.date_generation.config import DateGenerationConfig
from labs.date_generation.data import IsoDateDistribution, vocabularies
from labs.date_generation.evaluate import evaluate, format_report, uniqueness, validity
from labs.date_generation.model import build_model
from labs.date_generation.sampling import sample, sample_one
from labs.date_generation.train import train

print("Running on the", device_description(), "(tiny configuration)" if TINY else "")

# %% [markdown]
# ## The data and its entropy
#
# Dates are drawn uniformly from 1800-01-01 to 2199-12-31: 146,097 days, exactly one 400-year
# cycle of the Gregorian calendar, so 29 February comes up in 2000 but not in 1900 or 2100.
# Uniform over N outcomes means the entropy is exactly log2(N) bits per date. The model
# predicts 11 tokens per date (ten characters and `</s>`), so **no model can score below
# log2(N) / 11 bits per token** on new dates.

# %%
dates = IsoDateDistribution()
print("examples:", dates.sample(6, seed=0))
print(f"{dates.n_days:,} possible dates, entropy {dates.entropy_bits:.3f} bits per date")
print(f"lower bound on cross-entropy: {dates.entropy_bits_per_token:.4f} bits per token")

# %% [markdown]
# ## Teacher forcing: inputs and targets
#
# The target sequence is the input sequence shifted by one step: at step *t* the model sees
# the true character *t − 1* and must predict character *t*.

# %%
vocab = vocabularies()["target"]
inputs, targets = language_model_arrays(["2018-03-19"], vocab)
print("input :", [vocab.tokens[i] for i in inputs[0]])
print("target:", [vocab.tokens[i] for i in targets[0]])

# %% [markdown]
# ## The model
#
# Embedding → LSTM → softmax over the 15 tokens, at every step. The LSTM keeps Keras' default
# settings so that, on a GPU, TensorFlow uses the fast cuDNN kernel.

# %%
config = DateGenerationConfig.tiny() if TINY else DateGenerationConfig()
print(config)
build_model(config, len(vocab)).summary()

# %% [markdown]
# ## Training
#
# Fresh dates from the generator, with teacher forcing. The curve shows cross-entropy in bits
# per token against the dashed lower bound.

# %% [markdown]
# **On a GPU: mixed precision.** On a Colab GPU with tensor cores (T4, L4, A100), run
# `keras.mixed_precision.set_global_policy("mixed_float16")` before the model is built: layers
# compute in float16 (weights stay float32, the softmax output float32), which usually trains
# faster. On a CPU it does not help (float16 is slower there): leave it off, or set it back with
# `set_global_policy("float32")`. The bundle you export grades the same either way.

# %%
run = train(config, verbose=2)
print(f"trained in {run.seconds:.1f} s on the {run.device}")

from labs.common.plots import plot_training_curves

plot_training_curves(run.history, unit="cross-entropy (bits per token)", bound=dates.entropy_bits_per_token,
                     bound_label="entropy of the data", title="Teacher-forced loss");

# %% [markdown]
# ## Sampling at several temperatures
#
# Now the model writes on its own: each character it samples becomes its next input. The
# temperature *t* reshapes the softmax, `p ** (1/t)`: below 1 it plays safe (fewer mistakes,
# less variety), above 1 it takes risks. Greedy decoding always takes the most probable
# character, so it writes the same date every time.
#
# Every row uses the same random numbers (the same seed), so the rows differ exactly where the
# temperature changed a choice. Watch validity and uniqueness move in opposite directions.

# %%
n_show = 8
for name, settings in [("greedy", dict(greedy=True)), ("t = 0.5", dict(temperature=0.5)),
                       ("t = 0.8", dict(temperature=0.8)), ("t = 1.0", dict(temperature=1.0)),
                       ("t = 1.5", dict(temperature=1.5))]:
    samples = sample(run.model, run.vocabs, 1_000, seed=1, **settings)
    print(f"{name:8} valid {validity(samples):6.1%}  unique {uniqueness(samples):6.1%}   {'  '.join(samples[:n_show])}")

# %% [markdown]
# ### The sampling loop, written out
#
# `sample` runs the engine over many dates at once; `sample_one` is the same loop for one date, as
# the slide draws it. With the same seed they draw the same random numbers, so they write the same
# date.

# %%
import inspect

print(inspect.getsource(sample_one))
for seed in range(3):
    print(sample_one(run.model, run.vocabs, seed=seed), sample(run.model, run.vocabs, 1, seed=seed)[0])

# %% [markdown]
# ## How good is it?
#
# - **validity**: real calendar dates in strict `YYYY-MM-DD` (29 February only in leap years);
# - **uniqueness**: a model that learned the distribution rarely repeats itself;
# - **copied**: dates that also occur in the training set (a perfect model copies about as
#   often as the training set covers the 146,097 dates, here about half);
# - **TV distance** between the sampled and true distributions of year, month and day, beside
#   what a *perfect* sampler gets with as many samples (finite samples are never exact);
# - **held-out cross-entropy** beside the lower bound.

# %%
report = evaluate(run.model, run.vocabs, config, n=500 if TINY else 10_000,
                  held_out=1_000 if TINY else 10_000)
print(format_report(report))

# %% [markdown]
# ## Things to try
#
# 1. Train with `cell="gru"`: does it reach the bound as fast?
# 2. Shrink `units` to 16. Which mistakes appear first: invalid days, or a skewed distribution?
# 3. Sample 10,000 dates at `t = 0.5`. Validity goes up; what happens to uniqueness and to the
#    TV distances, and why?
# 4. Teacher forcing trains on true prefixes only. What does the model do after a prefix it
#    never saw, like `2018-1`? (Hint: `sample` is built on `labs.common.decoding`.)
