"""Reproducible performance measurements of policyspec: ``python -m benchmarks``.

Not tests: nothing here asserts a speed. Each section measures the things
it compares side by side in one process, several times, and prints medians
(see README.md for what each number means and the targets).
"""
