"""The kernel library: burn's ops, written only in cubepy.

Every launcher takes a ``layout.Context`` (the target and an allocator) and ``layout.View``
operands, and returns fresh contiguous views. Families: ``elementwise``, ``creation``,
``random``, ``reduce``, ``softmax``, ``norm``, ``matmul``, ``index``, ``sort``, ``conv``,
``pool``; ``mathlib`` holds the math the language lacks as builtins.
"""
