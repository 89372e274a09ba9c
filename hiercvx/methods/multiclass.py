"""Registry entries of the multiclass paper (being written in this restructuring)."""

METHODS = ()
