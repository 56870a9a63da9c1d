#!/usr/bin/env bash
# `make test-pythons`: the test suite (PYTEST_ARGS may name folders of tests/) on each
# CPython of PYTHON_VERSIONS that this machine has, each in its own venv (.venv-pyX.Y) with
# the wheel from dist/ installed (not the tree) and the newest dependencies that support it.
# The versions in FULL_VERSIONS run the whole suite; the others run the tests that are not
# marked slow (SUBSET_MARK, a pytest -m expression; empty: the whole suite on every version).
#
# pytest runs from tests/ (not the repository root, so the tree's tfrecord_lite/ is not on
# sys.path, not even in pytest-xdist's workers), and the plugin tests/wheel/installed_guard.py
# stops the run unless tfrecord_lite comes from the venv's site-packages.
# The venvs are installed first, INSTALL_JOBS at once (pip's work is mostly downloading and
# unpacking, so they overlap well); then the suites run one after the other, each on XDIST's
# pytest-xdist workers. Each step's seconds are in the summary.
# `test_pythons.sh install` (make pythons-venvs) only installs: .ci/run does it in the
# background while other suites run. A venv's dependencies are installed once a day for a
# given pyproject.toml (the stamp in .venv-pyX.Y/.deps); the wheel itself is reinstalled on
# every run.
# A version that is not installed here is reported as not found; if none is found, or any
# install or run fails, the exit status is 1.
set -euo pipefail
mode=${1:-all}  # all: install, then run; install: only install the venvs
case $mode in all | install) ;; *) echo "usage: $0 [all|install]"; exit 2 ;; esac
root=$(pwd)
versions=${PYTHON_VERSIONS:-3.9 3.10 3.11 3.12 3.13}
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
xdist=${XDIST--n 2}  # pytest-xdist workers; XDIST= runs each suite in one process
install_jobs=${INSTALL_JOBS:-4}
full_versions=" ${FULL_VERSIONS-$versions} "
subset_mark=${SUBSET_MARK-not slow}
wheels=(dist/*.whl)
[ -f "${wheels[0]}" ] || { echo "no wheel in dist/: run make dist"; exit 1; }
wheel="$root/${wheels[0]}"

# The interpreter for version X.Y: pyenv's newest X.Y.*, else pythonX.Y on PATH.
find_python() {
    local v=$1 candidate
    for candidate in $(ls -d "$pyenv_root"/versions/"$v".* 2>/dev/null | sort -V -r); do
        if [ -x "$candidate/bin/python$v" ]; then echo "$candidate/bin/python$v"; return; fi
    done
    candidate=$(command -v "python$v" 2>/dev/null) || return 0
    "$candidate" -c 'import sys' 2>/dev/null && echo "$candidate"
    return 0
}

# install VERSION PYTHON: the venv of one version, its log in .venv-pyX.Y/install.log.
install() {
    local v=$1 py=$2 venv="$root/.venv-py$1"
    [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
    # --no-compile: the first import compiles what a run imports (see PIP_INSTALL in the Makefile)
    local pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
    # the newest dependencies for this Python, unless installed today for this pyproject.toml
    local stamp
    stamp="$(date +%F) $(sha256sum "$root/pyproject.toml" | cut -d' ' -f1)"
    if [ "$(cat "$venv/.deps" 2>/dev/null)" != "$stamp" ]; then
        "${pip[@]}" install --no-compile --upgrade --upgrade-strategy eager \
            "$wheel[fast,image,test]" "pytest-xdist>=3" || return 1
        echo "$stamp" > "$venv/.deps"
    fi
    # then the wheel itself, always reinstalled
    "${pip[@]}" install --no-compile --force-reinstall --no-deps "$wheel"
}

summary=()
status=0
ran=0
found=()
pids=()
install_start=$SECONDS
for v in $versions; do
    py=$(find_python "$v")
    if [ -z "$py" ]; then
        summary+=("python$v: not found on this machine")
        continue
    fi
    found+=("$v")
    mkdir -p "$root/.venv-py$v"
    install "$v" "$py" > "$root/.venv-py$v/install.log" 2>&1 &
    pids+=($!)
    while [ "$(jobs -rp | wc -l)" -ge "$install_jobs" ]; do sleep 1; done
done
declare -A installed=()
for i in "${!found[@]}"; do
    v=${found[$i]}
    if wait "${pids[$i]}"; then
        installed[$v]=1
    else
        echo "== python$v: the install failed:"
        cat "$root/.venv-py$v/install.log"
        summary+=("python$v: the install failed")
        status=1
    fi
done
echo "== the venvs of ${found[*]:-no Python}: installed in $((SECONDS - install_start)) s"
if [ "$mode" = install ]; then
    printf '  %s\n' "${summary[@]}"
    [ "${#found[@]}" -gt 0 ] || { echo "no Python of $versions found"; exit 1; }
    exit $status
fi

for v in "${found[@]}"; do
    [ -n "${installed[$v]:-}" ] || continue
    venv="$root/.venv-py$v"
    start=$SECONDS
    echo "== python$v ($("$venv/bin/python" -c 'import platform; print(platform.python_version())')):" \
        "tfrecord_lite $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("tfrecord-lite-np"))')"
    log="$venv/pytest.log"
    part=(); what="whole suite"
    if [[ "$full_versions" != *" $v "* && -n "$subset_mark" ]]; then
        part=(-m "$subset_mark"); what="-m '$subset_mark'"
    fi
    echo "== python$v: $what"
    set +e
    # a hung run fails after PYTEST_TIMEOUT seconds instead of eating CI's time
    (cd "$root/tests" && PYTHONPATH="$root/tests/wheel" timeout "${PYTEST_TIMEOUT:-600}" \
        "$venv/bin/python" -m pytest \
        -p installed_guard -x -q -p no:cacheprovider $xdist "${part[@]}" ${PYTEST_ARGS:-} 2>&1) | tee "$log"
    rc=${PIPESTATUS[0]}
    set -e
    ran=$((ran + 1))
    result=$(grep -E '^[=]* ?[0-9]+ (passed|failed)' "$log" | tail -1 | tr -d '=' | sed 's/^ *//')
    summary+=("python$v, $what: ${result:-no result} (exit $rc, $((SECONDS - start)) s)")
    [ "$rc" -eq 0 ] || status=1
done

echo
echo "test-pythons:"
printf '  %s\n' "${summary[@]}"
[ "$ran" -gt 0 ] || { echo "no Python of $versions found"; exit 1; }
exit $status
