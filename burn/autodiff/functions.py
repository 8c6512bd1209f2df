"""burn's tensor functions in one namespace (``bt.exp``, ``bt.where``, ...) for the backward
rules, which compute with them on the inner backend; ``burn`` itself is still importing when
this package loads."""

from types import SimpleNamespace

from ..tensor import family_functions

bt = SimpleNamespace(**family_functions())
