"""What one engine run is, below the engines: the context it gets
(``context``: the subject, the profile, its amount of work and the wall-time
cap), what it returns (``result``: findings in requirement ids, counts) and
the budgets that size the work (``budget``).

Budgets are amounts of work, never time: the same target, seed and budget
make the same calls on any machine, at any load, with any ``--jobs``; the
wall-time cap (``--time-limit``) only stops a run early, which then ends
incomplete, never in a PASS.
"""
