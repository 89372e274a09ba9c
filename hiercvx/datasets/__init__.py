"""Data for hierarchical classification: loaders of real formats and the papers' generators.

Loaders (each returns a :class:`Dataset`; errors are
:class:`~hiercvx.exceptions.DataFormatError`, a ValueError, naming the file and the line;
numbers are parsed strictly, ids keep their spelling; gzip files, named ``*.gz`` or
recognised by their first bytes, are decompressed up to a cap of 2 GiB, set with the
environment variable ``HIERCVX_MAX_GZ_BYTES``):

- :func:`load_arff`: Clus-HMC ARFF (FunCat-style path trees, GO-style DAGs, ``?`` missing
  values, ``@``-separated multi-labels);
- :func:`load_libsvm`: LIBSVM / SVMlight multi-label files, optionally tied to a hierarchy;
- :func:`load_lshtc_hierarchy`: LSHTC ``parent child`` hierarchy files (-> Hierarchy);
- :func:`labels_from_paths`: a column of path strings -> (Hierarchy, labels);
- :func:`load`: any of the above by extension / content; :func:`describe`: a text summary;
- :func:`hmc_data_dir`: the folder of the Clus-HMC files (``$HIERCVX_HMC_DATA``, else
  ``shared/data/hmc`` beside a checkout, else ``~/hiercvx_data/hmc``).

Generators (:mod:`hiercvx.datasets.synthetic`), each with ``random_state`` and, where the
paper defines one, a Bayes rule: :func:`make_cai_synthetic` (Cai thesis 7.1.1),
:func:`make_nhsvm_balanced` and :func:`make_nhsvm_unbalanced` (NHSVM 8.1),
:func:`make_wang_example1`, :func:`make_wang_example2`, :func:`make_wang_example3`
(Wang, Shen & Pan 4.1).
"""

from ._common import hmc_data_dir
from .arff import load_arff
from .formats import Dataset, describe, labels_from_paths, load, load_libsvm, load_lshtc_hierarchy
from .synthetic import (
    make_cai_synthetic,
    make_nhsvm_balanced,
    make_nhsvm_unbalanced,
    make_wang_example1,
    make_wang_example2,
    make_wang_example3,
)

__all__ = [
    "Dataset",
    "load",
    "describe",
    "load_arff",
    "load_libsvm",
    "load_lshtc_hierarchy",
    "labels_from_paths",
    "hmc_data_dir",
    "make_cai_synthetic",
    "make_nhsvm_balanced",
    "make_nhsvm_unbalanced",
    "make_wang_example1",
    "make_wang_example2",
    "make_wang_example3",
]
