#!/usr/bin/env bash
# Installs xtrain from a build tree into a temporary prefix, builds examples/mlp_training against it with
# find_package(xtrain), runs the training script and checks the saved model exists.
# Usage: install_test.sh <source dir> <build dir>
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/examples/mlp_training" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/example" -j2 >/dev/null
"$work/example/train" "$work/trained.onnx"
test -s "$work/trained.onnx"
echo "install test: built and ran examples/mlp_training against the installed package"
