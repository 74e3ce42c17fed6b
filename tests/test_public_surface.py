"""The top level is the everyday path: at most ~25 public names from one list, nothing private or
imported in ``dir()``; every name it exported before issue 23 is reachable from its documented
home and, for old code, from the top level with a DeprecationWarning."""

from __future__ import annotations

import importlib
import warnings

import pytest

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


@pytest.mark.parametrize("module, name", [(m, n) for m, ns in v41graph._MOVED.items() for n in ns])
def test_a_moved_name_lives_in_its_documented_home_and_the_old_import_warns(module, name):
    home = importlib.import_module(f"v41graph.{module}")
    assert name in getattr(home, "__all__", dir(home)) or hasattr(home, name)
    with pytest.warns(DeprecationWarning, match=f"import it from v41graph.{module}"):
        old = getattr(v41graph, name)
    assert old is getattr(home, name)
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
