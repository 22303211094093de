"""Compatibility layer: legacy block variants and recomputed indexes for blocks without one.

The foundation layer reads Avro content versions 1-3 directly (their layout is identical);
this package grows the index recomputation for old blocks (spec/index.md, later issue).
"""
