"""The pytest plugin's module imports pytest and hiercvx's core only (CVXPY, scikit-learn and the
registry come with the first fixture that needs them: every pytest run in an environment with
hiercvx installed loads the plugin), and ``parametrize_with_references`` names each test by the seed its problem is
generated at, ``--hiercvx-seed`` included."""

from __future__ import annotations

import subprocess
import sys
import textwrap

LAZY = ("hiercvx.methods", "hiercvx.testing.check", "hiercvx.testing.problems", "hypothesis",
        "cvxpy", "sklearn", "hiercvx.reference")


def test_the_plugin_module_does_not_import_the_registry():
    code = ("import sys, hiercvx.testing.plugin as p; "
            f"print([m for m in {LAZY!r} if m in sys.modules]); print(p.SHAPES)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True)
    assert run.stdout.splitlines()[0] == "[]", run.stdout


def test_ids_carry_the_effective_seed(tmp_path):
    (tmp_path / "test_ids.py").write_text(textwrap.dedent('''
        from hiercvx.testing.plugin import parametrize_with_references

        @parametrize_with_references("multiclass", structures=["flat"], seeds=(0, 1), n=12)
        def test_p(reference_problem):
            assert reference_problem.seed in (5, 6)
    '''))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                          "hiercvx.testing.plugin", "--hiercvx-seed", "5", "-rA", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "seed5" in run.stdout and "seed6" in run.stdout and "seed0]" not in run.stdout, \
        run.stdout[-2000:]


def test_every_public_module_is_reached_as_an_attribute():
    """``import hiercvx`` imports its core only; each public module of the package is an
    attribute on first use (``hc.reference``, ``hc.bias``), as the eager imports made them."""
    import pkgutil

    import hiercvx as hc
    public = {m.name for m in pkgutil.iter_modules(hc.__path__) if not m.name.startswith("_")}
    assert public <= set(dir(hc))
    for name in sorted(public):
        assert getattr(hc, name).__name__ == f"hiercvx.{name}"
