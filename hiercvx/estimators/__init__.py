"""scikit-learn classifiers, one per method; ``solver="fast" | "reference"``."""
