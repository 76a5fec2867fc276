"""Homework 3.1: Thai names to English names with key-value attention."""
