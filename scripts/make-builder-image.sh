#!/usr/bin/env bash
# Make the local builder image relforge/builder:bookworm (debootstrap + docker import) in the
# engine of DOCKER_HOST.  The rootfs tarball is cached under ~/.cache/relforge/rootfs, so only
# the first run takes about a minute.  Needs root, debootstrap and a running dockerd.
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory .venv/.installed  # the venv with relforge in it
exec .venv/bin/relforge builder-image "$@"
