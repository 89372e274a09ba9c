"""scikit-learn classifiers, one per method; ``solver="fast" | "reference"``."""

from .boosting import AdaBoostMH
from .nhsvm import NormalizedHierarchicalSVC, SharedNormSVC
from .orthogonal import OrthogonalTransferSVC
from .perceptron import HierarchicalPerceptron
from .svm import HierarchicalSVC, MulticlassSVC

__all__ = ["HierarchicalSVC", "MulticlassSVC", "OrthogonalTransferSVC",
           "NormalizedHierarchicalSVC", "SharedNormSVC", "HierarchicalPerceptron",
           "AdaBoostMH"]
