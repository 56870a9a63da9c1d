"""Which engine a batch goes through: one rule for Examples, SequenceExamples and the
compiled writers (:func:`choose`).

The ``engine`` setting (``TFRECORD_LITE_ENGINE``, or ``tfr.options(engine=...)`` in a
block, read from :mod:`tfrecord_lite._settings` at each batch) is ``auto`` (the
default), ``numpy`` or ``jit`` (without numba installed: ``ImportError``). A forced
engine is used as it is. ``auto`` takes ``jit`` where numba is installed, for
batches of :data:`JIT_MIN_RECORDS` records or more, once the kernels the batch runs
are loaded (until then the batch goes through ``numpy`` while they load in the
background: no batch waits for a compile), except where the NumPy engine has the
faster path for the batch: Example records that mostly follow one layout (one
writer's fixed layout: MNIST-like images), which its equal-layout path cuts into
whole columns (:func:`~._numpy_layout.shares_layout`; MNIST-like parse: 2.09 M
records/s there against 1.56 M compiled, same run). Records of one length in a
different key order each (tf.Transform output) or of many lengths (values missing,
varints of every width) go to ``jit``: length is not layout.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Optional

import numpy as np

from ... import _settings
from ..._record import record_lengths
from ._framing import install as install_framing
from ._kernels import EXAMPLE_MODULES, jit_available, loaded, warm
from ._numpy_layout import shares_layout

__all__ = ["EXAMPLE_KERNELS", "SEQUENCE_KERNELS", "choose"]

#: The engine's environment variable (read by :mod:`tfrecord_lite._settings`).
ENGINE_VARIABLE = _settings.SETTINGS["engine"].variable
#: Batches of fewer records take the ``numpy`` engine when no engine is forced.
JIT_MIN_RECORDS = 64
#: Whether ``auto`` picks ``jit`` (for batches of :data:`JIT_MIN_RECORDS` or more)
#: where numba is installed (taxi-like records: 2-3x the NumPy engine's rate).
AUTO_PICKS_JIT = True
#: The kernel modules an Example batch runs.
EXAMPLE_KERNELS = EXAMPLE_MODULES
#: The kernel modules a SequenceExample batch runs.
SEQUENCE_KERNELS = (*EXAMPLE_MODULES, "_jit_sequences")


def choose(
    n: int,
    kernels: tuple[str, ...] = EXAMPLE_KERNELS,
    *,
    records: Optional[Sequence[bytes]] = None,
    lengths: Optional[np.ndarray] = None,
) -> str:
    """The engine for a batch of ``n`` records: ``"jit"`` or ``"numpy"``.

    ``kernels``: the kernel modules the caller runs (``auto`` picks ``jit`` only once
    they are loaded, and starts loading them in the background, :func:`~._kernels.warm`;
    a forced ``jit`` loads them first, waiting, where they are run). ``records``: an
    Example batch, looked at for one shared layout (``auto`` leaves it to the NumPy
    engine's equal-layout path); ``lengths``: their lengths, where the caller has them.
    The setting is read here, at each call (a bad ``TFRECORD_LITE_ENGINE`` is a
    ``ValueError`` that names it)."""
    install_framing()  # (the record scan's compiled loop, once the kernels are loaded)
    forced = _settings.engine()
    if forced == "jit":
        if importlib.util.find_spec("numba") is None:
            raise ImportError(
                "the jit engine (TFRECORD_LITE_ENGINE=jit or tfr.options(engine='jit')) "
                "needs numba: pip install 'tfrecord-lite-np[jit]'"
            )
        return "jit"
    if forced != "auto":
        return "numpy"
    if not (AUTO_PICKS_JIT and n >= JIT_MIN_RECORDS and jit_available()):
        return "numpy"
    if not loaded(*kernels):
        warm(*kernels)
        return "numpy"
    if records is not None:
        if lengths is None:
            lengths = record_lengths(records)
        if shares_layout(records, lengths):
            return "numpy"
    return "jit"
