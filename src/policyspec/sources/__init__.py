"""What the engines send a policy, below the engines: caller actions drawn
from the model state (``action_source``; with requests, ``request_source``;
sizes, ``sizes``; clock steps, ``clock_steps``), and the fast engine's
driver that plays them against a policy and an inline oracle
(``fast_driver``, ``oracle``)."""
