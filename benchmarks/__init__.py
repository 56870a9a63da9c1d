"""Benchmarks of tfrecord_lite beside TensorFlow, the ``tfrecord`` package and a naive loop.

``python -m benchmarks.run`` (``make bench``) measures tfrecord_lite alone;
``--peers`` (``make bench-peers``, in ``.venv-bench``) adds the others. Results
go to ``benchmarks/RESULTS.md`` and ``benchmarks/results.json``. Speed is measured
here and never asserted in the test suite.

=================  ============================================================
``data``           deterministic data files (``benchmarks/_data/``) and feature specs
``tasks``          one function per (task, implementation); the per-run child process
``run``            the runner: alternating subprocess runs, medians, the report
=================  ============================================================
"""
