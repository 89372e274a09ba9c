"""Registry entries of the hsvm paper (being written in this restructuring)."""

METHODS = ()
