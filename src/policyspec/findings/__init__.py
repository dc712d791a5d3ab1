"""From the engines' findings to the failures a report shows, above the
engines: an engine's exact calls replayed on a fresh policy (``confirm``);
each finding's shortest witness (``witness.minimise``; replays with the
manager's bookkeeping: ``manager_replay``; at a smaller capacity, whichever
engine found it: ``smaller``, which the fast engine's long runs also call;
a size engine's calls cut down with counts of their own: ``sized``); the
requirement to blame and its message for that trace (``finish``, the single
entry point); and a finding whose calls do not break it again on a fresh
policy, kept with both runs (``unreproduced``)."""
