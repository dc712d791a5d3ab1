"""Everything in policyspec that imitates vLLM, in one place, so that
following a vLLM release is one package: the stand-in ``vllm`` modules a
policy file imports when vLLM is not installed (``standins``), the
offloading manager's emulation (``manager``), the request traffic its
scheduler sends (``traffic``) and the recorder of a manager's calls
(``recorder``), and the releases it follows, one folder each
(``releases``: what is particular to a release, as data the rest reads).

Nothing here is imported at package import: the stand-ins are installed
only for as long as a check runs (``standins.installed``).
"""
