"""Analysis on top of the kernels and the measurements: the static ISA lab (``isa``: parsers;
``isa_hip``, ``isa_seed``, ``isa_triton``: offline compiles; ``isa_cli``: ``python -m mla isa``),
the roofline and the accuracy studies. Nothing here runs a kernel on a GPU."""
