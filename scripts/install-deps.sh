#!/bin/sh
# Installs every Debian 12 package pmcprof needs to build, test and benchmark.
# Idempotent: packages already present are left alone, apt-get update runs only when needed.
set -eu
# serve: libmicrohttpd-dev (HTTP server, with GnuTLS), libgnutls28-dev, libyaml-cpp-dev (the web
# config), libcrypt-dev (bcrypt); its tests: openssl (certificates), prometheus (promtool too),
# systemd (systemd-analyze verify of the unit), adduser (the package's system user), strace
# (the unit's system-call filter against what pmcprof calls).
# USDT probes: systemtap-sdt-dev (<sys/sdt.h> for tests/workloads/sdt_workload.c); the USDT
# tests run Debian's python3.11 (its python:function__entry/return probes) and PostgreSQL 15
# (postgresql-15: postgres, initdb, pg_ctl, psql, pgbench, pg_stat_statements; the test starts
# its own server in a temporary directory, so the cluster the package creates is not needed).
# Lint tests (tests/lint.py): clang-format and clang-tidy (14, with run-clang-tidy).
PKGS="build-essential cmake pkg-config clang clang-format clang-tidy llvm libbpf-dev bpftool \
libcli11-dev nlohmann-json3-dev \
libpfm4-dev libelf-dev zlib1g-dev libre2-dev libgtest-dev libgmock-dev linux-perf python3 util-linux procps \
prometheus curl jq python3-jsonschema man-db qemu-system-x86 busybox-static \
libmicrohttpd-dev libgnutls28-dev libyaml-cpp-dev libcrypt-dev openssl systemd adduser strace \
systemtap-sdt-dev postgresql-15"
# The arm64 guest test (tests/guest/test_guest_arm64_pmu.py): a cross build of pmcprof against
# the arm64 libraries, installed multi-arch beside the amd64 ones, and qemu-system-aarch64.
# Not busybox-static:arm64 nor libyaml-cpp-dev:arm64: neither is multi-arch, and installing one
# removes the amd64 package (the busybox the x86 guest boots with; the yaml-cpp headers of the
# native build). The harness unpacks those two from their .debs instead (guest.py). lld links the
# AArch32 program that test runs (clang builds it).
PKGS="$PKGS lld g++-aarch64-linux-gnu libc6-dev-arm64-cross libbpf-dev:arm64 libelf-dev:arm64 \
zlib1g-dev:arm64 libpfm4-dev:arm64 libmicrohttpd-dev:arm64 libgnutls28-dev:arm64 \
libcrypt-dev:arm64 libre2-dev:arm64 qemu-system-arm"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! { dpkg --print-architecture; dpkg --print-foreign-architectures; } | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
