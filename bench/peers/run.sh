#!/usr/bin/env bash
# graphjit against TensorFlow (with and without XLA) and JAX, on the same work, in one
# run: builds graphjit, makes the pinned Python environment (bench/peers/.venv, which
# git ignores) and the real models (bench/models/out) on first use, and runs
# bench/peers/peers.py, which writes bench/RESULTS.md.
# Arguments go to peers.py (--threads 1 2, --rounds N, --work NAME...).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh
if ! python3 -c 'import ensurepip' 2>/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv
fi
V=bench/peers/.venv
if ! cmp -s bench/peers/requirements.txt "$V/requirements.txt"; then
  python3 -m venv "$V"
  "$V/bin/pip" install -q -r bench/peers/requirements.txt
  cp bench/peers/requirements.txt "$V/requirements.txt"
fi
# The real models (tens of MB, not in git) are made once, seeded: the same files every time.
for m in mobilenet_v2 resnet50 bert_encoder lstm_classifier; do
  [ -f bench/models/out/$m/manifest.json ] || "$V/bin/python" bench/models/make_models.py $m
done
# TensorFlow with graphjit's plugin (tf_graphjit) runs in the plugin's environment.
scripts/setup_tf_plugin.sh
exec "$V/bin/python" bench/peers/peers.py "$@"
