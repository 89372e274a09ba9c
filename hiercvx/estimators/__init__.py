"""scikit-learn classifiers, one per method; ``solver="fast" | "reference"``."""

from .boosting import AdaBoostMH
from .nhsvm import NormalizedHierarchicalSVC, PathWeights, SharedNormSVC
from .node_ridge import NodeKernelRidge
from .orthogonal import OrthogonalTransferSVC
from .perceptron import HierarchicalPerceptron
from .sibling import (HierarchicalPsiClassifier, SequentialHierarchicalSVC, SiblingMarginSVC,
                      paper_sigma)
from .svm import HierarchicalSVC, MulticlassSVC
from .topdown import TopDownSVC
from .tuning import HoldoutTuning, tune_on_holdout, wang_C_grid

__all__ = ["HierarchicalSVC", "MulticlassSVC", "OrthogonalTransferSVC",
           "NormalizedHierarchicalSVC", "SharedNormSVC", "PathWeights", "HierarchicalPerceptron",
           "SiblingMarginSVC", "HierarchicalPsiClassifier", "SequentialHierarchicalSVC", "paper_sigma",
           "tune_on_holdout", "wang_C_grid", "HoldoutTuning",
           "TopDownSVC", "AdaBoostMH", "NodeKernelRidge"]
