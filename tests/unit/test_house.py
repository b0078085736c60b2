"""The house rules that keep the crawl loop walkable (README "Where things live").

- imports run one way: pipelines -> transforms -> strategies, schemas; nothing imports tests
  or benchmarks; no cycle between the stage packages of transforms/;
- in each stage package the Beam step is `step.py`; every other module is plain Python that
  imports with apache_beam unimportable (tableio reads files through Beam's FileSystems, so
  it is the table-I/O exception);
- no module over ~400 lines.
"""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("pipelines", "transforms", "strategies", "schemas")
# what each top-level package may import (besides itself)
MAY_IMPORT = {
    "pipelines": {"transforms", "strategies", "schemas"},
    "transforms": {"strategies", "schemas"},
    "strategies": {"schemas"},
    "schemas": set(),
}
FIRST_PARTY = set(PACKAGES) | {"tests", "benchmarks"}
MAX_LINES = 400


def _modules():
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            yield path, ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def _imports(path):
    """First-party modules a file imports (at any depth: lazy imports count too)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
            out.extend(f"{node.module}.{a.name}" for a in node.names)
    return [m for m in out if m.split(".")[0] in FIRST_PARTY]


def test_imports_run_one_way():
    wrong = []
    for path, mod in _modules():
        top = mod.split(".")[0]
        for imported in _imports(path):
            other = imported.split(".")[0]
            if other != top and other not in MAY_IMPORT[top]:
                wrong.append(f"{mod} imports {imported}")
    assert wrong == []


def test_no_import_cycle_between_the_stage_packages():
    stage = lambda m: ".".join(m.split(".")[:2])   # noqa: E731  transforms.<stage>
    edges = {}
    for path, mod in _modules():
        if not mod.startswith("transforms."):
            continue
        for imported in _imports(path):
            if imported.startswith("transforms.") and stage(imported) != stage(mod):
                edges.setdefault(stage(mod), set()).add(stage(imported))

    def reaches(a, b, seen=()):
        return any(n == b or (n not in seen and reaches(n, b, seen + (n,))) for n in edges.get(a, ()))

    assert [a for a in edges if reaches(a, a)] == [], edges


def beam_free_modules():
    for path, mod in _modules():
        parts = mod.split(".")
        if parts[0] == "pipelines" or parts[-1] == "step" or parts[:2] == ["transforms", "tableio"]:
            continue
        yield mod


def test_every_module_but_the_steps_imports_without_apache_beam():
    mods = list(beam_free_modules())
    assert "transforms.page.fate" in mods and "strategies.graph" in mods
    code = (
        "import importlib, importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'apache_beam' or name.startswith('apache_beam.'):\n"
        "            raise ImportError('apache_beam is blocked in this test')\n"
        "sys.meta_path.insert(0, Block())\n"
        "bad = []\n"
        f"for m in {mods!r}:\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except ImportError as e:\n"
        "        bad.append(f'{m}: {e}')\n"
        "print('\\n'.join(bad))\n"
        "sys.exit(1 if bad else 0)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_beam_block_of_the_test_above_can_fail():
    """A Beam step module must fail under the same block (else the test proves nothing)."""
    code = ("import importlib.abc, sys\n"
            "class Block(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'apache_beam':\n"
            "            raise ImportError('blocked')\n"
            "sys.meta_path.insert(0, Block())\n"
            "import transforms.page.step\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "blocked" in proc.stderr


@pytest.mark.parametrize("pkg", PACKAGES)
def test_no_module_over_about_400_lines(pkg):
    long = {str(p.relative_to(REPO)): n for p in (REPO / pkg).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
