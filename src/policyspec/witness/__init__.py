"""A failing trace as a witness, below the engines: replaying it
(``reproduce``), shrinking it (``shrink``, ``minimise``), naming the call
to blame for an order difference (``explain``) and telling it as words and
as Python (``render``, ``steps``)."""
