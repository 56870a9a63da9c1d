"""Smoke tests of the installed wheel: what a user gets from ``pip install tfrecord-lite-np``.

``make test-wheel`` installs the built wheel (no extras) into a fresh venv outside the
source tree, copies this file into an empty temporary directory (as test_smoke_wheel.py:
its own name keeps the tree's runs from collecting it) and runs it there with that venv's
pytest, so only the installed package can be imported. The first test fails
if ``tfrecord_lite`` (or any of its modules) comes from anywhere but that venv's
site-packages, as it would when a wheel that lacks a module falls back to a source tree.

TFRECORD_LITE_SOURCE names the source tree (set by the Makefile).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

DISTRIBUTION = "tfrecord-lite-np"
SITE = Path(sysconfig.get_paths()["purelib"]).resolve()
SOURCE = Path(os.environ["TFRECORD_LITE_SOURCE"]).resolve()
BIN = Path(sysconfig.get_paths()["scripts"])


def _inside(path: str | os.PathLike[str], root: Path) -> bool:
    return Path(path).resolve().is_relative_to(root)


def all_modules() -> list[str]:
    """Every module of the installed package, by walking the installed files."""
    return sorted(
        info.name for info in pkgutil.walk_packages(tfr.__path__, "tfrecord_lite.", onerror=print)
    )


# --------------------------------------------------------------------------- what is installed


def test_imports_from_the_installed_wheel_only() -> None:
    assert sys.prefix != sys.base_prefix, "not running in a venv"
    assert _inside(tfr.__file__, SITE), f"tfrecord_lite imported from {tfr.__file__}, not {SITE}"
    assert not _inside(SITE, SOURCE), "the venv must be outside the source tree"
    for entry in sys.path:
        if entry and Path(entry).exists():
            assert not _inside(entry, SOURCE) or _inside(entry, SITE), f"{entry} on sys.path"
    assert Path.cwd().resolve() != SOURCE and not _inside(Path.cwd(), SOURCE)


# the modules that import an optional dependency at import time
# (the numba kernels: the compiled engine's driver, _examples/_engines/_jit.py, imports them only
# where numba is installed).
NEEDS_EXTRA = {
    "tfrecord_lite.torch": "torch",
    "tfrecord_lite._examples._engines._jit_kernels": "numba",
    "tfrecord_lite._examples._engines._jit_columns": "numba",
    "tfrecord_lite._examples._engines._jit_framing": "numba",
    "tfrecord_lite._examples._engines._jit_sequences": "numba",
    "tfrecord_lite._examples._jit_encode_kernels": "numba",
    "tfrecord_lite._examples._jit_encode_crc": "numba",
}


def test_every_module_imports_from_site_packages() -> None:
    modules = all_modules()
    assert "tfrecord_lite.example_pb2" in modules and "tfrecord_lite.tfds" in modules
    for name in modules:
        extra = NEEDS_EXTRA.get(name)
        if extra is not None and importlib.util.find_spec(extra) is None:
            # without its extra, such a module fails to import, naming what is missing
            with pytest.raises(ImportError, match=extra):
                importlib.import_module(name)
            continue
        module = importlib.import_module(name)
        assert _inside(module.__file__ or "", SITE), f"{name} from {module.__file__}"
    # nothing of the project but the package itself was installed
    dist = importlib.metadata.distribution(DISTRIBUTION)
    top = {str(f).split("/")[0] for f in dist.files or [] if not str(f).startswith("..")}
    assert {t for t in top if not t.endswith(".dist-info")} == {"tfrecord_lite"}
    assert (
        importlib.util.find_spec("tests") is None and importlib.util.find_spec("benchmarks") is None
    )


def test_typing_marker_and_stubs_are_installed() -> None:
    package = Path(tfr.__file__).parent
    assert (package / "py.typed").is_file()
    for pb2 in ("example_pb2", "feature_pb2", "tensor_pb2"):
        assert (package / f"{pb2}.pyi").is_file(), pb2
        module = importlib.import_module(f"tfrecord_lite.{pb2}")
        assert _inside(module.__file__ or "", SITE)


def test_version_matches_the_metadata() -> None:
    version = importlib.metadata.version(DISTRIBUTION)
    assert tfr.__version__ == version
    out = subprocess.run(
        [str(BIN / "tfrecord-lite"), "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["tfrecord-lite", version]
    out = subprocess.run(
        [sys.executable, "-m", "tfrecord_lite", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["tfrecord-lite", version]


def test_no_conflict_reported_with_only_this_project(tmp_path: Path) -> None:
    from tfrecord_lite import _installed

    assert importlib.metadata.distribution(DISTRIBUTION).metadata["Name"] == DISTRIBUTION
    ours = _installed.find_provider(DISTRIBUTION)
    assert ours is not None and ours.file == Path(tfr.__file__).resolve()
    assert _installed.find_provider("tfrecord-lite") is None
    assert _installed.conflict() is None


def test_the_other_project_beside_this_one_is_named(tmp_path: Path) -> None:
    # The other project's wheel layout (a top-level extension module and its dist-info)
    # in a directory that comes before site-packages, as a `pip install --user` would be.
    from tfrecord_lite import _installed

    user_site = tmp_path / "user-site"
    info = user_site / "tfrecord_lite-0.0.8.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tfrecord_lite\nVersion: 0.0.8\n")
    module = f"tfrecord_lite{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    (user_site / module).write_bytes(b"\x7fELF")
    (info / "RECORD").write_text(f"{module},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    found = _installed.conflict([str(user_site), *sys.path])
    assert found is not None and not found.ours_wins
    assert found.ours.file == Path(tfr.__file__).resolve()
    assert "Fix: `pip uninstall tfrecord-lite`" in found.message
    found = _installed.conflict([*sys.path, str(user_site)])
    assert found is not None and found.ours_wins


# --------------------------------------------------------------------------- it works


def test_write_read_parse(tmp_path: Path) -> None:
    images = np.arange(4 * 3 * 2, dtype=np.uint8).reshape(4, 3, 2)
    labels = np.array([3, 1, 4, 1])
    path = tmp_path / "data.tfrecord"
    tfr.write_examples(str(path), {"image": images, "label": labels})
    data = tfr.read_examples(str(path))
    np.testing.assert_array_equal(data["image"], images)
    np.testing.assert_array_equal(data["label"], labels)

    records = list(tfr.tf_record_iterator(str(path)))
    assert len(records) == 4
    spec = {"label": tfr.io.FixedLenFeature([], tfr.int64)}
    batch = tfr.io.parse_example(records, spec)
    np.testing.assert_array_equal(batch["label"], labels)


def test_gzip_and_a_damaged_file(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord.gz"
    with tfr.TFRecordWriter(str(path), "GZIP") as writer:
        for i in range(10):
            writer.write(tfr.encode_example({"i": i}))
    assert len(list(tfr.tf_record_iterator(str(path)))) == 10

    plain = tmp_path / "plain.tfrecord"
    with tfr.TFRecordWriter(str(plain)) as writer:
        writer.write(b"x" * 100)
    data = bytearray(plain.read_bytes())
    data[20] ^= 0xFF  # a byte of the record's data: its CRC no longer matches
    plain.write_bytes(bytes(data))
    with pytest.raises(tfr.TFRecordError, match=r"plain\.tfrecord"):
        list(tfr.tf_record_iterator(str(plain)))


def test_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    tfr.write_examples(str(path), {"label": np.array([7, 8, 9])})
    cli = shutil.which("tfrecord-lite", path=str(BIN))
    assert cli is not None and Path(cli).parent == BIN
    out = subprocess.run(
        [cli, "info", "--json", str(path)], capture_output=True, text=True, check=True
    )
    report = json.loads(out.stdout)
    assert report["version"] == tfr.__version__
    assert [f["records"] for f in report["files"]] == [3]
    out = subprocess.run(
        [cli, "head", "-n", "1", str(path)], capture_output=True, text=True, check=True
    )
    assert "label" in out.stdout and "7" in out.stdout
    bad = subprocess.run([cli, "info", str(tmp_path / "missing.tfrecord")], capture_output=True)
    assert bad.returncode in (1, 2) and b"missing.tfrecord" in bad.stderr


# --------------------------------------------------------------------------- extras missing


def _torch() -> Any:
    return importlib.import_module("tfrecord_lite.torch")


def _arrow() -> Any:
    from tfrecord_lite import arrow

    return arrow.to_arrow({"x": np.arange(3)})


def _ray() -> Any:
    from tfrecord_lite import ray

    return ray.read_tfrecords("data.tfrecord")


def _dask() -> Any:
    from tfrecord_lite import dask

    return dask.read_tfrecords("data.tfrecord")


def _image() -> Any:
    return tfr.io.encode_png(np.zeros((2, 2, 1), np.uint8))


def _s3() -> Any:
    return list(tfr.tf_record_iterator("s3://bucket/data.tfrecord"))


def _gcs() -> Any:
    return list(tfr.tf_record_iterator("gs://bucket/data.tfrecord"))


EXTRAS: dict[str, tuple[str, Callable[[], Any]]] = {
    "torch": ("torch", _torch),
    "arrow": ("pyarrow", _arrow),
    "ray": ("ray", _ray),
    "dask": ("dask", _dask),
    "image": ("PIL", _image),
    "s3": ("fsspec", _s3),
    "gcs": ("fsspec", _gcs),
}


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_a_missing_extra_says_how_to_install_it(extra: str) -> None:
    dependency, use = EXTRAS[extra]
    assert importlib.util.find_spec(dependency) is None, f"{dependency} is installed here"
    assert extra in (importlib.metadata.metadata(DISTRIBUTION).get_all("Provides-Extra") or [])
    with pytest.raises(ImportError) as info:
        use()
    message = str(info.value)
    assert "pip install" in message, message
    assert f"{DISTRIBUTION}[{extra}]" in message, message
