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
# # Homework 3.1: Thai names in English, with key-value attention
#
# A sequence-to-sequence model reads a Thai full name, `สมชาย ใจดี`, and writes it in English
# letters, `Somchai Jaidee`. You write its attention layer.
#
# **Your job:** fill in the four `TODO`s of `KeyValueAttention` in `homework/kv_attention.py`,
# run the self-test below until it passes, run the notebook to the end, and export your
# submission (last section).
#
# *Runs on a GPU when one is there (Colab: Runtime → Change runtime type → GPU) and on a CPU.*
# *In Colab, `homework/kv_attention.py` is among the session's files (the folder icon on the
# left): edit it there, and download it before the session ends, because Colab deletes those
# files with the session. Your submission zip carries a copy of the layer too.*
#
# ## Key-value attention
#
# In lab 2 each encoder state `h_j` did two jobs: the decoder compared its state with `h_j` to
# decide *where* to look (the score), and then read `h_j` itself as *what* it found there (the
# context). One vector serves both questions. Key-value attention (Daniluk et al., 2017,
# *Frustratingly Short Attention Spans in Neural Language Modeling*) gives each job its own vector:
#
# | | lab 2 (additive, Bahdanau) | this homework (key-value) |
# |---|---|---|
# | what is scored | `h_j` (through `U h_j`) | a **key** `k_j = W_k h_j` |
# | what is read | `h_j` | a **value** `v_j = W_v h_j` |
# | the query | the decoder state `s_t` (through `W s_t`) | `q_t = W_q s_t` |
# | score | `v · tanh(W s_t + U h_j)` | `q_t · k_j / √d_k` (or additive: `w · tanh(q_t + k_j)`) |
# | context | `Σ_j a_tj h_j` | `Σ_j a_tj v_j` |
#
# The key only has to be good for *matching*: it can keep what tells the Thai consonant `ช`
# from `ซ`. The value only has to be good for *writing*: it can keep what the decoder needs to
# spell `ch` or `s`. The softmax still runs over the real source positions only (padding is
# masked *before* it), so the weights of each output step sum to 1.
#
# **How this differs from Daniluk et al.** They split *one* LSTM output vector into parts
# (`[k; v] = h_j`, and in their full model a third part to predict the next word): the network
# learns to put matching information in one half and content in the other, at no extra cost.
# Here the encoder state stays whole and two learned matrices `W_k` and `W_v` read what each job
# needs from all of it. Both keep scoring and reading apart; projections are the form that
# Transformers later made standard (their attention is exactly this scaled dot product, with
# several heads).
#
# **Why a scaled dot product?** The dot product of two random `d`-dimensional vectors has a
# standard deviation that grows like `√d`; dividing by `√d_k` keeps the scores in the range
# where the softmax still has useful gradients.

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
from pathlib import Path

TINY = os.environ.get("ATTENTION_LAB_TINY") == "1"  # CI runs a tiny configuration

from autograder.batch import check_bundle
from labs.common.errors import InputError
from labs.common.files import read_csv
from labs.common.fonts import use_thai_font
from labs.common.metrics import percent
from labs.common.paths import DATASETS_DIR
from labs.common.plots import plot_attention, plot_training_curves
from labs.common.submission import export
from labs.common.training import device_description, evaluated, trained
from labs.name_transliteration import evaluate
from labs.name_transliteration.config import NameTransliterationConfig
from labs.name_transliteration.data import sample_names
from labs.name_transliteration.selftest import selftest
from labs.name_transliteration.train import load_trained, train
from labs.name_transliteration.transliterate import greedy_transliterate, transliterate

run = results = table = None   # set by the training and evaluation cells below
print("Running on the", device_description(), "(tiny configuration)" if TINY else "")
print("Thai font for the heatmaps:", use_thai_font() or "none found (labels fall back to code points)")

# %% [markdown]
# ## The data
#
# Names are built from pythainlp's bundled lists of Thai given names and family names, written in
# English by the romanization table in `datasets/thai-names/` (see its datasheet). A name often has
# more than one fair spelling (`Thanaphong` and `Tanapong`): any spelling in the `alternatives`
# column counts as right.
#
# The test split has two **strata**: `seen` names, whose words both occur in training (the full
# name does not), and `unseen` names, with a word that never occurs in training. The first asks
# whether the model remembers; the second whether it learned how Thai letters sound.

# %%
test = read_csv(DATASETS_DIR / "thai-names" / "test.csv")
if TINY:
    test = test[:100] + test[-100:]   # both strata
for row in sample_names(8, seed=0, split="train"):
    also = f"   (also: {row['alternatives'].replace('|', ', ')})" if row["alternatives"] else ""
    print(f"{row['source']:24} -> {row['target']}{also}")

# %% [markdown]
# ## Your layer: the self-test
#
# Open `homework/kv_attention.py` and fill in the `TODO`s, in order. Then run this cell. Each
# check says what it expected and what your layer did; fix the first failure first. The cell
# reloads your file every time, so there is no need to restart the notebook after an edit.
#
# Until every check passes, this cell stops "Run all" here: training a broken layer for several
# minutes would only hide the mistake.

# %%
selftest();

# %% [markdown]
# ## The model and its training
#
# The encoder and decoder are lab 2's (a bidirectional LSTM and an LSTM, teacher forcing); only the
# attention is new. See `labs/name_transliteration/model.py`. With the defaults (6 epochs), training
# takes up to about 13 minutes on a 2-core CPU (695-779 s on a slow day), less on a Colab GPU. A quarter
# of the training names carry a Thai dictionary word in place of one name: more letter patterns to learn
# from.

# %% [markdown]
# **On a GPU: mixed precision.** On a Colab GPU with tensor cores (T4, L4, A100), run
# `keras.mixed_precision.set_global_policy("mixed_float16")` before the model is built: layers
# compute in float16 (your attention layer too; the weights stay float32, and so does the model's
# last softmax, the one over the letters), which usually trains faster. On a CPU it does not help (float16 is slower there): leave it off, or set it back with
# `set_global_policy("float32")`. The bundle you export grades the same either way.

# %% [markdown]
# **Train with a seed of your own.** The grader compares every pair of submitted models (the same
# weights, near-identical weights, the same mistakes on hidden names), and two students who train
# with the same seed start from the same weights. Put, for example, the last four digits of your
# student id in `SEED`.

# %% [markdown]
# **Where it goes.** The setup cell moved into the kit's folder (the one holding `labs/`), so the notebook
# writes where the kit's README and Makefile look: the model in `runs/names/`, the submission in
# `submission.zip`. Training saves the model after every epoch, replacing what `runs/names/` held
# before. If you stop the cell (■), the model of the last whole epoch is kept as `run` (the cells below
# use it).
#
# **Trained already?** A model trained in a terminal (`make train`), or before the kernel restarted, is in
# `runs/names/`: set `TRAIN = False` and the cell loads it, with its losses per epoch, instead of training.

# %%
SEED = 1 if TINY else None   # your own: for example the last four digits of your student id
TRAIN = True   # False: use the model already in the run folder, trained earlier or in a terminal
folder = "runs/tiny" if TINY else "runs/names"   # a smoke run has its own
if not TRAIN:
    run = load_trained(folder)
    print(f"Loaded the model in {folder}/, trained earlier (seed {run.config.seed}); this cell trained nothing.")
    if note := run.config.tiny_run_note("set TRAIN = True to train the real model"):
        print(note)
elif SEED is None:
    raise InputError("Set SEED in this cell to a number of your own (the last four digits of your student id, "
                     "say), then run it again.")
else:
    config = NameTransliterationConfig.tiny(seed=SEED) if TINY else NameTransliterationConfig(seed=SEED)
    print(config)
    run = None   # stays None if training is stopped before its first epoch ends
    run = train(config, out_dir=folder, verbose=2)
print(run.summary())
plot_training_curves(run.history, unit="loss (nats per character)", title="Thai -> English names");

# %% [markdown]
# ## How good is it?
#
# Beam search keeps the 3 best partial spellings at every step. We report the NEWS
# transliteration metrics: **accuracy** (the best output is an accepted spelling), **character
# error rate**, **mean F-score** (from the longest common subsequence: partial credit for a near
# miss) and **MRR** (1 / rank of the first accepted spelling among the top 3), for each stratum.

# %%
run = trained(run)   # a clear message, not a NameError, when the training cell did not finish an epoch
results = transliterate(run.model, run.vocabs, [row["source"] for row in test], beam=3)
candidates = [r.alternatives for r in results]
print(evaluate.format_summary(evaluate.summary(test, candidates)))
table = evaluate.results_table(test, candidates)   # one row per name: its output, right or wrong, its length
print(evaluate.by_length(table).to_string(float_format=percent))   # accuracy and CER by name length, as above
correct = table["correct"].tolist()
wrong_ones = [i for i, ok in enumerate(correct) if not ok]
look_at = (wrong_ones or [0])[0]   # the first name it got wrong: the explorers below look at it

# %% [markdown]
# ## Where does the decoder look?
#
# One row per English letter, one column per Thai character. Thai writes some vowels *before*
# the consonant they follow in speech (`เ`, `แ`, `โ`, `ใ`, `ไ`), and some sounds need two
# English letters (`ช` → `ch`): look for the places where the map is not a simple diagonal.
# The last map is a name the model got wrong (when there is one).

# %%
run, table = trained(run), evaluated(table)
right_ones = [i for i, ok in enumerate(correct) if ok][:3]
for i in right_ones + wrong_ones[:1]:
    result = results[i]
    label = "" if correct[i] else f"  (wrong; expected {test[i]['target']})"
    plot_attention(result.source, result.output, result.attention, title=f"{result.source} → {result.output}{label}")

# %% [markdown]
# ### Why did it write that? Explore the wrong name
#
# The first name the model got wrong (or, when it got none wrong, the first name), to explore: point
# at (or tap) an English letter to light up the Thai characters it read, with their weights; point at
# a Thai character to see which letters read it. Marks above and below a consonant (`ิ`, `ุ`, `่`) show
# on a dotted circle (`◌ิ`). Find the letter where the output leaves the expected spelling: what did
# the model read there?
#
# Below it, beam search on the same name, step by step: the spellings it kept at each step and the
# best it pruned (struck through), with their log-probabilities. Was the right spelling among them,
# and at which step was it dropped?

# %%
from labs.common.explorer import beam_search_view, explore
from labs.name_transliteration.task import TASK

run, table = trained(run), evaluated(table)
print(f"{results[look_at].source} → {results[look_at].output}; accepted: {', '.join(evaluate.accepted_spellings(test[look_at]))}")
explore(run.model, run.vocabs, results[look_at], steps=TASK.max_output_length)

# %%
run, table = trained(run), evaluated(table)
beam_search_view(run.model, run.vocabs, results[look_at].source, beam=3, steps=TASK.max_output_length)

# %% [markdown]
# ## The decoding loop, written out
#
# `transliterate` runs many names at once, with beam search, in the decoding engine. Here is its
# greedy loop for one name: the encoder once (your layer's keys and values come from its states),
# then one decoder step per letter, each asking your attention where to read.

# %%
import inspect

print(inspect.getsource(greedy_transliterate))
print(greedy_transliterate(trained(run).model, run.vocabs, "สมชาย ใจดี"))

# %% [markdown]
# ## Try your own

# %%
for result in transliterate(trained(run).model, run.vocabs, ["สมชาย ใจดี", "ปวีณา รัตนพงศ์", "ธนากร ศรีสุข"], beam=3):
    print(f"{result.source:18} -> {result.output:22} top 3: {', '.join(result.alternatives)}")

# %% [markdown]
# ## Export your submission
#
# Set `STUDENT_ID` to your university id and run the cell. It writes `submission.zip` in the kit's
# folder (where `make check` looks), not next to this notebook: your model, its vocabularies, your
# `kv_attention.py` and your predictions on the public test names. Before it writes, it runs the grader's import check and the self-test on your layer,
# and refuses if `kv_attention.py` changed since you trained (the bundle must carry the code the
# model ran with); an earlier `submission.zip` stays as it was if the export fails. Then it checks
# the bundle exactly as the grader will (the same validation, the same sandbox), scored on the public
# dev set. From a terminal: `python -m autograder check submission.zip --task name-transliteration`.
# A smoke run's model (1,000 names) goes to `tiny.zip` instead, so that it never replaces your submission.

# %%
STUDENT_ID = "tiny-run" if TINY else ""   # your university id, for example "6512345678"

if not STUDENT_ID:
    print("Set STUDENT_ID in this cell to export your submission.")
else:
    run = trained(run)
    bundle = Path("tiny.zip" if TINY or run.config.is_tiny_run else "submission.zip")   # a smoke run's has its own
    if not TINY and run.config.is_tiny_run:
        print(run.config.tiny_run_note("it goes to tiny.zip, not submission.zip: train the real model first"))
    if results is None:   # the evaluation cell has not run: the predictions come from here
        results = transliterate(run.model, run.vocabs, [row["source"] for row in test], beam=3)
    predictions = [{"source": r.source, "prediction": r.output} for r in results]
    export(run.model, run.vocabs, task=run.task, student_id=STUDENT_ID, out=bundle, predictions=predictions,
           device=run.device, trained_with=run.layer_sha256, overwrite=True)   # a fresh export replaces the last one
    print(f"wrote {bundle.resolve()} ({bundle.stat().st_size / 1e6:.1f} MB)")
    # The autograder's own check: the same validation and sandbox as grading, scored on the public dev set.
    check = check_bundle(bundle, task=run.task)
    print(f"check ({check['task']}): {check['status']} {check['message']}".rstrip())
    for line in check["lines"] if check["sandbox_seconds"] is not None else []:
        print(f"  {line['points']:5g} / {line['max_points']:<4g} {line['label']}: {line['shown']}")
    print(f"{check['score']:g} / {check['max_score']:g} points on the public dev set "
          "(your grade comes from a hidden test set)")

# %% [markdown]
# ## Questions (answer in a few sentences each, in your report)
#
# 1. Train once with `NameTransliterationConfig(score="additive", seed=SEED)`, into a folder of its own
#    (`train(config, out_dir="runs/additive")`, so that `runs/names` keeps the model you hand in). Which
#    score does better on the `unseen` stratum, and which trains faster?
# 2. Set `value_dim` to 16 and then to 256 (each run in a folder of its own too). What happens to
#    accuracy, and what does that say about how much the decoder reads through attention?
# 3. In the heatmap of a wrong name, where did the model look when it went wrong?
