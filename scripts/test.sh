#!/usr/bin/env bash
# Runs every test, after installing what the tests need and is missing:
# Debian's etcd-server (the etcd backend, single members and three-member clusters), the Python
# `kubernetes` client, kubectl (only if absent: Debian's kubernetes-client), iproute2 and cargo-nextest.
# The local provider's tests need root (network namespaces, cgroups), as CI runs them.
# No protobuf compiler: the etcd client's generated code is checked in
# (crates/corral-store/proto/etcd.proto).
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
have etcd || [ -x /usr/bin/etcd ] || missing+=(etcd-server)
have kubectl || missing+=(kubernetes-client)
# kill(1) signals the members of the etcd test clusters; script(1) gives `corral up` a terminal.
[ -x /bin/kill ] || [ -x /usr/bin/kill ] || missing+=(procps)
have script || missing+=(bsdutils)
# ip(8) makes the local provider's machines: network namespaces, veth pairs, bridges.
have ip || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing ${missing[*]}"
  apt_install "${missing[@]}"
fi
# The Python client: pip where Python is the user's own (pyenv, a venv); where pip refuses to touch
# a system Python (PEP 668, Debian's own python3), Debian's package of it.
if ! python3 -c 'import kubernetes' 2>/dev/null; then
  python3 -m pip install -q kubernetes 2>/dev/null || apt_install python3-kubernetes
  python3 -c 'import kubernetes'
fi
have cargo-nextest || cargo install -q cargo-nextest --locked

# Formatting is checked first: it takes a second and fails on any file rustfmt would change.
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all --check
else
  echo "WARNING: rustfmt is not installed here; formatting not checked" >&2
fi

# Lints: [workspace.lints] in Cargo.toml (clippy's `all`, unsafe code denied), warnings as errors.
if ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add clippy >/dev/null 2>&1 || { echo "clippy is not installed and rustup cannot add it" >&2; exit 1; }
fi
cargo clippy -q --workspace --all-targets -- -D warnings

export CORRAL_REQUIRE_ETCD=1 CORRAL_REQUIRE_KUBECTL=1 CORRAL_REQUIRE_PYTHON_CLIENT=1
# The default features: what users build with the README's first command.
exec cargo nextest run --workspace --no-fail-fast "$@"
