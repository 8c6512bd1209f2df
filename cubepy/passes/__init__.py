"""IR → IR transforms, one per file; ``pipeline.py`` lists their order."""

from .pipeline import optimize

__all__ = ["optimize"]
