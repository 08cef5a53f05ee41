#!/usr/bin/env bash
# `make demo`: a release rehearsal of the example project on embedded defaults — no server, no
# credentials.  Everything it writes stays under .relforge/ (the local store is the example
# matrix's `publishing.store`, file://.relforge/store).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

MATRIX=matrix/example.yaml
DEMO="$PWD/.relforge/demo"
DIST="$DEMO/dist"
SELECT=(--select python=3.12)          # two cells (cpu, cu130) keep the demo short
mkdir -p "$DEMO"

step "1. The build matrix: cells, why one exists, what changed between two PyTorch releases"
relforge matrix list "$MATRIX" --release 1.0
relforge matrix explain "$MATRIX" --release 1.0 wheel-linux-x86_64-py3.12-cu130
relforge matrix explain matrix/pytorch.yaml --release 2.8 wheel-linux-aarch64-py3.12-cu128
relforge matrix diff matrix/pytorch.yaml --from 2.8 --to 2.9

step "2. Generated CI: the committed workflows are current, and a hand edit is caught"
relforge workflows generate "$MATRIX" --release 1.0 --out .github/workflows --no-upload --check
scratch="$DEMO/ci"
rm -rf "$scratch" && mkdir -p "$scratch/matrix" && cp "$MATRIX" "$scratch/matrix/"
(cd "$scratch" && relforge workflows generate matrix/example.yaml --release 1.0 \
  --out .github/workflows --no-upload)
sed -i 's/timeout-minutes: 360/timeout-minutes: 30/' "$scratch/.github/workflows/relforge-build.yml"
if (cd "$scratch" && relforge workflows generate matrix/example.yaml --release 1.0 \
  --out .github/workflows --no-upload --check); then
  echo "expected --check to fail" >&2; exit 1
fi

step "3. Build the RC's Python 3.12 cells on the host (C++ and a CUDA kernel by nvcc)"
relforge build "$MATRIX" --release 1.0 --channel test --tag v1.0.0-rc1 --builder host \
  "${SELECT[@]}" --out "$DIST"
step "   …and again: nothing changed, so both come from the cache"
relforge build "$MATRIX" --release 1.0 --channel test --tag v1.0.0-rc1 --builder host \
  "${SELECT[@]}" --out "$DIST"

step "4. Validate them against their cells, statically and by installing each one"
relforge validate "$MATRIX" --release 1.0 --channel test --manifest "$DIST/relforge-manifest.json" \
  "${SELECT[@]}" --runtime
step "   …the CUDA wheel's device code, read from its fat binary (RF-V048 held it to the arch list)"
relforge wheel inspect "$DIST"/hello_native-*+cu130-*.whl | sed -n '/device code/,/└/p'

step "5. Publish to the test channel of the local store (the plan first, then --execute)"
rm -rf .relforge/store                 # the demo's own store: start empty every run
relforge publish "$MATRIX" --channel test --manifest "$DIST/relforge-manifest.json"
relforge publish "$MATRIX" --channel test --manifest "$DIST/relforge-manifest.json" --execute
step "   …only whole releases reach the pages: the demo built 2 of 8 cells, so it says --partial"
relforge index "$MATRIX" --channel test --partial --execute
step "   …a rerun changes nothing (the --partial decision is recorded)"
relforge publish "$MATRIX" --channel test --manifest "$DIST/relforge-manifest.json" --execute

step "6. pip installs the RC from the generated index (served over HTTP on 127.0.0.1)"
port=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python -m http.server "$port" --bind 127.0.0.1 --directory .relforge/store >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
py312=$(python -c 'from relforge.interpreters import find_interpreter as f; print(f("3.12").executable)')
rm -rf "$DEMO/venv" && "$py312" -m venv "$DEMO/venv"
for _ in 1 2 3 4 5 6 7 8 9 10; do
  python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break
  sleep 0.2
done
"$DEMO/venv/bin/pip" --isolated install --quiet --no-cache-dir \
  --index-url "http://127.0.0.1:$port/whl/test/cpu/" hello-native
"$DEMO/venv/bin/python" -c "import hello_native; print(hello_native.build_info())"
step "   …or from the channel root whl/test/, which lists every variant folder's files"
"$DEMO/venv/bin/pip" --isolated install --quiet --no-cache-dir --force-reinstall --no-deps \
  --index-url "http://127.0.0.1:$port/whl/test/" "hello-native==1.0.0+cpu"
"$DEMO/venv/bin/python" -c "import hello_native; print(hello_native.build_info())"

step "   …serving: here any static server on the store; on S3, \`store policy\` prints the least bucket policy"
sed 's|^  store: file://.relforge/store.*|  store: s3://demo-downloads/dl|' "$MATRIX" >"$DEMO/s3-example.yaml"
relforge store policy "$DEMO/s3-example.yaml"   # public read of whl/ and libtorch/ only; backups stay private

step "7. Promote the validated bytes test → release (server-side copies, hashes verified)"
relforge promote "$MATRIX" --version 1.0.0 --from test --to release --partial --execute
step "   …and verify it: every object hashed against its stored manifest, every page read back"
relforge verify "$MATRIX" --channel release

step "7b. Yank a bad file (PEP 592): the plan, then the pages say so, then undo it"
yank=(--version 1.0.0 --cell wheel-linux-x86_64-py3.12-cu130 --channel release --reason "demo: bad build")
relforge yank "$MATRIX" "${yank[@]}"
relforge yank "$MATRIX" "${yank[@]}" --execute
grep -o 'data-yanked="[^"]*"' .relforge/store/whl/cu130/hello-native/index.html
grep -o 'data-yanked="[^"]*"' .relforge/store/whl/hello-native/index.html  # the channel root too
relforge yank "$MATRIX" --version 1.0.0 --cell wheel-linux-x86_64-py3.12-cu130 --channel release --undo --execute

step "7c. The C++ library as a native archive (libtorch-style zip): build, validate, publish, promote"
ARCH_DIST="$DEMO/archive-dist"
ARCHIVE=(--cell libtorch-linux-x86_64-cpu-shared-with-deps-release)
ZIP=hello-native-linux-x86_64-shared-with-deps-release-1.0.0   # libtorch.file_name's default
relforge build "$MATRIX" --release 1.0 --channel test --tag v1.0.0-rc1 --builder host \
  "${ARCHIVE[@]}" --out "$ARCH_DIST"
python -m zipfile -l "$ARCH_DIST/$ZIP+cpu.zip"
relforge validate "$MATRIX" --release 1.0 --channel test --manifest "$ARCH_DIST/relforge-manifest.json" \
  --select package_type=libtorch
relforge publish "$MATRIX" --channel test --manifest "$ARCH_DIST/relforge-manifest.json" --execute
cat ".relforge/store/libtorch/test/cpu/$ZIP+cpu.zip.sha256"
relforge promote "$MATRIX" --version 1.0.0 --from test --to release --partial --execute
(cd .relforge/store/libtorch/cpu && sha256sum -c "$ZIP+cpu.zip.sha256")
relforge verify "$MATRIX" --channel release
step "   …its download URL, as \`matrix docs\` lists it, served by the store's HTTP server"
relforge matrix docs "$MATRIX" --download-url "http://127.0.0.1:$port" | grep -A4 "native archives"
python - "http://127.0.0.1:$port/libtorch/cpu/$ZIP%2Bcpu.zip" <<'PY'
import hashlib, sys, urllib.request
data = urllib.request.urlopen(sys.argv[1]).read()
print(f"downloaded {sys.argv[1]}: {len(data)} B, sha256 {hashlib.sha256(data).hexdigest()}")
PY

step "8. Stage the PyPI-default wheel for PyPI (local version dropped: 1.0.0+cpu → 1.0.0)"
relforge pypi stage "$MATRIX" --version 1.0.0 --execute
ls .relforge/store/pypi-staging/1.0.0/

step "8b. Experimental: the RC's wheels as PEP 825 variant wheels in the test channel's variant/ folder"
relforge variant publish "$MATRIX" --channel test --manifest "$DIST/relforge-manifest.json" --execute
relforge variant check .relforge/store/whl/test/variant
cat .relforge/store/whl/test/variant/hello_native-1.0.0-variants.json

step "9. The install selector site, rendered from the matrix (commands point at the local store)"
relforge site "$MATRIX" --out .relforge/site --download-url "file://$PWD/.relforge/store"
echo "open file://$PWD/.relforge/site/index.html (compatibility.html, published_versions.json beside it)"
shown() {  # the command the page shows for release × linux-x86_64 × pip × $1
  python - "$1" <<'PY'
import json, sys
data = json.load(open(".relforge/site/published_versions.json"))
want = {"channel": "release", "platform": "linux-x86_64", "installer": "pip", "accelerator": sys.argv[1]}
print(next(c["command"] for c in data["releases"][0]["combinations"] if c["selection"] == want))
PY
}
cpu=$(shown cpu)
cuda=$(shown cu130)
echo "release × CPU:       $cpu"
echo "release × CUDA 13.0: $cuda"
rm -rf "$DEMO/venv-site" && "$py312" -m venv "$DEMO/venv-site"
read -ra words <<<"$cpu"                # CPU is linux-x86_64's PyPI default: a PyPI command,
"$DEMO/venv-site/bin/pip" --isolated install --quiet --no-cache-dir --no-index \
  --find-links .relforge/store/pypi-staging/1.0.0 "${words[@]:2}"   # the staged files as PyPI
"$DEMO/venv-site/bin/python" -c "import importlib.metadata as m; print('installed hello-native', m.version('hello-native'))"
read -ra words <<<"$cuda"               # exactly as shown: the store's release folder
"$DEMO/venv-site/bin/pip" --isolated install --quiet --no-cache-dir --disable-pip-version-check \
  --force-reinstall "${words[@]:2}"
"$DEMO/venv-site/bin/python" -c "import hello_native; print(hello_native.build_info())"

step "10. Release branch: cut release/1.0 and tag an RC in a scratch copy of the project"
scratch="$DEMO/release"
rm -rf "$scratch" && mkdir -p "$scratch/hello/matrix" "$scratch/hello/.github/workflows"
git init -q --bare -b main "$scratch/origin.git"
cp "$MATRIX" "$scratch/hello/matrix/example.yaml"
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

step "11. Dependency axes: examples/numpy-abi built against numpy 1.26 and numpy 2.x (from PyPI)"
NUMPY_MATRIX=matrix/numpy-abi.yaml
NUMPY_DIST="$DEMO/numpy-dist"
relforge matrix list "$NUMPY_MATRIX" --release 1.0 --channel test --select python=3.12
relforge build "$NUMPY_MATRIX" --release 1.0 --channel test --tag v1.0.0-rc1 --builder host \
  --select python=3.12 --out "$NUMPY_DIST"
relforge validate "$NUMPY_MATRIX" --release 1.0 --channel test --select python=3.12 \
  --manifest "$NUMPY_DIST/relforge-manifest.json"
relforge publish "$NUMPY_MATRIX" --channel test --manifest "$NUMPY_DIST/relforge-manifest.json" \
  --partial --execute
step "   …and its dependency closure: numpy 1.26 for the numpy1 wheel, 2.x for numpy2, from PyPI"
if relforge deps check "$NUMPY_MATRIX" --channel test --select python=3.12; then
  echo "expected deps check to fail before the mirror (numpy is not in the channel)" >&2; exit 1
fi
relforge deps mirror "$NUMPY_MATRIX" --channel test --select python=3.12 \
  --upstream-index https://pypi.org/simple/ --execute
relforge deps check "$NUMPY_MATRIX" --channel test --select python=3.12
step "   …one index folder, and pip picks the wheel that fits the numpy asked for"
for numpy in "numpy==1.26.*" "numpy>=2,<3"; do
  venv="$DEMO/venv-$(echo "$numpy" | tr -c 'a-z0-9\n' '_')"
  rm -rf "$venv" && "$py312" -m venv "$venv"
  # from the channel alone (its closure is mirrored); naming the numpy keeps pip from taking
  # the highest label, numpy2, and upgrading numpy to fit it
  "$venv/bin/pip" --isolated install --quiet --disable-pip-version-check --no-cache-dir \
    --index-url "http://127.0.0.1:$port/whl/test/cpu/" numpy-abi "$numpy"
  "$venv/bin/python" -c "import numpy, numpy_abi as m; print(f'numpy {numpy.__version__}: numpy-abi {m.__version__}, built with numpy {m.built_with()}, total={m.total([1, 2, 3.5])}')"
done

step "11b. A PyTorch C++ extension (examples/torch-muladd) built against torch from a dependency axis"
TORCH_MATRIX=matrix/torch-muladd.yaml
TORCH_DIST="$DEMO/torch-dist"
TORCH_CELL=wheel-linux-x86_64-py3.11-cpu-torch2.13
relforge build "$TORCH_MATRIX" --release 1.0 --channel test --tag v1.0.0-rc1 --builder host \
  --out "$TORCH_DIST"
step "   …auditwheel left torch's libraries out (the wheel requires torch), and validation agrees"
grep -E "^INFO:auditwheel.lddtree:Excluding|relforge: the wheel said" ".relforge/logs/$TORCH_CELL.log"
relforge wheel inspect "$TORCH_DIST"/torch_muladd-1.0.0+cpu-*.whl | grep -E "needs|declared by"
relforge validate "$TORCH_MATRIX" --release 1.0 --channel test \
  --manifest "$TORCH_DIST/relforge-manifest.json" --runtime
relforge publish "$TORCH_MATRIX" --channel test --manifest "$TORCH_DIST/relforge-manifest.json" \
  --execute
step "   …pip installs it from the channel's index (torch from pip's own sources: the CPU wheel)"
py311=$(python -c 'from relforge.interpreters import find_interpreter as f; print(f("3.11").executable)')
rm -rf "$DEMO/venv-torch" && "$py311" -m venv "$DEMO/venv-torch"
"$DEMO/venv-torch/bin/pip" install --quiet --no-cache-dir --no-compile \
  --index-url "http://127.0.0.1:$port/whl/test/cpu/" torch-muladd
"$DEMO/venv-torch/bin/python" -c "import torch, torch_muladd as m; print('torch-muladd', m.__version__, 'on torch', torch.__version__, m.muladd(torch.ones(3), torch.full((3,), 2.0), 0.5).tolist())"

step "12. A project of your own: \`relforge init\` writes a starter matrix, and its CI lints clean"
scratch="$DEMO/new-project"
rm -rf "$scratch" && mkdir -p "$scratch/src/hello_ext"
cat >"$scratch/pyproject.toml" <<'TOML'
[project]
name = "hello-ext"
version = "0.3.0"
requires-python = ">=3.10"
TOML
(
  cd "$scratch"
  git init -q -b main
  relforge init
  relforge workflows generate matrix/hello-ext.yaml --release 0.3 --out .github/workflows --no-upload
  relforge workflows generate matrix/hello-ext.yaml --release 0.3 --out .github/workflows --no-upload --check
  actionlint -no-color && echo "actionlint: no findings (runner labels from .github/actionlint.yaml)"
)

step "The cherry-pick bot runs from the generated .github/workflows/relforge-bot.yml"
grep -n "relforge bot handle" .github/workflows/relforge-bot.yml

step "13. The generated CI on a real Actions runner: \`make demo-ci\` (about 6½ minutes)"
echo "act runs the example's workflows as a hosted ubuntu-24.04 runner would: a pull request"
echo "(builds and tests, uploads nothing), then the RC tag v1.0.0-rc1 (every cell built, tested,"
echo "uploaded to S3 on moto and indexed; pip and uv install it).  Docs: docs/guide/generated-ci.md."

step "relforge on your PATH"
echo "make demo installed relforge into $(pwd)/.venv; to run it from any folder:"
echo "  export PATH=\"$(pwd)/.venv/bin:\$PATH\""
echo "README.md (Getting started) walks your own project from \`relforge init\` to a first RC."
