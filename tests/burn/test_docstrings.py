"""The docstring examples of burn's gradient, data, fusion, layer, ONNX, optimizer, record, tensor
and training modules run as written (on the Cpu backend), so the examples a user copies stay
true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import burn

PACKAGES = ("burn.autodiff", "burn.data", "burn.fusion", "burn.nn", "burn.onnx", "burn.optim",
            "burn.record", "burn.tensor", "burn.train")
MODULES = [name for package in PACKAGES for name in (
    package, *(f"{package}.{info.name}"
               for info in pkgutil.iter_modules(importlib.import_module(package).__path__)))]


@pytest.mark.parametrize("name", MODULES)
def test_examples(name):
    previous = burn.default_backend()
    burn.set_default_backend("cpu")
    try:
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS,
                                 extraglobs={"burn": burn, "np": np})
    finally:
        burn.set_default_backend(previous)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
