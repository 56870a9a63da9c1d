"""The engine suite (``make test-engines``): a package, so its ``conftest`` does not shadow
``tests/conftest.py`` (``from conftest import ...``) when the whole tree is collected."""
