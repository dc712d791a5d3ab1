"""What the engines send a policy, below the engines: caller actions drawn
from the model state (``action_source``; with requests, ``request_source``;
sizes, ``sizes``; clock steps, ``clock_steps``). The fast engine's driver and its
inline oracle, which play and judge rather than draw, live with that
engine (``engines.fast_driver``, ``engines.fast_oracle``)."""
