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

step "Publish the example wheels to the test channel, index it, promote to release, stage for PyPI"
MANIFEST=dist/relforge-manifest.json
if [ -f "$MANIFEST" ]; then
  # The version to promote: the public version of the manifest's artifacts (1.0.0+cpu → 1.0.0).
  VERSION=$(python -c 'import json, sys; from packaging.version import Version
m = json.load(open(sys.argv[1]))
print(sorted({Version(e["version"]).public for e in m["entries"].values()})[-1])' "$MANIFEST")
  relforge publish matrix/example.yaml --channel test --manifest "$MANIFEST" --execute
  relforge index matrix/example.yaml --channel test
  relforge promote matrix/example.yaml --version "$VERSION" --from test --to release --execute
  relforge pypi stage matrix/example.yaml --version "$VERSION" --execute
  echo "pip install hello-native --index-url file://$PWD/.relforge/store/whl/cpu/  (or serve .relforge/store over HTTP)"
else
  echo "skipped: no $MANIFEST yet (relforge build writes it, relforge validate adds the verdicts)"
fi
