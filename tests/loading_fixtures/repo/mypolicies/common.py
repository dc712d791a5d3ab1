"""Helpers shared by the package's policies."""


def eligible(blocks, protected):
    return [(k, b) for k, b in blocks.items() if b.ref_cnt == 0 and k not in protected]
