#!/usr/bin/env bash
# CI step: policyspec against a real vLLM release (0.33.0 or 0.34.0),
# CPU-only, in a virtual environment of its own (README, "Checking against
# an installed vLLM").
#
# vLLM's wheel pins CUDA packages and a server's worth of dependencies; the
# offload code needs none of them to run on the CPU. So: the CPU build of
# torch, vLLM itself without dependencies, and only the packages that
# importing vllm.v1.kv_offload.cpu.manager (the heaviest module the tests
# load: it reaches vllm.config) needs, each within the range vLLM declares.
# Then the vLLM-dependent tests, with POLICYSPEC_REQUIRE_VLLM=1: in this venv
# a vLLM that does not import is an error, never a skip.
#
# The venv is $POLICYSPEC_VLLM_VENV, default .venv-vllm033/ or
# .venv-vllm034/ in the repo (git-ignored); it is reused when it exists (pip
# then installs nothing).
#
# Usage: .ci/vllm.sh VERSION [install|test|all] (default all). .ci/run
# starts `install` of both releases while the main test suite runs (the
# install mostly waits on the registries) and runs `test` after it.
set -euo pipefail
version=${1:-}
mode=${2:-all}
case "$version" in
  0.33.0|0.34.0) ;;
  *) echo "usage: .ci/vllm.sh 0.33.0|0.34.0 [install|test|all]" >&2; exit 2 ;;
esac
case "$mode" in
  install|test|all) ;;
  *) echo "usage: .ci/vllm.sh VERSION [install|test|all]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."

short=$(echo "$version" | cut -d. -f1,2 | tr -d .)
venv=${POLICYSPEC_VLLM_VENV:-$PWD/.venv-vllm$short}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS

pip_quiet() {
  # pip warns at length that vLLM's other dependencies are missing (they are
  # left out on purpose); keep its output for a failure only.
  if ! "$venv/bin/pip" install -q --no-compile "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo ".ci/vllm.sh $version: pip install $* failed" >&2
    exit 1
  fi
}

if [ "$mode" = test ] && [ ! -x "$venv/bin/python" ]; then
  echo ".ci/vllm.sh $version test: no venv at $venv (run install first)" >&2
  exit 1
fi
if [ "$mode" != test ]; then
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# torch==2.13.0 is the CPU build on this machine's disk (vLLM 0.33.0 and
# 0.34.0 pin a CUDA build of several GB; the offload code runs on either).
pip_quiet torch==2.13.0
pip_quiet "vllm==$version" --no-deps
pip_quiet \
  packaging regex numpy msgspec psutil 'pyzmq>=25.0.0' cbor2 cachetools cloudpickle pybase64 \
  py-cpuinfo pyyaml 'requests>=2.33.0' 'aiohttp>=3.14.4' 'pydantic>=2.12.0' \
  'prometheus_client>=0.18.0' 'pillow>=13.0.0' 'openai>=2.25.0' 'oss-harmony>=0.0.11' \
  'transformers>=5.16.1,<5.21.0' 'fastapi>=0.133.0,<0.137.0' uvloop partial-json-parser \
  'llguidance>=1.7.0,<1.8.0' 'xgrammar==0.2.8'
pip_quiet -e '.[test]'

"$venv/bin/python" - "$version" <<'EOF'
import torch
import vllm
import vllm.v1.kv_offload.cpu.manager  # noqa: F401  (fails the step if it does not import)
assert torch.version.cuda is None, f"torch {torch.__version__} is a CUDA build"
import sys
assert vllm.__version__ == sys.argv[1], vllm.__version__
print(f"vLLM {vllm.__version__}, torch {torch.__version__} (CPU)")
EOF
echo "== vLLM $version venv ready in $((SECONDS - start)) s: $venv"
fi
[ "$mode" = install ] && exit 0

# policyspec drift names the installed vLLM's revision (exit 0), or fails
# the step naming every difference (exit 1): this release is one policyspec
# follows, so it must know it.
"$venv/bin/policyspec" drift
# The whole checks of vLLM's in-tree policies run on both cores; the other
# tests print their figures (comparisons with the real manager), which
# only a run without xdist workers shows.
POLICYSPEC_REQUIRE_VLLM=1 "$venv/bin/python" -m pytest -q -n 2 -rs tests/test_installed_vllm.py
POLICYSPEC_REQUIRE_VLLM=1 "$venv/bin/python" -m pytest -q -p no:xdist -rs \
  tests/test_vllm_differential.py tests/test_vllm_standins_match.py \
  tests/test_history_vllm.py tests/test_trace_vllm.py
echo "== vLLM $version step: $((SECONDS - start)) s"
