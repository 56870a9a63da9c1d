"""The scale-out suite (make test-cluster); a package so its conftest does not shadow tests/conftest.py."""
