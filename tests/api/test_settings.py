"""Settings in one place: ``tfrecord_lite._settings`` reads every environment variable,
checks each value once with an error that names the variable, and ``tfr.options(...)``
overrides settings for a block, in the calling thread only."""

from __future__ import annotations

import ast
import dataclasses
import os
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

import tfrecord_lite as tfr
from tfrecord_lite import _settings
from tfrecord_lite._cli import _progress
from tfrecord_lite._decoding import _jpeg
from tfrecord_lite._files import _compress
from tfrecord_lite.tfds import _load, _source

PACKAGE = Path(tfr.__file__).parent

#: Modules that still read the environment themselves, each until it asks _settings
#: instead (the function to call is named). Keep this list exact: an entry whose
#: module no longer reads the environment fails the test below, so it is removed.
PENDING: dict[str, str] = {}

_READERS = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_reads(source: str) -> list[int]:
    """Line numbers where ``source`` reads or changes the environment, apart from taking
    a whole copy of it for a child process (``dict(os.environ)``, ``os.environ.copy()``)."""
    tree = ast.parse(source)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            if any(alias.name in _READERS for alias in node.names):
                lines.append(node.lineno)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr in _READERS
        ):
            parent = parents.get(node)
            whole_copy = (
                isinstance(parent, ast.Call)
                and isinstance(parent.func, ast.Name)
                and parent.func.id == "dict"
                and parent.args == [node]
            ) or (
                isinstance(parent, ast.Attribute)
                and parent.attr == "copy"
                and isinstance(parents.get(parent), ast.Call)
            )
            if not whole_copy:
                lines.append(node.lineno)
    return sorted(lines)


@pytest.fixture(autouse=True)
def no_settings_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from the defaults, whatever the environment of the run sets."""
    for setting in _settings.SETTINGS.values():
        if setting.per_block:
            monkeypatch.delenv(setting.variable, raising=False)


def test_the_reader_sees_every_way_of_reading_the_environment() -> None:
    source = """
import os
from os import environ, getenv
a = os.environ.get("A")
b = os.environ["B"]
c = "C" in os.environ
d = os.getenv("D")
os.environ.setdefault("E", "1")
child = dict(os.environ)
child2 = os.environ.copy()
"""
    assert environment_reads(source) == [3, 4, 5, 6, 7, 8]


def test_only_the_settings_module_reads_the_environment() -> None:
    readers = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        lines = environment_reads(path.read_text(encoding="utf-8"))
        if lines and rel != "_settings.py":
            readers[rel] = lines
    unexpected = {m: lines for m, lines in readers.items() if m not in PENDING}
    assert not unexpected, (
        f"modules that read environment variables themselves: {unexpected}; add the "
        "variable to tfrecord_lite/_settings.py (SETTINGS, and a function) and call that"
    )
    stale = sorted(set(PENDING) - set(readers))
    assert not stale, f"no longer read the environment: remove them from PENDING: {stale}"


# --------------------------------------------------------------------------- the variables


#: A bad value of each variable that checks its values.
BAD = {
    "engine": "fast",
    "deflate_backend": "brotli",
    "threads": "two",
    "jpeg_backend": "libjpeg",
    "progress": "sometimes",
    "fastpath": "maybe",
    "crc_backend": "md5",
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_names_the_variable_and_what_it_takes(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    setting = _settings.SETTINGS[name]
    monkeypatch.setenv(setting.variable, f"  {BAD[name]} ")
    with pytest.raises(ValueError) as info:
        _settings.get(name)
    message = str(info.value)
    assert message.startswith(f"{setting.variable}={BAD[name]!r} is not a valid value")
    assert setting.expected in message


def test_threads_must_be_at_least_one(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("0", "-1", "1.5"):
        monkeypatch.setenv("TFRECORD_LITE_THREADS", bad)
        with pytest.raises(ValueError, match=rf"TFRECORD_LITE_THREADS='{bad}'.*at least 1"):
            _settings.threads()
    monkeypatch.setenv("TFRECORD_LITE_THREADS", " 3 ")
    assert _settings.threads() == 3
    monkeypatch.setenv("TFRECORD_LITE_THREADS", "")  # blank: unset
    assert _settings.threads() is None


def test_values_are_read_when_needed_and_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "NumPy")
    assert _settings.engine() == "numpy"
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "jit")  # a change while running counts
    assert _settings.engine() == "jit"
    calls = []
    setting = _settings.SETTINGS["engine"]

    def counting(text: str) -> Any:
        calls.append(text)
        return text.lower()

    monkeypatch.setattr(_settings, "_PARSED", {})
    counted = dataclasses.replace(setting, parse=counting)
    monkeypatch.setattr(_settings, "SETTINGS", {**_settings.SETTINGS, "engine": counted})
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "Auto")
    for _ in range(5):
        assert _settings.engine() == "auto"
    assert calls == ["Auto"]


def test_paths_and_their_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for variable in ("TFRECORD_LITE_CACHE_DIR", "XDG_CACHE_HOME", "TFDS_DATA_DIR"):
        monkeypatch.delenv(variable, raising=False)
    home = os.path.expanduser("~")
    assert _settings.cache_home() == os.path.join(home, ".cache")
    assert _settings.cache_dir() == os.path.join(home, ".cache", "tfrecord_lite")
    assert _load.default_data_dir() == os.path.join(home, "tensorflow_datasets")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _source._cache_dir() == str(tmp_path / "xdg" / "tfrecord_lite" / "tfds")
    monkeypatch.setenv("TFRECORD_LITE_CACHE_DIR", "~/tfl-cache")
    assert _source._cache_dir() == os.path.join(home, "tfl-cache", "tfds")
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
    assert _load.default_data_dir() == str(tmp_path / "tfds")
    with tfr.options(cache_dir=tmp_path / "c", tfds_data_dir=tmp_path / "d"):
        assert _source._cache_dir() == str(tmp_path / "c" / "tfds")
        assert _load.default_data_dir() == str(tmp_path / "d")


# --------------------------------------------------------------------------- tfr.options


def test_options_override_the_environment_in_a_block_and_restore_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_THREADS", "4")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert _compress._cores() == 4
    with tfr.options(threads=1):
        assert _compress._cores() == 1 and _compress.deflate_threads() == 1
        with tfr.options(threads=2, engine="numpy"):  # nested: the inner one wins
            assert _compress._cores() == 2 and _settings.engine() == "numpy"
        assert _compress._cores() == 1 and _settings.engine() == "auto"
        with tfr.options(threads=None):  # None: no cap, whatever the variable says
            assert _compress._cores() == 16
    assert _compress._cores() == 4
    with pytest.raises(KeyError), tfr.options(threads=1):
        raise KeyError  # an exception leaves the block too
    assert _compress._cores() == 4


def test_options_are_checked_at_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        ValueError, match=r"tfr.options\(engine='fast'\): expected auto, numpy or jit"
    ):
        tfr.options(engine="fast")
    with pytest.raises(ValueError, match=r"tfr.options\(threads=0\): expected a whole number"):
        tfr.options(threads=0)
    with pytest.raises(TypeError, match=r"tfr.options\(threads='2'\): expected an int"):
        tfr.options(threads="2")
    with pytest.raises(TypeError, match=r"tfr.options\(progress=1\): expected True or False"):
        tfr.options(progress=1)
    with pytest.raises(TypeError, match=r"unknown setting 'thread'; the settings are .*threads"):
        tfr.options(thread=1)
    with pytest.raises(ValueError, match="only the environment variable TFRECORD_LITE_CRC_BACKEND"):
        tfr.options(crc_backend="crcmod")
    block = tfr.options(deflate_backend="ZLIB")
    with block:
        assert _settings.deflate_backend() == "zlib"
        with pytest.raises(RuntimeError, match="already entered"), block:
            pass


def test_options_choose_the_deflate_backend_of_a_writer(tmp_path: Path) -> None:
    records = [b"x%d" % i * 50 for i in range(500)]
    with (
        tfr.options(deflate_backend="zlib"),
        tfr.TFRecordWriter(str(tmp_path / "a.gz"), "GZIP") as w,
    ):
        w.write_all(records)
    raw = tfr.encode_records(records)
    z = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 31, 9)
    data = (tmp_path / "a.gz").read_bytes()
    # zlib by name: TensorFlow's bytes exactly (the gzip header's time and OS aside)
    assert data[10:] == (z.compress(raw) + z.flush())[10:]
    assert list(tfr.tf_record_iterator(str(tmp_path / "a.gz"), "GZIP")) == records


def test_options_choose_the_jpeg_backend_and_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFRECORD_LITE_JPEG_BACKEND", "simplejpeg")
    with tfr.options(jpeg_backend="pillow"):
        assert _jpeg.jpeg_backend() == "pillow"
    monkeypatch.setenv("TFRECORD_LITE_PROGRESS", "1")
    assert _progress.progress(10).enabled
    with tfr.options(progress=False):
        assert not _progress.progress(10).enabled
    monkeypatch.setenv("TFRECORD_LITE_PROGRESS", "0")
    assert not _progress.progress(10).enabled
    with tfr.options(progress=True):
        assert _progress.progress(10).enabled


def test_options_are_seen_only_by_the_thread_that_entered_the_block() -> None:
    inside = threading.Event()
    leave = threading.Event()
    seen: dict[str, Any] = {}

    def block() -> None:
        with tfr.options(engine="numpy"):
            seen["inside"] = _settings.engine()
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=block)
    t.start()
    assert inside.wait(10)
    seen["other"] = _settings.engine()  # while the block is open in the other thread
    leave.set()
    t.join()
    assert seen == {"inside": "numpy", "other": "auto"}


def test_options_decorate_a_function_with_a_fresh_block_per_call() -> None:
    @tfr.options(engine="jit")
    def inner() -> str:
        return _settings.engine()

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(inner())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["jit"] * 8 and _settings.engine() == "auto"


def test_a_process_default_comes_after_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_settings, "_PROCESS_DEFAULTS", {})
    monkeypatch.delenv("TFRECORD_LITE_THREADS", raising=False)
    _settings.set_process_default("threads", 1)
    assert _settings.threads() == 1
    monkeypatch.setenv("TFRECORD_LITE_THREADS", "3")
    assert _settings.threads() == 3
    with tfr.options(threads=2):
        assert _settings.threads() == 2


def test_every_setting_is_documented() -> None:
    page = (Path(__file__).parents[2] / "docs" / "settings.md").read_text(encoding="utf-8")
    for setting in _settings.SETTINGS.values():
        assert f"`{setting.variable}`" in page, setting.variable
        if setting.per_block:
            assert f"`{setting.name}`" in page, setting.name
