"""asv benchmarks for cubepy (see asv.conf.json; run with `make bench`).

Every benchmark class says in its docstring what it measures. The kernels live in
``cpu_kernels`` so that ``bench/cpu_bench.py`` measures exactly the same code.
"""
