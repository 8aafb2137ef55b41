"""Judging outputs: ULP distances, tolerance rules and the comparator."""
