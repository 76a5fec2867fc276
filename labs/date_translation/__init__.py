"""Lab 2: human-readable dates to ISO 8601 with an encoder-decoder and additive attention."""
