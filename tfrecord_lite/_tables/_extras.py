"""The optional extras, imported when first used, with the line that installs them.

The integrations import without their engine installed (``import
tfrecord_lite.ray`` works without Ray); each engine is imported on first use
through :func:`require`, whose error names the extra to install.
"""

from __future__ import annotations

import sys
from typing import Any


def require(module: str, who: str, what: str, extra: str) -> Any:
    """Import ``module``, or raise an ``ImportError`` saying ``who needs what: pip install ...``."""
    try:
        __import__(module)  # the import statement's hook, as a plain ``import`` would
        return sys.modules[module]
    except ImportError:
        raise ImportError(f'{who} needs {what}: pip install "tfrecord-lite-np[{extra}]"') from None


def require_pyarrow(who: str = "tfrecord_lite.arrow", extra: str = "arrow") -> Any:
    """The ``pyarrow`` module (the error names ``who`` and the ``extra`` that installs it)."""
    return require("pyarrow", who, "pyarrow", extra)


def require_ray_data() -> Any:
    """The ``ray.data`` module (``tfrecord-lite-np[ray]``)."""
    return require("ray.data", "tfrecord_lite.ray", "Ray Data", "ray")


def require_dask_dataframe() -> Any:
    """The ``dask.dataframe`` module (``tfrecord-lite-np[dask]``)."""
    return require("dask.dataframe", "tfrecord_lite.dask", "Dask", "dask")
