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

step "Generated CI: the example project's GitHub Actions workflows, rendered into a scratch repository"
scratch=$(mktemp -d)
mkdir -p "$scratch/matrix" && cp matrix/example.yaml "$scratch/matrix/"
(cd "$scratch" && relforge workflows generate matrix/example.yaml --release 1.0 --out .github/workflows)

step "The committed .github/workflows/relforge-*.yml are current (the CI staleness gate)"
relforge workflows generate matrix/example.yaml --release 1.0 --out .github/workflows --check

step "A hand edit is caught: --check exits 1 with a unified diff"
sed -i 's/timeout-minutes: 360/timeout-minutes: 30/' "$scratch/.github/workflows/relforge-build.yml"
if (cd "$scratch" && relforge workflows generate matrix/example.yaml --release 1.0 --out .github/workflows --check); then
  echo "expected --check to fail" >&2; exit 1
fi
rm -rf "$scratch"

step "The cherry-pick bot's workflow, generated with the others (.github/workflows/relforge-bot.yml)"
grep -n "relforge bot handle" .github/workflows/relforge-bot.yml
step "Release: cut release/1.0 and tag an RC in a scratch copy of the example project"
scratch="$PWD/.relforge/demo-release"
rm -rf "$scratch" && mkdir -p "$scratch/hello/matrix" "$scratch/hello/.github/workflows"
git init -q --bare -b main "$scratch/origin.git"
cp matrix/example.yaml "$scratch/hello/matrix/example.yaml"
printf '1.0.0a0\n' >"$scratch/hello/version.txt"
cat >"$scratch/hello/.github/workflows/build.yml" <<'YAML'
name: build
on: [push]
jobs:
  wheels:
    uses: relforge-demo/hello-native/.github/workflows/_wheels.yml@main
YAML
(
  cd "$scratch/hello"
  git init -q -b main
  git config user.name "Demo Releng" && git config user.email releng@example.org
  git config commit.gpgsign false && git config tag.gpgsign false
  git add -A && git commit -q -m "hello-native 1.0 development"
  git remote add origin "$scratch/origin.git" && git push -q origin main
)
release=(--repo "$scratch/hello" --github-repo relforge-demo/hello-native)
relforge release cut 1.0 "${release[@]}"               # the plan: nothing changes yet
relforge release cut 1.0 "${release[@]}" --execute
relforge release tag 1.0.0 --rc --repo "$scratch/hello" --execute
relforge release status 1.0 --repo "$scratch/hello"
git -C "$scratch/origin.git" log --oneline --graph --decorate --all
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
step "Build the example project's Python 3.12 cells on the host (C++ and a CUDA kernel by nvcc)"
relforge build matrix/example.yaml --release 1.0 --builder host --select python=3.12 \
  --out .relforge/demo/dist

step "Build them again: nothing changed, so both come from the cache"
relforge build matrix/example.yaml --release 1.0 --builder host --select python=3.12 \
  --out .relforge/demo/dist
