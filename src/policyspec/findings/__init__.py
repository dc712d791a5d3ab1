"""From the engines' findings to the failures a report shows, above the
engines: each finding's shortest witness (``witness.minimise``, replays
with the manager's bookkeeping: ``manager_replay``, and at smaller
capacities: ``smaller``), the requirement to blame and its message for
that trace (``finish``, the single entry point)."""
