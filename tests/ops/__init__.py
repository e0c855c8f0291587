"""The operator suite (a package, so its conftest and modules do not shadow tests/python's)."""
