# tfrecord_lite — every target does its own set-up on a fresh machine.
#   make demo      install into .venv and run the end-to-end demo
#   make test      install test tools into .venv; ruff, mypy, pytest
#   make test-oldest   the test suite on the lowest protobuf / numpy we support (2 xdist workers)
#   make interop   real TensorFlow, tensorflow-datasets, Ray, Grain (.venv-interop) against ours
#   make test-cloud    the object-store suite against local S3 / GCS servers (.venv-cloud)
#   make test-cluster  Ray Data, Dask and Arrow on local clusters (.venv-cluster)
#   make test-engines  Spark 4, Daft and Hugging Face datasets, started locally (.venv-engines)
#   make protos    regenerate tfrecord_lite/*_pb2.py from protos/
#   make bench     benchmarks/ (tfrecord_lite only);  make bench-peers: beside TF and `tfrecord`
#   make bench-dataloader / bench-tfdata / bench-tfds / bench-scaleout / bench-cloud: one integration each
#   make fuzz      a bounded atheris run of every fuzz target
#   make dist      build the sdist and the wheel into dist/ (.venv-build), twine check, contents check
#   make test-wheel    install the built wheel into a fresh venv outside the tree; smoke suite there
#   make test-pythons  the test suite from the built wheel on CPython 3.9, 3.10, 3.12 and 3.13
#   make docs      build the documentation site into site/ (.venv-docs), warnings as errors
#   make venvs     install every suite's venv (make -j N venvs: N at once; .ci/run does it
#                  in the background while make test runs)

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
PYTEST_ARGS ?=
# make test runs pytest on this many pytest-xdist workers (PYTEST_WORKERS=0: in one process).
PYTEST_WORKERS ?= 2

.PHONY: all install install-demo demo test venvs lint typecheck pytest test-oldest interop test-cloud test-cluster test-engines protos bench bench-peers bench-dataloader bench-tfdata bench-tfds bench-scaleout bench-cloud fuzz dist test-wheel test-pythons docs clean

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)

# Re-install when the project metadata changes.
# `make demo` installs only what the demo runs: the package with its `fast`, `image` and `jit`
# extras (the compiled parse engine: the library at its best).
$(VENV)/.installed-demo: pyproject.toml | $(PY)
	$(PIP) install -e ".[fast,image,jit]"
	touch $@

# `make test` adds the test and development tools, and PyTorch for tfrecord_lite.torch.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP) install -e ".[fast,image,jit,test,dev]"
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install "torch==2.13.0"
	touch $@ $(VENV)/.installed-demo

install-demo: $(VENV)/.installed-demo
install: $(VENV)/.installed

demo: install-demo
	$(PY) -m tfrecord_lite.demo --out demo-out

lint: install
	$(PY) -m ruff check tfrecord_lite tests benchmarks docs
	$(PY) -m ruff format --check tfrecord_lite tests benchmarks docs/check_reference.py docs/griffe_sphinx.py

typecheck: install
	$(PY) -m mypy

pytest: install
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

test: lint typecheck pytest

# The lowest versions pyproject.toml allows, in a venv of their own.
OLDEST_VENV := .venv-oldest
$(OLDEST_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python -m pip --disable-pip-version-check -q install "protobuf==4.25.0" "numpy==1.23.5" "crcmod==1.7" "pyarrow==12.0.1"
	$(OLDEST_VENV)/bin/python -m pip --disable-pip-version-check -q install -e ".[test]"
	touch $@

test-oldest: $(OLDEST_VENV)/.installed
	$(OLDEST_VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

INTEROP_VENV := .venv-interop
$(INTEROP_VENV)/.installed: pyproject.toml tests/interop/requirements.txt
	$(PYTHON) -m venv $(INTEROP_VENV)
	$(INTEROP_VENV)/bin/python -m pip --disable-pip-version-check -q install -r tests/interop/requirements.txt
	$(INTEROP_VENV)/bin/python -m pip --disable-pip-version-check -q install -e ".[fast,image,jit,test]"
	touch $@

# TensorFlow also reads what the Spark, Daft and datasets writers write: the engine venv
# (below) writes those shards (TFR_ENGINES_PYTHON), the interop venv reads them.
ENGINES_VENV := .venv-engines
interop: $(INTEROP_VENV)/.installed $(ENGINES_VENV)/.installed
	TFRECORD_LITE_INTEROP=1 TFR_ENGINES_PYTHON=$(ENGINES_VENV)/bin/python $(INTEROP_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/interop $(PYTEST_ARGS)

# Object stores: a real S3-protocol server (moto_server) and a GCS emulator, started by the
# suite's fixtures on 127.0.0.1, in a venv of their own.
CLOUD_VENV := .venv-cloud
$(CLOUD_VENV)/.installed: pyproject.toml tests/cloud/requirements.txt
	$(PYTHON) -m venv $(CLOUD_VENV)
	$(CLOUD_VENV)/bin/python -m pip --disable-pip-version-check -q install -r tests/cloud/requirements.txt
	touch $@

# test_ignored_range.py runs here again: its real HTTP server needs aiohttp (s3fs brings it),
# which make test's venv does not have (there that test is skipped, saying so).
test-cloud: $(CLOUD_VENV)/.installed
	TFRECORD_LITE_CLOUD=1 $(CLOUD_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/cloud tests/files/test_ignored_range.py $(PYTEST_ARGS)

# Ray Data, Dask and Arrow on real local clusters, in a venv of their own (no TensorFlow);
# s3:// reads and writes on the clusters go to a moto_server the suite starts on 127.0.0.1.
CLUSTER_VENV := .venv-cluster
$(CLUSTER_VENV)/.installed: pyproject.toml tests/cluster/requirements.txt
	$(PYTHON) -m venv $(CLUSTER_VENV)
	$(CLUSTER_VENV)/bin/python -m pip --disable-pip-version-check -q install -r tests/cluster/requirements.txt
	touch $@

# TFRECORD_LITE_CLUSTER=1: tests/cluster is collected only here (one Ray and one Dask
# cluster per session); test_arrow.py runs again with pandas present.
test-cluster: $(CLUSTER_VENV)/.installed
	TFRECORD_LITE_CLUSTER=1 $(CLUSTER_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/cluster tests/integrations/test_arrow.py $(PYTEST_ARGS)

# Spark 4 (local[2,2], the machine's Java 17), Daft's local runner and Hugging Face datasets,
# in a venv of their own (no TensorFlow); s3:// reads go to a moto_server the suite starts.
$(ENGINES_VENV)/.installed: pyproject.toml tests/engines/requirements.txt
	$(PYTHON) -m venv $(ENGINES_VENV)
	$(ENGINES_VENV)/bin/python -m pip --disable-pip-version-check -q install -r tests/engines/requirements.txt
	touch $@

# TFRECORD_LITE_ENGINES=1: tests/engines is collected only here (one Spark session per run).
test-engines: $(ENGINES_VENV)/.installed
	TFRECORD_LITE_ENGINES=1 $(ENGINES_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/engines $(PYTEST_ARGS)

protos: install
	$(PY) -m pip --disable-pip-version-check -q install -r protos/requirements.txt
	$(PY) protos/generate.py

bench: install
	$(PY) -m benchmarks.run $(BENCH_ARGS)

# TensorFlow and the `tfrecord` package beside tfrecord_lite, in a venv of their own.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml benchmarks/requirements-peers.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip --disable-pip-version-check -q install -r benchmarks/requirements-peers.txt
	touch $@

bench-peers: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m benchmarks.run --peers $(BENCH_ARGS)

# The benchmarks of one integration each, beside its peer where it has one:
#   bench-dataloader  PyTorch DataLoader workers 0..N (ours only; prints the core count)
#   bench-tfdata      tf.data surface beside TensorFlow
#   bench-tfds        tfrecord_lite.tfds beside tensorflow-datasets
#   bench-scaleout    tfrecord_lite.ray / .dask beside Ray's own read_tfrecords / write_tfrecords
#   bench-cloud       object-store reads through a local S3 server (in .venv-cloud)
bench-dataloader: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m benchmarks.bench_dataloader $(BENCH_ARGS)

bench-tfdata: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m benchmarks.bench_tfdata $(BENCH_ARGS)

bench-tfds: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m benchmarks.bench_tfds $(BENCH_ARGS)

bench-scaleout: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m benchmarks.bench_scaleout $(BENCH_ARGS)

bench-cloud: $(CLOUD_VENV)/.installed
	$(CLOUD_VENV)/bin/python -m benchmarks.bench_cloud $(BENCH_ARGS)

# atheris (libFuzzer for Python) in a venv of its own: every target in tests/fuzz/
# for FUZZ_TIME seconds (seeds from tests/data); exits non-zero on a crash.
# Falls back to a long hypothesis run if atheris has no wheel for this Python.
FUZZ_VENV := .venv-fuzz
FUZZ_TIME ?= 60
$(FUZZ_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(FUZZ_VENV)
	$(FUZZ_VENV)/bin/python -m pip --disable-pip-version-check -q install -e ".[fast,test]"
	$(FUZZ_VENV)/bin/python -m pip --disable-pip-version-check -q install "atheris>=2.3,<4" \
		|| echo "atheris did not install: make fuzz falls back to hypothesis"
	touch $@

fuzz: $(FUZZ_VENV)/.installed
	$(FUZZ_VENV)/bin/python tests/fuzz/run.py --time $(FUZZ_TIME) --work $(FUZZ_VENV)/work $(FUZZ_ARGS)

# --------------------------------------------------------------------------- what users install

# `python -m build` makes the sdist, then the wheel from the sdist (so the sdist must be
# complete); tests/wheel/check_dist.py checks both against the source tree.
BUILD_VENV := .venv-build
$(BUILD_VENV)/.installed:
	$(PYTHON) -m venv $(BUILD_VENV)
	$(BUILD_VENV)/bin/python -m pip --disable-pip-version-check -q install "build>=1.2" "twine>=6.1"
	touch $@

dist: $(BUILD_VENV)/.installed
	rm -rf dist
	$(BUILD_VENV)/bin/python -m build --outdir dist . > $(BUILD_VENV)/build.log 2>&1 \
		|| { cat $(BUILD_VENV)/build.log; exit 1; }
	$(BUILD_VENV)/bin/python -m twine check --strict dist/*
	$(BUILD_VENV)/bin/python tests/wheel/check_dist.py dist

# The wheel (no extras) in a fresh venv in a temporary directory outside the tree; the
# smoke suite (tests/wheel/smoke_wheel.py, named so that the tree's own runs do not collect
# it) copied as test_smoke_wheel.py into another empty one and run from there, so nothing of
# the source tree can be imported (the suite fails if tfrecord_lite comes from anywhere but
# the venv).
test-wheel: dist
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip --disable-pip-version-check -q install dist/*.whl "pytest>=7"; \
	mkdir "$$tmp/run"; cp tests/wheel/smoke_wheel.py "$$tmp/run/test_smoke_wheel.py"; printf '[pytest]\n' > "$$tmp/run/pytest.ini"; \
	cd "$$tmp/run" && TFRECORD_LITE_SOURCE="$(CURDIR)" "$$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider

# The test suite from the built wheel (not the tree) on the CPythons that requires-python
# (>=3.9) admits and this machine has (pyenv's or pythonX.Y on PATH), each in its own
# .venv-pyX.Y with the newest dependencies that support it, run from tests/ with the plugin
# tests/wheel/installed_guard.py stopping the run unless tfrecord_lite comes from the venv.
# The whole suite runs on each (3.11 is make test's and make test-wheel's), on PYTEST_WORKERS
# pytest-xdist workers (XDIST= runs it in one process); the venvs are installed all at once
# (PYTHONS_INSTALL_JOBS at a time) before the first run.
# Torch is left out (tfrecord_lite.torch's tests and docs blocks skip, saying so).
PYTHONS ?= 3.9 3.10 3.12 3.13
PYENV_ROOT ?= $(HOME)/.pyenv
XDIST ?= -n $(PYTEST_WORKERS)
PYTHONS_INSTALL_JOBS ?= 4
test-pythons: dist
	PYTHON_VERSIONS="$(PYTHONS)" PYENV_ROOT="$(PYENV_ROOT)" XDIST="$(XDIST)" INSTALL_JOBS="$(PYTHONS_INSTALL_JOBS)" \
		PYTEST_ARGS="$(PYTEST_ARGS)" bash tests/wheel/test_pythons.sh

# --------------------------------------------------------------------------- documentation

DOCS_VENV := .venv-docs
$(DOCS_VENV)/.installed: pyproject.toml docs/requirements.txt
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip --disable-pip-version-check -q install -r docs/requirements.txt
	$(DOCS_VENV)/bin/python -m pip --disable-pip-version-check -q install -e .
	touch $@

docs: $(DOCS_VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/python -m mkdocs build --strict --site-dir site
	$(DOCS_VENV)/bin/python docs/check_reference.py site

# Every suite's venv (not .venv, make test's own, nor the test-pythons ones: those need the wheel).
venvs: $(OLDEST_VENV)/.installed $(INTEROP_VENV)/.installed $(CLOUD_VENV)/.installed \
	$(CLUSTER_VENV)/.installed $(ENGINES_VENV)/.installed $(BUILD_VENV)/.installed $(DOCS_VENV)/.installed

clean:
	rm -rf $(VENV) $(OLDEST_VENV) $(INTEROP_VENV) $(CLOUD_VENV) $(CLUSTER_VENV) $(BENCH_VENV) $(FUZZ_VENV) $(BUILD_VENV) $(DOCS_VENV) .venv-py3.* build dist site *.egg-info demo-out
