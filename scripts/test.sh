#!/usr/bin/env bash
# Runs every test, after installing what the tests need and is missing:
# protoc and its well-known types (etcd-client's build), Debian's etcd-server (the etcd backend),
# the Python `kubernetes` client, kubectl (only if absent: Debian's kubernetes-client) and
# cargo-nextest.
# Tests that need one of them fail, rather than skip, when it cannot be found.
set -euo pipefail
cd "$(dirname "$0")/.."

have() { command -v "$1" >/dev/null 2>&1; }
apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
have protoc || missing+=(protobuf-compiler)
# protoc's well-known types (google/protobuf/*.proto), which etcd-client's protos import: only
# recommended by protobuf-compiler, so not installed with --no-install-recommends.
[ -f /usr/include/google/protobuf/descriptor.proto ] || missing+=(libprotobuf-dev)
have etcd || [ -x /usr/bin/etcd ] || missing+=(etcd-server)
have kubectl || missing+=(kubernetes-client)
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing ${missing[*]}"
  apt_install "${missing[@]}"
fi
python3 -c 'import kubernetes' 2>/dev/null || python3 -m pip install -q kubernetes
have cargo-nextest || cargo install -q cargo-nextest --locked

export CORRAL_REQUIRE_ETCD=1 CORRAL_REQUIRE_KUBECTL=1 CORRAL_REQUIRE_PYTHON_CLIENT=1
exec cargo nextest run --workspace --all-features --no-fail-fast "$@"
