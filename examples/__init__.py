"""Short runnable programs to copy from; their kernels are importable (``examples.matmul``)."""
