"""scikit-learn classifiers, one per method; ``solver="fast" | "reference"``."""

from .boosting import AdaBoostMH
from .perceptron import HierarchicalPerceptron
from .svm import HierarchicalSVC, MulticlassSVC

__all__ = ["HierarchicalSVC", "MulticlassSVC", "HierarchicalPerceptron", "AdaBoostMH"]
