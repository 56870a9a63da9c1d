"""Finding prepared datasets by name, as ``tfds.builder`` / ``tfds.load`` /
``tfds.data_source`` do (under ``$TFDS_DATA_DIR`` or ``~/tensorflow_datasets``;
nothing is downloaded).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Optional, Union

from .. import _settings
from ._builder import Builder, ReadConfig
from ._dataset_info import DatasetNotFoundError
from ._source import DataSource


def builder_from_directory(builder_dir: Union[str, os.PathLike[str]]) -> Builder:
    """Open a prepared TFDS dataset directory (the one holding ``dataset_info.json``)."""
    return Builder(builder_dir)


def default_data_dir() -> str:
    """``$TFDS_DATA_DIR``, else ``~/tensorflow_datasets`` (TFDS's default)."""
    return _settings.tfds_data_dir()


_NAME = re.compile(
    r"^(?P<name>[a-zA-Z][\w]*)(/(?P<config>[\w.-]+))?(:(?P<version>\d+\.\d+\.\d+|\d+\.\d+\.\*|\d+\.\*\.\*|\*))?$"
)


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def _find_version(folder: str, want: Optional[str]) -> Optional[str]:
    if not os.path.isdir(folder):
        return None
    versions = [
        v
        for v in os.listdir(folder)
        if re.fullmatch(r"\d+\.\d+\.\d+", v)
        and os.path.isfile(os.path.join(folder, v, "dataset_info.json"))
    ]
    if want and "*" not in want:
        return want if want in versions else None
    if want:
        prefix = want.split("*")[0]
        versions = [v for v in versions if v.startswith(prefix)]
    return max(versions, key=_version_key) if versions else None


def builder(name: str, *, data_dir: Optional[str] = None) -> Builder:
    """The prepared dataset ``name`` (``"mnist"``, ``"mnist:3.0.1"``, ``"wmt/de-en:1.*.*"``) under ``data_dir``.

    Looks in ``data_dir/<name>/[<config>/]<version>/`` (``data_dir`` defaults to
    ``$TFDS_DATA_DIR`` or ``~/tensorflow_datasets``); without a version the newest
    prepared one; without a config the default one TFDS recorded, else the only
    one prepared. Nothing is downloaded: a missing dataset raises
    :class:`DatasetNotFoundError` naming where it looked and the ``tfds build``
    command that prepares it.
    """
    m = _NAME.match(name or "")
    if not m:
        raise ValueError(
            f"bad dataset name {name!r}: expected 'name', 'name:1.2.3' or 'name/config:1.2.3'"
        )
    root = os.path.abspath(os.path.expanduser(data_dir) if data_dir else default_data_dir())
    ds_name, config, version = m.group("name"), m.group("config"), m.group("version")
    if config is not None and config.strip(".") == "":
        raise ValueError(f"bad config name {config!r} in {name!r}")
    base = os.path.join(root, ds_name)
    candidates: list[str] = []
    if config:
        candidates.append(os.path.join(base, config))
    else:
        candidates.append(base)
        default_config = _default_config(base)
        if default_config:
            candidates.append(os.path.join(base, default_config))
        elif os.path.isdir(base):
            configs = sorted(
                c
                for c in os.listdir(base)
                if not c.startswith(".")
                and os.path.isdir(os.path.join(base, c))
                and _find_version(os.path.join(base, c), None)
            )
            if len(configs) == 1:
                candidates.append(os.path.join(base, configs[0]))
    for folder in candidates:
        v = _find_version(folder, version)
        if v is not None:
            return Builder(os.path.join(folder, v))
    looked = (
        candidates[0]
        if not version or "*" in (version or "")
        else os.path.join(candidates[0], version)
    )
    build = f"tfds build {ds_name}" + (f" --config {config}" if config else "")
    if version and "*" not in version:
        build += f" --version {version}"
    if data_dir:
        build += f" --data_dir {root}"
    raise DatasetNotFoundError(
        f"dataset {name!r} is not prepared under {root} (looked in {looked}). tfrecord_lite "
        f"reads prepared datasets and never downloads: prepare it with TensorFlow Datasets "
        f"(`{build}`), or pass data_dir= / set $TFDS_DATA_DIR to where it is",
        path=looked,
    )


def _default_config(base: str) -> Optional[str]:
    path = os.path.join(base, ".config", "metadata.json")
    if not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    cfg = meta.get("default_config_name") if isinstance(meta, dict) else None
    if isinstance(cfg, str) and re.fullmatch(r"[\w.-]+", cfg) and cfg not in (".", ".."):
        return cfg
    return None


def load(
    name: str,
    *,
    split: Optional[str] = None,
    data_dir: Optional[str] = None,
    shuffle_files: bool = False,
    decoders: Any = None,
    as_supervised: bool = False,
    read_config: Optional[ReadConfig] = None,
    batch_size: Optional[int] = None,
    with_info: bool = False,
) -> Any:
    """``tfds.load`` for prepared datasets: ``builder(name, data_dir=).as_dataset(split, ...)``.

    ``split=None`` returns a dict of every split's dataset. ``with_info=True``
    returns ``(dataset, info)``. Never downloads (``download=`` is not accepted).
    """
    b = builder(name, data_dir=data_dir)
    kwargs = dict(
        shuffle_files=shuffle_files,
        decoders=decoders,
        as_supervised=as_supervised,
        read_config=read_config,
        batch_size=batch_size,
    )
    ds: Any
    if split is None:
        ds = {s: b.as_dataset(s, **kwargs) for s in b.info.splits}
    else:
        ds = b.as_dataset(split, **kwargs)
    return (ds, b.info) if with_info else ds


def data_source(
    name: str,
    *,
    split: str,
    data_dir: Optional[str] = None,
    decoders: Any = None,
    as_supervised: bool = False,
) -> DataSource:
    """``tfds.data_source`` for prepared TFRecord datasets: random access to ``split``."""
    return builder(name, data_dir=data_dir).as_data_source(
        split, decoders=decoders, as_supervised=as_supervised
    )


def is_tfds_dir(path: str) -> bool:
    """True if ``path`` is a prepared TFDS dataset directory (for the command line)."""
    return os.path.isfile(os.path.join(path, "dataset_info.json")) and os.path.isfile(
        os.path.join(path, "features.json")
    )
