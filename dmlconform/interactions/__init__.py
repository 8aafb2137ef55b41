"""Interaction coverage: the features that choose an implementation's path, per operator, and which combinations of
their values a set of cases exercises.

A model (one module per operator) reads a case — its parameters and input arrays, plain data — into *sites*: one
assignment of a value to every feature, per place the operator works on (an element, an axis, a pooling window,
an output coordinate). A pair of feature values is covered when some site of some valid case holds both. Every
model also knows its *universe*: every site some valid case can have, so that the pairs no case can exercise are
not counted as missing. `coverage.measure` turns sites into shares and missing combinations; `selection` picks,
from a pool of drawn candidates, a small set that covers every possible pair (the generator's pairwise families).
"""
