"""The frames of one sequence of images (an RLDS episode's camera, a video) decoded on threads.

PNG and JPEG decoding (Pillow, simplejpeg) releases the GIL, so an episode of a hundred
frames decodes on all cores while its order is kept. One pool serves the process (at most
:data:`MAX_THREADS` threads, fewer with ``TFRECORD_LITE_THREADS``); a process forked
from one that used it builds its own (threads do not survive a fork).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from .._files import cores
from ._features import FeatureConnector
from ._image_features import Image

#: Frames decoded one by one below this many (a pool's hand-off costs more than it saves).
PARALLEL_FRAMES = 4
MAX_THREADS = 8

_lock = threading.Lock()
_pool: Optional[tuple[int, ThreadPoolExecutor]] = None  # (pid that made it, pool)


def _threads() -> int:
    return max(1, min(MAX_THREADS, cores()))


def frame_pool() -> Optional[ThreadPoolExecutor]:
    """The process's pool for decoding frames, or ``None`` on one core (or one thread allowed)."""
    global _pool
    workers = _threads()
    if workers < 2:
        return None
    with _lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (
                os.getpid(),
                ThreadPoolExecutor(workers, thread_name_prefix="tfrecord_lite-frames"),
            )
        return _pool[1]


def decode_all(connector: FeatureConnector, items: list[Any]) -> list[Any]:
    """``[connector.decode(v) for v in items]``, on the frame pool for images, in order."""
    if len(items) >= PARALLEL_FRAMES and isinstance(connector, Image):
        pool = frame_pool()
        if pool is not None:
            return list(pool.map(connector.decode, items))
    return [connector.decode(v) for v in items]
