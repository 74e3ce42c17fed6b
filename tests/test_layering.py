"""The package is layered (docs/architecture.md): model ← workload ← ir ← costs ← passes ← analysis ← render ← cli.

Every module under src/v41graph is parsed (not imported) and every import it makes — at module
level, inside functions and under ``TYPE_CHECKING`` alike — is resolved to a v41graph module. A
lower layer never imports a higher one, no two modules import each other in a circle, no module
is over 300 lines, and a renderer never compiles: it imports neither the passes, nor lowering,
nor the package's ``compile``; it takes results.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import networkx as nx
import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "v41graph"
LAYERS = ("model", "workload", "ir", "costs", "passes", "analysis", "render", "cli")
#: beneath every layer; import nothing of the package
SHARED = ("errors", "symbols", "algebra", "chance", "version", "session", "reuse", "structural", "collector",
          "difference")
#: what a renderer may not import: whatever compiles (it is handed the results instead)
COMPILERS = ("passes", "ir.lower", "")
#: upward imports kept by name, each with its reason (none now)
ALLOWED_UPWARD: set[str] = set()  # none: a renderer is handed the analysis' result


def _modules() -> dict[str, Path]:
    out = {}
    for f in sorted(SRC.rglob("*.py")):
        parts = list(f.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The v41graph modules that ``name`` imports (``""`` is the package itself)."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if name else []
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_pkg else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module == "v41graph" or node.module.startswith("v41graph.")):
                target = node.module[len("v41graph."):] if node.module != "v41graph" else ""
            else:
                continue
            # ``from pkg import sub`` imports the submodule when there is one
            subs = [f"{target}.{a.name}".lstrip(".") for a in node.names if f"{target}.{a.name}".lstrip(".") in MODULES]
            found.update(subs or [target])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("v41graph."):
                    found.add(a.name[len("v41graph."):])
    return {t for t in found if t != name}


#: the public facades (docs/architecture.md, "Public surface"): like ``__init__`` they may import every
#: layer; no layer imports them (their layer is None, and an import of None counts as upward)
FACADES = ("extend", "ask")


def _layer(module: str) -> int | None:
    top = module.split(".")[0]
    if top in FACADES:
        return None
    if top in SHARED:
        return -1
    return LAYERS.index(top) if top in LAYERS else None


def test_every_module_imports():
    for name in MODULES:
        importlib.import_module("v41graph" + (f".{name}" if name else ""))


def test_no_import_runs_upward():
    upward = []
    for name, path in MODULES.items():
        mine = _layer(name)
        if mine is None:  # the package's __init__ (the public API) may import every layer
            continue
        for target in _imports(name, path):
            theirs = _layer(target)
            if theirs is None or theirs > mine:
                upward.append(f"{name} imports {target or 'v41graph'}")
    assert sorted(set(upward) - ALLOWED_UPWARD) == []


def _compiles(name: str, path: Path) -> list[str]:
    return sorted(t or "v41graph" for t in _imports(name, path)
                  if any(t == c or (c and t.startswith(c + ".")) for c in COMPILERS))


def test_a_renderer_never_compiles():
    assert {n: c for n, p in MODULES.items() if n.startswith("render.") and (c := _compiles(n, p))} == {}


def test_the_check_catches_a_renderer_that_compiles(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("from ..passes import schedule\nfrom ..ir.lower.blocks import lower\nfrom .. import compile\n")
    assert _compiles("render.x", f) == ["ir.lower.blocks", "passes", "v41graph"]


def test_no_import_cycle():
    g = nx.DiGraph()
    for name, path in MODULES.items():
        for target in _imports(name, path):
            if target in MODULES and not name.startswith(target + ".") and target != "":
                g.add_edge(name, target)
    assert list(nx.simple_cycles(g)) == []


def _too_long(paths) -> dict[str, int]:
    return {str(p): c for p in paths if (c := len(p.read_text().splitlines())) > 300}


def test_modules_are_small():
    assert _too_long(MODULES.values()) == {}


def test_the_check_catches_a_long_module(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("x = 1\n" * 301)
    assert _too_long([f]) == {str(f): 301}


@pytest.mark.parametrize("bad, found", [
    ("from ..passes import compile_graph\n", "model.x imports passes"),
    ("from v41graph.cli.main import main\n", "model.x imports cli.main"),
])
def test_the_check_catches_an_upward_import(tmp_path, bad, found):
    f = tmp_path / "x.py"
    f.write_text(bad)
    targets = _imports("model.x", f)
    assert [f"model.x imports {t}" for t in targets if _layer(t) > _layer("model.x")] == [found]


#: module names still shared by two modules outside cli/ (whose modules are named for their commands);
#: each pair is one idea at two levels of one layer or two layers. A new shared name fails the test.
SHARED_NAMES = {"modules", "layout", "tiers", "registry", "display", "base", "attention", "blocks"}


def test_module_names_are_unique_across_layers():
    seen: dict[str, list[str]] = {}
    for name in MODULES:
        parts = name.split(".")
        if parts and parts[0] != "cli" and name not in ("", *FACADES) and name.split(".")[-1] not in LAYERS:
            seen.setdefault(parts[-1], []).append(name)
    assert {n for n, where in seen.items() if len(where) > 1} - SHARED_NAMES == set()


def test_rooms_hold_at_most_twenty_modules_and_say_what_lives_there():
    """Issue 36, item 6: a folder past 20 modules is rooms waiting to happen; every room's ``__init__`` opens
    with one line saying what lives there."""
    root = SRC
    crowded, silent = {}, []
    for init in sorted(root.rglob("__init__.py")):
        folder = init.parent
        count = len(list(folder.glob("*.py")))
        if count > 20:
            crowded[folder.relative_to(root).as_posix()] = count
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        if not doc or not doc.splitlines()[0].strip():
            silent.append(folder.relative_to(root).as_posix() or ".")
    assert crowded == {}
    assert silent == []
