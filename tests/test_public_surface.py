"""The top level is the everyday path: at most ~25 public names from one list, nothing private or
imported in ``dir()``; every name removed in issue 36 (CHANGELOG.md's table) lives in the home the
changelog names and is no longer served under its old name."""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest
from helpers import resolve_dotted

import v41graph
import v41graph.ask
import v41graph.extend


def test_dir_shows_only_public_names_and_few():
    names = dir(v41graph)
    assert names == sorted(v41graph.__all__)
    assert [n for n in names if n.startswith("_") and n != "__version__"] == []
    assert not {"TYPE_CHECKING", "annotations", "importlib"} & set(names)
    assert len(names) <= 25


def test_one_list_of_exports():
    listed = [n for names in v41graph._EXPORTS.values() for n in names]
    assert len(listed) == len(set(listed))
    assert v41graph.__all__ == ["__version__", *listed, "extend", "ask"]


CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"


def _removed() -> list[tuple[str, str]]:
    """(old, new) dotted names: the rows of CHANGELOG.md's table of removed names."""
    return re.findall(r"^\| `(v41graph[\w.]*)` \| `(v41graph[\w.]*)` \|$", CHANGELOG.read_text(encoding="utf-8"), re.M)


def _resolve(dotted: str):
    """The object a dotted name reads (tests/helpers.py)."""
    return resolve_dotted(dotted)


def test_the_changelog_lists_the_46_removed_names_once_each():
    rows = _removed()
    assert len(rows) == 46  # the count issue 36 gives: 44 top-level moves and 2 renames in v41graph.passes
    assert len({old for old, _ in rows}) == 46
    assert {old.rsplit(".", 1)[0] for old, _ in rows} == {"v41graph", "v41graph.passes"}


@pytest.mark.parametrize("old, new", _removed(), ids=[old for old, _ in _removed()])
def test_a_removed_name_raises_and_its_new_home_serves_it(old, new):
    module, name = old.rsplit(".", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on the way: the name is simply not there
        with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
            getattr(importlib.import_module(module), name)
    obj = _resolve(new)
    home, new_name = new.rsplit(".", 1)
    assert getattr(obj, "__name__", new_name) == new_name
    assert new_name in getattr(importlib.import_module(home), "__all__", [new_name])  # public where a list says so
    assert name not in dir(v41graph) and name not in v41graph.__all__


def test_the_named_submodules_list_what_they_export():
    for mod in (v41graph.extend, v41graph.ask):
        assert sorted(mod.__all__) == mod.__all__
        for name in mod.__all__:
            assert getattr(mod, name) is not None


def test_the_everyday_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in v41graph.__all__:
            getattr(v41graph, name)


def _moved_modules() -> list[tuple[str, str]]:
    """(old, new) modules under ``v41graph.``: the rows of CHANGELOG.md's table of moved modules."""
    return re.findall(r"^\| `((?!v41graph\.)[a-z]\w*(?:\.\w+)+)` \| `([a-z]\w*(?:\.\w+)+)` \|$",
                      CHANGELOG.read_text(encoding="utf-8"), re.M)


def test_every_moved_module_lives_where_the_changelog_says_and_not_where_it_was():
    moved = _moved_modules()
    assert len(moved) == len({old for old, _ in moved}) >= 50
    for old, new in moved:
        assert importlib.util.find_spec(f"v41graph.{new}") is not None, new
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"v41graph.{old}")
