"""Registry entries of the nhsvm paper (being written in this restructuring)."""

METHODS = ()
