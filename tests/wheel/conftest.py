"""tests/wheel/test_wheel.py runs only against the installed wheel (`make test-wheel` copies
it out of the tree and runs it there); in the tree's own suite it is not collected."""

collect_ignore = ["test_wheel.py"]
