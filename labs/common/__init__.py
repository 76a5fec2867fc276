"""Pieces every lab uses: vocabularies, file writing, errors, dates, seeded randomness."""
