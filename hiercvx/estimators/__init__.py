"""scikit-learn classifiers, one per method; ``solver="fast" | "reference"``."""

from .svm import HierarchicalSVC, MulticlassSVC

__all__ = ["HierarchicalSVC", "MulticlassSVC"]
