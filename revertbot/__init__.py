"""revertbot: validate reverts in GPU/ML projects."""

__version__ = "0.1.0"
