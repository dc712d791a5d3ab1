#!/usr/bin/env bash
# CI step: the drift of the newest vLLM on the package registry
# (spec/drift.md). Downloads the newest vllm wheel (no dependencies; the pip
# cache keeps the wheels the vLLM steps downloaded) and runs `policyspec
# drift` on it, then prints a banner with the result. Never fatal: a failed
# download, a vLLM that drifted (exit 1) or one that cannot be read (exit 2)
# is printed, and the step exits 0, so a new vLLM release does not block
# unrelated changes; the banner (and a GitHub warning annotation when run
# there) makes it seen.
#
# POLICYSPEC_PYTHON: the interpreter with policyspec installed (default
# .venv/bin/python, the venv of README's test command). pip reads its usual
# PIP_* variables (index, find-links, cache).
set -uo pipefail
cd "$(dirname "$0")/.."

python=${POLICYSPEC_PYTHON:-.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

banner() {
  # $1: the headline; the rest of the banner is read from stdin.
  echo "################################################################"
  echo "## vLLM drift: $1"
  sed 's/^/## /'
  echo "################################################################"
  if [ "${GITHUB_ACTIONS:-}" = true ]; then
    echo "::warning title=vLLM drift::$1"
  fi
}

if [ ! -x "$python" ]; then
  echo "policyspec is not installed at $python (set POLICYSPEC_PYTHON)" | banner "not checked"
  exit 0
fi

if ! timeout 900 "$python" -m pip download vllm --no-deps --only-binary=:all: \
    --quiet --dest "$tmp/wheel" >"$tmp/pip.log" 2>&1; then
  tail -n 5 "$tmp/pip.log" | banner "not checked: downloading the newest vllm wheel failed"
  exit 0
fi
wheel=$(find "$tmp/wheel" -name 'vllm-*.whl' | head -n 1)
if [ -z "$wheel" ]; then
  echo "pip download left no vllm-*.whl" | banner "not checked"
  exit 0
fi

"$python" -m policyspec drift "$wheel" >"$tmp/drift.txt" 2>&1
code=$?
name=$(basename "$wheel")
case $code in
  0) echo "== vLLM drift: $(head -n 1 "$tmp/drift.txt")" ;;
  1) banner "$name is not an API revision this policyspec drives (not fatal)" <"$tmp/drift.txt" ;;
  *) banner "$name could not be read (exit $code, not fatal)" <"$tmp/drift.txt" ;;
esac
exit 0
