# Sourced by the bench/run-*-vs-peers.sh scripts that put PyTorch beside xtrain.
# torch_peer_ready PEERS_DIR: true when Debian's PyTorch can be the peer. PyTorch is a fair peer only on an
# optimised BLAS: on the reference BLAS its sgemm is ~50x slower and every ratio against it is wrong
# (docs/performance.md, Peers), so then the script stops (exit 1) rather than print such figures.
# Without python3-torch or the peers' folder it is false and only xtrain's figures are printed.
torch_peer_ready() {
  local peers=$1
  /usr/bin/python3 -c 'import torch' 2>/dev/null || return 1
  [ -f "$peers/check_torch_blas.py" ] || return 1
  if ! /usr/bin/python3 "$peers/check_torch_blas.py" >&2; then
    echo "$(basename "$0"): PyTorch runs on the reference BLAS, not a fair peer:" \
      "apt-get install libopenblas0-pthread, then run again" >&2
    exit 1
  fi
}
