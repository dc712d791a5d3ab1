"""Serving traces (request logs of LLM serving, such as Mooncake's) as the
traffic of vLLM's offloading manager (spec/traffic.md): reading them as a
stream (``reader``), the bundled synthetic sample (``sample``), playing them
as manager calls (``player``, ``ports``), and ``policyspec simulate``'s
measurements (``simulate``, ``measure``, ``curve``, ``simulate_report``).
The ``trace`` engine of ``policyspec check`` (``engines.trace``) plays them
under the lockstep model."""
