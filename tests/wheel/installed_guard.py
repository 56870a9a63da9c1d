"""pytest plugin for ``make test-pythons``: the run tests the installed wheel or stops.

Loaded with ``-p installed_guard`` (tests/wheel on PYTHONPATH) in the controller and in
every pytest-xdist worker; a ``tfrecord_lite`` imported from anywhere but the venv's
site-packages (a source tree on sys.path) is a usage error, so nothing runs.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest


def _installed_file() -> Path:
    import tfrecord_lite

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    file = Path(tfrecord_lite.__file__ or "").resolve()
    if not file.is_relative_to(site):
        raise pytest.UsageError(
            f"tfrecord_lite comes from {file}, not the installed wheel in {site}"
        )
    return file


def pytest_configure(config: pytest.Config) -> None:
    _installed_file()


def pytest_report_header(config: pytest.Config) -> str:
    import tfrecord_lite

    return f"tfrecord_lite {tfrecord_lite.__version__} from {_installed_file().parent}"
