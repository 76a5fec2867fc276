"""Pieces the labs share, so that each is written once.

- data: ``vocab`` (character vocabularies), ``pipeline`` (tf.data batches, teacher forcing),
  ``isodate``, ``validation``, ``seeding``;
- models: ``config`` (what every lab's configuration shares), ``seq2seq`` (the encoder-decoder
  contract: shared encoder, wiring, encode and one step), ``decoding`` (the decoding engine:
  greedy, sampling, beam search, in batches), ``training`` (compile, fit, run folders),
  ``metrics``, ``plots``, ``fonts``;
- the kit's edges: ``arguments`` (command-line types), ``errors``, ``files`` (atomic writes),
  ``paths``, ``quiet`` (TensorFlow's start-up lines), ``submission`` (export, check) and
  ``layer_audit`` (what a custom layer file may import).
"""
