"""Registry entries of the sibling paper (being written in this restructuring)."""

METHODS = ()
