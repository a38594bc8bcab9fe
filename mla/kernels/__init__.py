"""Kernel families, one folder per language: ``triton`` (portable) and ``hip`` (gfx950).

Kernels never import the harness (mla.bench) or the backends."""
