"""Lab 1: date generation with a one-to-many character RNN (teacher forcing vs. sampling)."""
