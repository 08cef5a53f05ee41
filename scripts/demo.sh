#!/usr/bin/env bash
# `make demo`: the main job on embedded defaults.  Each stage of relforge adds its step here.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "The example project's build matrix (matrix/example.yaml, release 1.0)"
relforge matrix list matrix/example.yaml --release 1.0

step "Why does wheel-linux-x86_64-py3.12-cu130 exist?"
relforge matrix explain matrix/example.yaml --release 1.0 wheel-linux-x86_64-py3.12-cu130

step "Why is there no CUDA 12.8 aarch64 wheel in PyTorch 2.8?"
relforge matrix explain matrix/pytorch.yaml --release 2.8 wheel-linux-aarch64-py3.12-cu128

step "PyTorch 2.8 → 2.9, as release notes"
relforge matrix diff matrix/pytorch.yaml --from 2.8 --to 2.9

step "Build the example project's Python 3.12 cells on the host (C++ and a CUDA kernel by nvcc)"
relforge build matrix/example.yaml --release 1.0 --builder host --select python=3.12 \
  --out .relforge/demo/dist

step "Build them again: nothing changed, so both come from the cache"
relforge build matrix/example.yaml --release 1.0 --builder host --select python=3.12 \
  --out .relforge/demo/dist
