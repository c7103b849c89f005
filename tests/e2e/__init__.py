"""End-to-end suite (a package, so its conftest never shadows tests/conftest.py)."""
