#!/bin/sh
# relforge's build driver inside a builder container (POSIX sh: any image has it).
#   /src                   the source snapshot (read-only)
#   /out                   results: raw/ (what the build command writes), final/, skip-reason
#   /relforge/control      this script, repair.sh, link_env.py, pep517_requires.py and, for the
#                          PEP 517 build, build-system.json (read-only)
#   /relforge/tools        auditwheel + patchelf borrowed from relforge (read-only)
#   /relforge/deps         the dependency axes' wheels and requirements.txt (read-only)
#   /relforge/build-wheels the build requirements' wheels and requirements.txt (read-only)
# Arguments: the build command.  Exit 86 means "this image cannot build the cell" (skipped);
# exit 87 "the build backend asks for wheels the host has not fetched" (listed in
# /out/build-requires: the host fetches them and runs the container again).
set -eu
OUT=/out
mkdir -p "$OUT/raw" "$OUT/final"
trap 'chown -R "${RELFORGE_UID:-0}:${RELFORGE_GID:-0}" "$OUT" 2>/dev/null || true' EXIT

skip() {
    printf '%s\n' "$*" > "$OUT/skip-reason"
    echo "relforge: skipped: $*"
    exit 86
}

# The cell's interpreter: manylinux's /opt/python/<tag>-<abi>, python<X.Y> on PATH, or python3.
PY=""
want="${DESIRED_PYTHON:-}"
if [ -n "$want" ]; then
    tag="cp$(echo "$want" | tr -d '.t')"
    case "$want" in *t) abi="${tag}t" ;; *) abi="$tag" ;; esac
    for candidate in "/opt/python/$tag-$abi/bin/python" "$(command -v "python$want" || true)" \
        "$(command -v python3 || true)"; do
        [ -n "$candidate" ] && [ -x "$candidate" ] || continue
        got=$("$candidate" -c 'import sys, sysconfig; print("%d.%d" % sys.version_info[:2] + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))' 2>/dev/null || true)
        if [ "$got" = "$want" ]; then
            PY="$candidate"
            break
        fi
    done
    [ -n "$PY" ] || skip "the image has no Python $want (looked for /opt/python/$tag-$abi, python$want and python3)"
fi

# The accelerator toolchain of the cell.
case "${GPU_ARCH_TYPE:-cpu}" in
    cuda)
        home="${CUDA_HOME:-/usr/local/cuda-${GPU_ARCH_VERSION:-}}"
        [ -x "$home/bin/nvcc" ] || home=/usr/local/cuda
        [ -x "$home/bin/nvcc" ] || skip "the image has no nvcc for CUDA ${GPU_ARCH_VERSION:-}"
        case "$("$home/bin/nvcc" --version)" in
            *"release ${GPU_ARCH_VERSION:-}, "*) ;;
            *) skip "the image's nvcc ($home) is not CUDA ${GPU_ARCH_VERSION:-}" ;;
        esac
        export CUDA_HOME="$home" PATH="$home/bin:$PATH"
        ;;
    rocm)
        command -v hipcc >/dev/null 2>&1 || [ -x /opt/rocm/bin/hipcc ] ||
            skip "the image has no ROCm toolchain (hipcc)"
        ;;
    xpu)
        command -v icpx >/dev/null 2>&1 || skip "the image has no oneAPI compiler (icpx)"
        ;;
esac

# `python` is the cell's interpreter; the build runs in a writable copy of the source (named as
# the host says: versioneer reads the version from the folder's name).
SRC="/tmp/relforge/${RELFORGE_SOURCE_FOLDER:-src}"
PIP_OFFLINE="--disable-pip-version-check --no-input --no-index --no-compile"
mkdir -p /tmp/relforge/bin /tmp/relforge/home "$SRC"
if [ -n "$PY" ]; then
    ln -sf "$PY" /tmp/relforge/bin/python
    ln -sf "$PY" /tmp/relforge/bin/python3
fi
export PATH="/tmp/relforge/bin:$PATH" HOME=/tmp/relforge/home
# The wheels of the cell's dependency axes (fetched on the host): installed into a private
# folder on PYTHONPATH, so the image's own Python stays untouched (not byte-compiled: the
# folder lives for this one build).
if [ -f /relforge/deps/requirements.txt ]; then
    # shellcheck disable=SC2086
    python -m pip install $PIP_OFFLINE --find-links /relforge/deps --target /tmp/relforge/axes \
        -r /relforge/deps/requirements.txt
    export PYTHONPATH="/tmp/relforge/axes${PYTHONPATH:+:$PYTHONPATH}"
fi
# The build requirements, likewise, behind the axes on PYTHONPATH: an axis decides its version.
if [ -n "$PY" ] && [ -f /relforge/build-wheels/requirements.txt ]; then
    if [ -s /relforge/build-wheels/requirements.txt ]; then
        # shellcheck disable=SC2086
        python -m pip install $PIP_OFFLINE --find-links /relforge/build-wheels \
            --target /tmp/relforge/buildenv -r /relforge/build-wheels/requirements.txt
    fi
    export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}/tmp/relforge/buildenv"
    export PATH="/tmp/relforge/buildenv/bin:$PATH"
fi
cp -a /src/. "$SRC/"
cd "$SRC"
if [ -n "$PY" ]; then  # the interpreter's linker commands without a build-time rpath
    eval "$(python /relforge/control/link_env.py --shell)"
fi
# The PEP 517 build: what the backend asks for on top (get_requires_for_build_wheel).
if [ -f /relforge/control/build-system.json ]; then
    python /relforge/control/pep517_requires.py /relforge/control/build-system.json \
        /tmp/relforge/unmet.txt
    if [ -s /tmp/relforge/unmet.txt ]; then
        # shellcheck disable=SC2086
        if ! python -m pip install $PIP_OFFLINE --find-links /relforge/build-wheels \
            --target /tmp/relforge/buildenv -r /tmp/relforge/unmet.txt; then
            cp /tmp/relforge/unmet.txt "$OUT/build-requires"
            echo "relforge: the build backend asks for wheels not fetched yet:" \
                "$(tr '\n' ' ' </tmp/relforge/unmet.txt)"
            exit 87
        fi
    fi
fi
echo "\$ $*"
"$@"

# Repair per the cell's platform policy (repair.sh defines relforge_repair), or keep as built.
. /relforge/control/repair.sh
for artifact in "$OUT"/raw/*; do
    [ -f "$artifact" ] || continue
    case "$artifact" in
        *.whl) relforge_repair "$artifact" ;;
        *) mv "$artifact" "$OUT/final/" ;;
    esac
done
