"""Stand-in for the parts of torchvision the corpus's programs use (see ../README.md)."""

from . import datasets, models, transforms, utils

__all__ = ["datasets", "models", "transforms", "utils"]
