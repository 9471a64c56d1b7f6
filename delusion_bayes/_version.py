"""The package version (one place; ``delusion_bayes.__version__`` re-exports it)."""

__version__ = "0.1.0"
