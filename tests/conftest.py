"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest

from v41graph import load_model


@pytest.fixture(scope="session")
def flash():
    """The embedded DeepSeek-V4.1-Flash model."""
    return load_model()


@pytest.fixture(scope="session")
def v4_flash():
    """The DeepSeek-V4-Flash baseline."""
    return load_model("deepseek-v4-flash")
