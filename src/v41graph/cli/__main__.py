"""``python -m v41graph.cli``."""

from .main import script

if __name__ == "__main__":
    script()
