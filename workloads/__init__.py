"""Demo workloads, each runnable as ``python -m workloads.NAME``.

Every module here defines ``TITLE`` (one line: what it demonstrates), ``SOURCE`` (the
experiment it recreates, or ""), ``build_parser()`` returning its ``argparse`` parser, and
``main(argv=None) -> int``. Heavy frameworks (torch, TensorFlow, numba) are imported inside
``main`` or the functions it calls, never at module level, so listing the workloads and
showing their options stays instant. From devicewatch they import ``devicewatch.events`` only.
"""
