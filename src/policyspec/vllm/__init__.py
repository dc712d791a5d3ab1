"""Everything in policyspec that imitates vLLM at run time: the stand-in
``vllm`` modules a policy file imports when vLLM is not installed
(``standins``), the offloading manager's emulation (``manager``), the
request traffic its scheduler sends (``traffic``), the recorder of a
manager's calls (``recorder``) and ``drift``. What is particular to each
release is data in ``policyspec.releases``, one folder each. Nothing here is
imported at package import: the stand-ins are installed only while a check
runs (``standins.installed``).
"""
