#!/usr/bin/env bash
# Installs xtrain from a build tree into a temporary prefix, builds examples/mlp_training against it with
# find_package(xtrain), runs the training script alone and under xrun (2x2 and 4x1), and checks the saved
# models exist. Then builds examples/custom_op (a custom op in a shared library of its own, loaded by a
# training program) against the same package and runs it: it checks the op's gradient against finite
# differences and that training lowers the loss. Last, the Python package: importable from
# <prefix>/lib/python3/dist-packages, with every xtrain library it loads from the prefix (the
# installed rpath), none from the build tree; with PyTorch, examples/custom_op's library loaded
# with ctypes and trained through xtrain.torch.custom_op (tests/install/torch_custom_op.py). And
# tests/install/session_options: a program that sets every SessionOptions member
# docs/session-options.md lists, built against the installed headers.
# Usage: install_test.sh <source dir> <build dir>
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The docs the installed headers cite are installed with them.
test -s "$work/prefix/share/doc/xtrain/docs/replication-semantics.md"
cmake -S "$src/examples/mlp_training" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/example" -j2 >/dev/null
"$work/example/train" "$work/trained.onnx"
test -s "$work/trained.onnx"
# The same script, unchanged, as 2 instances x 2 replicas and as 4 instances under xrun.
timeout 300 "$build/bin/xrun" -n 2 --num-replicas 4 "$work/example/train" "$work/trained-2x2.onnx"
timeout 300 "$build/bin/xrun" -n 4 "$work/example/train" "$work/trained-4x1.onnx"
test -s "$work/trained-2x2.onnx" && test -s "$work/trained-4x1.onnx"
cmake -S "$src/examples/custom_op" -B "$work/custom_op" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/custom_op" -j2 >/dev/null
timeout 300 "$work/custom_op/train"
# Every member of the doc's table is set by the program (so the installed headers have them all).
missing=$(sed -n '/^## Members/,/^## /p' "${src}"/docs/session-options.md |
  sed -n 's/^| `\([A-Za-z0-9_]*\)` |.*/\1/p' |
  while read -r name; do grep -q "\b$name\b" "${src}"/tests/install/session_options/main.cpp || echo "$name"; done)
if [ -n "$missing" ]; then
  echo "install test: tests/install/session_options/main.cpp does not set: $missing"
  exit 1
fi
cmake -S "${src}"/tests/install/session_options -B "$work/session_options" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/session_options" -j2 >/dev/null
"$work/session_options/set_every_option"
python_done=""
if [ -d "$work/prefix/lib/python3/dist-packages/xtrain" ]; then
  # The extension and the libraries it loads come from the prefix, not the build tree: its
  # installed rpath finds them (the build tree is not moved aside, since other tests use it).
  (cd "$work" && env -u PYTHONPATH -u LD_LIBRARY_PATH \
    PYTHONPATH="$work/prefix/lib/python3/dist-packages" /usr/bin/python3 -c '
import sys
import xtrain as popart
assert popart.SessionOptions
maps = open("/proc/self/maps").read().split()
loaded = sorted({p for p in maps if "libxtrain_" in p or "_xtrain" in p})
prefix = sys.argv[1]
outside = [p for p in loaded if not p.startswith(prefix)]
assert loaded and not outside, f"loaded from outside {prefix}: {outside}"
print(f"{len(loaded)} xtrain libraries loaded from the prefix")
try:
    import torch  # noqa: F401  (xtrain.torch is installed too; it needs PyTorch)
except ImportError:
    torch = None
if torch is not None:
    import xtrain.torch as poptorch
    assert poptorch.__file__.startswith(prefix), poptorch.__file__
    assert poptorch.trainingModel and poptorch.optim.SGD
' "$work/prefix") || { echo "install test: the installed Python package does not import from the prefix"; exit 1; }
  python_done=" and imported the Python package"
  if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    # examples/custom_op's library, loaded with ctypes into the installed package and used
    # through xtrain.torch.custom_op (tests/install/torch_custom_op.py), on a private IPU pool.
    mkdir -p "$work/locks"
    (cd "$work" && env -u PYTHONPATH -u LD_LIBRARY_PATH -u XTRAIN_IPU_IDS \
      PYTHONPATH="$work/prefix/lib/python3/dist-packages" XTRAIN_NUM_IPUS=8 \
      XTRAIN_IPU_LOCK_DIR="$work/locks" timeout 300 /usr/bin/python3 \
      "$src/tests/install/torch_custom_op.py" "$work/prefix" "$work/custom_op/libleaky_cube.so") ||
      { echo "install test: examples/custom_op's library does not work through xtrain.torch.custom_op"; exit 1; }
    python_done="$python_done and used examples/custom_op's library through xtrain.torch.custom_op"
  fi
fi
echo "install test: built and ran examples/mlp_training (alone and under xrun), examples/custom_op and tests/install/session_options against the installed package$python_done"
