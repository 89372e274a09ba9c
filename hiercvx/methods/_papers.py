"""The papers hiercvx implements: how the registry cites each, and its BibTeX entry.

Each registered method names its paper with :attr:`Paper.citation` (plus the chapters or
sections it takes) and carries :attr:`Paper.bibtex`, which ``hiercvx methods`` and
``hiercvx show`` print.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Paper", "CAI", "ZHOU", "CHOI", "WANG", "LU", "CRAMMER_SINGER", "PAPERS"]


class Paper(NamedTuple):
    """A source: its citation in words and its BibTeX entry."""

    key: str
    citation: str
    bibtex: str

    def cite(self, where: str = "") -> str:
        """The citation, followed by ``where`` (chapters, sections, equations) when given."""
        return f"{self.citation}, {where}" if where else self.citation


CAI = Paper(
    "cai2008multilabel",
    "Lijuan Cai, Multilabel Classification over Category Taxonomies, PhD thesis, "
    "Brown University, 2008",
    """@phdthesis{cai2008multilabel,
  author = {Lijuan Cai},
  title  = {Multilabel Classification over Category Taxonomies},
  school = {Brown University},
  year   = {2008}
}""")

ZHOU = Paper(
    "zhou2011hierarchical",
    "Dengyong Zhou, Lin Xiao, Mingrui Wu, Hierarchical Classification via Orthogonal Transfer, "
    "ICML 2011 (long version: Microsoft Research MSR-TR-2011-54)",
    """@inproceedings{zhou2011hierarchical,
  author    = {Dengyong Zhou and Lin Xiao and Mingrui Wu},
  title     = {Hierarchical Classification via Orthogonal Transfer},
  booktitle = {Proceedings of the 28th International Conference on Machine Learning (ICML)},
  pages     = {801--808},
  year      = {2011},
  note      = {Long version with proofs: Microsoft Research technical report MSR-TR-2011-54}
}""")

CHOI = Paper(
    "choi2016normalized",
    "Heejin Choi, Yutaka Sasaki, Nathan Srebro, Normalized Hierarchical SVM, "
    "arXiv:1508.02479, 2016",
    """@misc{choi2016normalized,
  author        = {Heejin Choi and Yutaka Sasaki and Nathan Srebro},
  title         = {Normalized Hierarchical {SVM}},
  year          = {2016},
  eprint        = {1508.02479},
  archivePrefix = {arXiv}
}""")

WANG = Paper(
    "wang2011large",
    "Huixin Wang, Xiaotong Shen, Wei Pan, Large Margin Hierarchical Classification with "
    "Mutually Exclusive Class Membership, JMLR 12, 2011",
    """@article{wang2011large,
  author  = {Huixin Wang and Xiaotong Shen and Wei Pan},
  title   = {Large Margin Hierarchical Classification with Mutually Exclusive Class Membership},
  journal = {Journal of Machine Learning Research},
  volume  = {12},
  pages   = {2721--2748},
  year    = {2011}
}""")

LU = Paper(
    "lu2017ee6550",
    "Chung-Chin Lu, EE6550 Machine Learning, Lecture 7: Multi-Class Classification, "
    "National Tsing Hua University, 2017",
    """@misc{lu2017ee6550,
  author       = {Chung-Chin Lu},
  title        = {{EE6550} Machine Learning, Lecture 7: Multi-Class Classification},
  howpublished = {Lecture notes, Department of Electrical Engineering, National Tsing Hua University},
  year         = {2017}
}""")

CRAMMER_SINGER = Paper(
    "crammer2001algorithmic",
    "Koby Crammer, Yoram Singer, On the Algorithmic Implementation of Multiclass Kernel-based "
    "Vector Machines, JMLR 2, 2001",
    """@article{crammer2001algorithmic,
  author  = {Koby Crammer and Yoram Singer},
  title   = {On the Algorithmic Implementation of Multiclass Kernel-based Vector Machines},
  journal = {Journal of Machine Learning Research},
  volume  = {2},
  pages   = {265--292},
  year    = {2001}
}""")

#: every source, by BibTeX key
PAPERS = {p.key: p for p in (CAI, ZHOU, CHOI, WANG, LU, CRAMMER_SINGER)}
