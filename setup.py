"""Build configuration beyond pyproject.toml: the sheets ship inside the package.

The teaching sheets live in ``formulations/`` at the top of the repository (where readers
of the source find them); the wheel installs them as ``hiercvx/sheets/*.md`` by mapping that
directory onto the data-only package ``hiercvx.sheets``, so ``hiercvx methods`` can name
them after ``pip install``.  Everything else is in ``pyproject.toml``.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["hiercvx", "hiercvx.*"]) + ["hiercvx.sheets"],
    package_dir={"hiercvx.sheets": "formulations"},
    package_data={"hiercvx.sheets": ["*.md"]},
)
