"""``TFRECORD_LITE_NO_CZLIB``: whether seek points inside a deflate stream may load the
system's zlib, asked of ``tfrecord_lite._settings`` when the library is first needed."""

from __future__ import annotations

import gzip
import sys
import zlib
from pathlib import Path

import pytest

import tfrecord_lite as tfr
from tfrecord_lite import _settings
from tfrecord_lite._files import _gzindex, _zran
from tfrecord_lite._files._index import TFRecordFile, create_index

needs_shared_zlib = pytest.mark.skipif(
    sys.platform == "emscripten", reason="no shared zlib to load on this platform"
)


@pytest.fixture
def first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the next call the first use: nothing loaded, nothing tried."""
    monkeypatch.setattr(_zran, "_TRIED", False)
    monkeypatch.setattr(_zran, "_LIB", None)
    monkeypatch.delenv("TFRECORD_LITE_NO_CZLIB", raising=False)


@needs_shared_zlib
def test_unset_the_shared_zlib_is_loaded(first_use: None) -> None:
    assert _settings.system_zlib() is True
    assert _zran.available()
    inflater = _zran.BlockInflater(-zlib.MAX_WBITS)
    inflater.close()


@pytest.mark.parametrize("value", ["1", "yes", "0"])
def test_any_value_keeps_the_shared_zlib_unloaded(
    first_use: None, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # Set after the package was imported: read at the first use, not at import.
    monkeypatch.setenv("TFRECORD_LITE_NO_CZLIB", value)
    assert not _zran.available()
    with pytest.raises(_zran.ZlibError, match="no shared zlib"):
        _zran.BlockInflater(-zlib.MAX_WBITS)


def test_the_choice_is_the_settings_module_s(
    first_use: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_settings, "system_zlib", lambda: False)
    assert not _zran.available()


@needs_shared_zlib
def test_the_choice_holds_for_the_process(first_use: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chosen once, at first use (as docs/settings.md says): a later change of the
    variable does not unload the library or load it."""
    assert _zran.available()
    monkeypatch.setenv("TFRECORD_LITE_NO_CZLIB", "1")
    assert _zran.available()


def test_without_it_an_index_has_only_member_seek_points(
    first_use: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_NO_CZLIB", "1")
    records = [bytes([i % 251]) * (i % 300) + str(i).encode() for i in range(400)]
    gz = tmp_path / "d.tfrecord.gz"
    gz.write_bytes(gzip.compress(tfr.encode_records(records), mtime=0))
    index = create_index(str(gz), spacing=1)
    points = _gzindex.decode(Path(index).read_bytes()).points
    assert {p.kind for p in points} == {_gzindex.START}
    with TFRecordFile(str(gz)) as f:
        assert f[399] == records[399] and f[100:110] == records[100:110]
