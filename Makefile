# tfrecord_lite — every target does its own set-up on a fresh machine.
#   make demo      install into .venv and run the end-to-end demo
#   make test      install test tools into .venv; ruff, mypy, pytest
#   make test-oldest   the test suite on the floor: CPython 3.9, the lowest protobuf / numpy / pyarrow
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
#   make test-pythons  the test suite from the built wheel on CPython 3.13, its fast part on 3.10 and 3.12
#   make docs      build the documentation site into site/ (.venv-docs), warnings as errors
#   make venvs     install every suite's venv (make -j N venvs: N at once; .ci/run does it
#                  in the background while make test runs);  make pythons-venvs: test-pythons' ones

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# pip install in every venv here: --no-compile leaves byte-compiling to the first import, so
# only the modules a run imports are compiled (pip compiles every .py of every package: some
# 700 MB of source over the suites' venvs, most of it never imported by the tests).
PIP_INSTALL := -m pip --disable-pip-version-check -q install --no-compile
# pyenv's CPythons (test-oldest and test-pythons look there first)
PYENV_ROOT ?= $(HOME)/.pyenv
PYTEST_ARGS ?=
# make test runs pytest on this many pytest-xdist workers (PYTEST_WORKERS=0: in one process).
PYTEST_WORKERS ?= 2

.PHONY: all install install-demo demo test venvs pythons-venvs lint typecheck pytest test-oldest interop test-cloud test-cluster test-engines protos bench bench-peers bench-dataloader bench-tfdata bench-tfds bench-scaleout bench-cloud fuzz dist test-wheel test-pythons docs clean

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)

# Re-install when the project metadata changes.
# `make demo` installs only what the demo runs: the package with its `fast`, `image` and `jit`
# extras (the compiled parse engine: the library at its best).
$(VENV)/.installed-demo: pyproject.toml | $(PY)
	$(PY) $(PIP_INSTALL) -e ".[fast,image,jit]"
	touch $@

# `make test` adds the test and development tools, PyTorch for tfrecord_lite.torch, and
# torchdata for its StatefulDataLoader (resuming an IterableDataset mid-epoch).
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) $(PIP_INSTALL) -e ".[fast,image,jit,test,dev]"
	$(PY) -c "import torch" 2>/dev/null || $(PY) $(PIP_INSTALL) "torch==2.13.0"
	$(PY) -c "import torchdata" 2>/dev/null || $(PY) $(PIP_INSTALL) "torchdata>=0.8"
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

# The floor: the lowest CPython that requires-python admits (3.9, pyenv's newest 3.9.*, else
# python3.9 on PATH) with the lowest protobuf / numpy / pyarrow that pyproject.toml allows, the
# tree installed editable, the whole suite. Python 3.9 has no run of its own beside it: the
# interpreter's floor is tested here, with the dependency floor (test-pythons leaves 3.9 out).
OLDEST_PYVER ?= 3.9
OLDEST_PYTHON ?= $(shell ls -d $(PYENV_ROOT)/versions/$(OLDEST_PYVER).*/bin/python$(OLDEST_PYVER) 2>/dev/null \
	| sort -V | tail -1 | grep . || command -v python$(OLDEST_PYVER))
OLDEST_VENV := .venv-oldest-py$(OLDEST_PYVER)
$(OLDEST_VENV)/.installed: pyproject.toml
	@[ -n "$(OLDEST_PYTHON)" ] || { echo "no CPython $(OLDEST_PYVER) on this machine (pyenv's or" \
		"python$(OLDEST_PYVER) on PATH): install one, or name one with OLDEST_PYTHON=..."; exit 1; }
	$(OLDEST_PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/python $(PIP_INSTALL) "protobuf==4.25.0" "numpy==1.23.5" "crcmod==1.7" "pyarrow==12.0.1"
	$(OLDEST_VENV)/bin/python $(PIP_INSTALL) -e ".[test]"
	touch $@

# OLDEST_WORKERS: pytest-xdist workers (0: in one process, as .ci/run runs it beside make interop).
OLDEST_WORKERS ?= $(PYTEST_WORKERS)
test-oldest: $(OLDEST_VENV)/.installed
	$(OLDEST_VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(OLDEST_WORKERS) $(PYTEST_ARGS)

INTEROP_VENV := .venv-interop
$(INTEROP_VENV)/.installed: pyproject.toml tests/interop/requirements.txt
	$(PYTHON) -m venv $(INTEROP_VENV)
	$(INTEROP_VENV)/bin/python $(PIP_INSTALL) -r tests/interop/requirements.txt
	$(INTEROP_VENV)/bin/python $(PIP_INSTALL) -e ".[fast,image,jit,test]"
	touch $@

# TensorFlow also reads what the Spark, Daft and datasets writers write: their venv
# (.venv-engines, below) writes those shards (TFR_ENGINES_PYTHON), the interop venv reads them.
ENGINES_VENV := .venv-engines
interop: $(INTEROP_VENV)/.installed $(ENGINES_VENV)/.installed
	TFRECORD_LITE_INTEROP=1 TFR_ENGINES_PYTHON=$(ENGINES_VENV)/bin/python $(INTEROP_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/interop $(PYTEST_ARGS)

# Object stores: a real S3-protocol server (moto_server) and a GCS emulator, started by the
# suite's fixtures on 127.0.0.1, in a venv of their own.
CLOUD_VENV := .venv-cloud
$(CLOUD_VENV)/.installed: pyproject.toml tests/cloud/requirements.txt
	$(PYTHON) -m venv $(CLOUD_VENV)
	$(CLOUD_VENV)/bin/python $(PIP_INSTALL) -r tests/cloud/requirements.txt
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
	$(CLUSTER_VENV)/bin/python $(PIP_INSTALL) -r tests/cluster/requirements.txt
	touch $@

# TFRECORD_LITE_CLUSTER=1: tests/cluster is collected only here (one Ray and one Dask
# cluster per session); test_arrow.py runs again with pandas present.
test-cluster: $(CLUSTER_VENV)/.installed
	TFRECORD_LITE_CLUSTER=1 $(CLUSTER_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/cluster tests/integrations/test_arrow.py $(PYTEST_ARGS)

# Spark 4 (local[2,2], the machine's Java 17), Daft's local runner and Hugging Face datasets,
# in a venv of their own (no TensorFlow); s3:// reads go to a moto_server the suite starts.
$(ENGINES_VENV)/.installed: pyproject.toml tests/engines/requirements.txt
	$(PYTHON) -m venv $(ENGINES_VENV)
	$(ENGINES_VENV)/bin/python $(PIP_INSTALL) -r tests/engines/requirements.txt
	touch $@

# TFRECORD_LITE_ENGINES=1: tests/engines is collected only here (one Spark session per run).
test-engines: $(ENGINES_VENV)/.installed
	TFRECORD_LITE_ENGINES=1 $(ENGINES_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/engines $(PYTEST_ARGS)

protos: install
	$(PY) $(PIP_INSTALL) -r protos/requirements.txt
	$(PY) protos/generate.py

bench: install
	$(PY) -m benchmarks.run $(BENCH_ARGS)

# TensorFlow and the `tfrecord` package beside tfrecord_lite, in a venv of their own.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml benchmarks/requirements-peers.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python $(PIP_INSTALL) -r benchmarks/requirements-peers.txt
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
	$(FUZZ_VENV)/bin/python $(PIP_INSTALL) -e ".[fast,test]"
	$(FUZZ_VENV)/bin/python $(PIP_INSTALL) "atheris>=2.3,<4" \
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
	$(BUILD_VENV)/bin/python $(PIP_INSTALL) "build>=1.2" "twine>=6.1"
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
	"$$tmp/venv/bin/python" $(PIP_INSTALL) dist/*.whl "pytest>=7"; \
	mkdir "$$tmp/run"; cp tests/wheel/smoke_wheel.py "$$tmp/run/test_smoke_wheel.py"; printf '[pytest]\n' > "$$tmp/run/pytest.ini"; \
	cd "$$tmp/run" && TFRECORD_LITE_SOURCE="$(CURDIR)" "$$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider

# The test suite from the built wheel (not the tree) on the CPythons that requires-python
# (>=3.9) admits and this machine has (pyenv's or pythonX.Y on PATH), each in its own
# .venv-pyX.Y with the newest dependencies that support it, run from tests/ with the plugin
# tests/wheel/installed_guard.py stopping the run unless tfrecord_lite comes from the venv.
# The newest (PYTHONS_FULL) runs the whole suite; the others the tests not marked slow
# (PYTHONS_SUBSET_MARK; PYTHONS_SUBSET_MARK= runs the whole suite on every version): every
# module is exercised there, and the slow tests (real processes, memory ceilings at scale,
# the demo) run whole on 3.9 (test-oldest), 3.11 (make test) and PYTHONS_FULL.
# 3.9 is left out of PYTHONS: make test-oldest runs the whole suite on it (with the lowest
# dependencies; the newest ones are those of 3.10 to 3.13 here). PYTHONS="3.9 ..." adds it.
# Each runs on PYTEST_WORKERS pytest-xdist workers (XDIST= runs it in one process); the
# venvs are installed all at once (PYTHONS_INSTALL_JOBS at a time) before the first run.
# Torch is left out (tfrecord_lite.torch's tests and docs blocks skip, saying so).
PYTHONS ?= 3.10 3.12 3.13
PYTHONS_FULL ?= $(lastword $(PYTHONS))
PYTHONS_SUBSET_MARK ?= not slow
XDIST ?= -n $(PYTEST_WORKERS)
PYTHONS_INSTALL_JOBS ?= 4
PYTHONS_ENV = PYTHON_VERSIONS="$(PYTHONS)" FULL_VERSIONS="$(PYTHONS_FULL)" \
	SUBSET_MARK="$(PYTHONS_SUBSET_MARK)" PYENV_ROOT="$(PYENV_ROOT)" XDIST="$(XDIST)" \
	INSTALL_JOBS="$(PYTHONS_INSTALL_JOBS)" PYTEST_ARGS="$(PYTEST_ARGS)"
test-pythons: dist
	$(PYTHONS_ENV) bash tests/wheel/test_pythons.sh

# Only the venvs of test-pythons (their dependencies, then the wheel): .ci/run installs them in
# the background; test-pythons then reinstalls only the wheel in each.
pythons-venvs: dist
	$(PYTHONS_ENV) bash tests/wheel/test_pythons.sh install

# --------------------------------------------------------------------------- documentation

DOCS_VENV := .venv-docs
$(DOCS_VENV)/.installed: pyproject.toml docs/requirements.txt
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python $(PIP_INSTALL) -r docs/requirements.txt
	$(DOCS_VENV)/bin/python $(PIP_INSTALL) -e .
	touch $@

docs: $(DOCS_VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/python -m mkdocs build --strict --site-dir site
	$(DOCS_VENV)/bin/python docs/check_reference.py site

# Every suite's venv (not .venv, make test's own, nor test-pythons' ones: make pythons-venvs).
venvs: $(OLDEST_VENV)/.installed $(INTEROP_VENV)/.installed $(CLOUD_VENV)/.installed \
	$(CLUSTER_VENV)/.installed $(ENGINES_VENV)/.installed $(BUILD_VENV)/.installed $(DOCS_VENV)/.installed

clean:
	rm -rf $(VENV) .venv-oldest* $(INTEROP_VENV) $(CLOUD_VENV) $(CLUSTER_VENV) $(BENCH_VENV) $(FUZZ_VENV) $(BUILD_VENV) $(DOCS_VENV) .venv-py3.* build dist site *.egg-info demo-out
