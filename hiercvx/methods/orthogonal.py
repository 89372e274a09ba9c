"""Registry entries of the orthogonal paper (being written in this restructuring)."""

METHODS = ()
