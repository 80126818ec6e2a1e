#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds preempt/topopreempt for the Slurm that Debian 12 ships (slurmctld 22.05.8), on a fresh
# machine: installs Slurm, munge and the build dependencies, fetches Debian's own source
# package (`apt-get source slurm-wlm`, after adding deb-src entries that mirror the Debian deb
# entries), configures it with Debian's flags (for config.h and slurmctld's internal headers;
# nothing of Slurm is compiled), and compiles the plugin.
#
# Usage: integrations/slurm/build-plugin.sh [--install DIR] [--test-packages] [build-dir]
#        (default build-dir: build/slurm)
# Output: <build-dir>/plugin/preempt_topopreempt.so; then builds and runs tests/test_engine.c.
# --install DIR: then copies the plugin to DIR/preempt_topopreempt.so (mode 0755), the
# directory to put first in slurm.conf's PluginDir (docs/slurm.md uses /opt/topopreempt/slurm).
# --test-packages: also installs slurmdbd and mariadb-server, which tests/run_qos.py needs.
# Packages installed here get no enabled systemd unit: a build host runs no Slurm daemon.
# Idempotent: each setup step is skipped when done.
# Needs root (or sudo) for apt. The source tree stays under <build-dir> (gitignored).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
INSTALL=""
BUILD_ARG=""
TEST_PACKAGES=0
while (($#)); do
  case "$1" in
    --install)
      [[ $# -ge 2 && -n "$2" ]] || { echo "build-plugin: --install needs a directory" >&2; exit 2; }
      INSTALL="$2"
      shift 2
      ;;
    --test-packages)
      TEST_PACKAGES=1
      shift
      ;;
    -*) echo "build-plugin: unknown option $1" >&2; exit 2 ;;
    *)
      [[ -z "$BUILD_ARG" ]] || { echo "build-plugin: one build directory only" >&2; exit 2; }
      BUILD_ARG="$1"
      shift
      ;;
  esac
done
# PluginDir wants an absolute path.
[[ -z "$INSTALL" ]] || INSTALL="$(realpath -m "$INSTALL")"
BUILD="$(mkdir -p "${BUILD_ARG:-$ROOT/build/slurm}" && cd "${BUILD_ARG:-$ROOT/build/slurm}" && pwd)"
SUDO=()
((EUID == 0)) || SUDO=(sudo)
export DEBIAN_FRONTEND=noninteractive

step() { printf '[build-plugin %4ds] %s\n' "$SECONDS" "$*"; }

packages=(slurmctld slurmd slurm-client munge libmunge-dev dpkg-dev gcc g++ make
          libeigen3-dev librange-v3-dev python3)
((TEST_PACKAGES)) && packages+=(slurmdbd mariadb-server)
missing=()
for package in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" == "install ok installed" ]] ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  step "apt-get install ${missing[*]}"
  # The packages' postinst would start the system's munged and slurmd/slurmctld; the tests run
  # their own private daemons and must leave none behind, so forbid service starts while
  # installing (policy-rc.d, honoured by invoke-rc.d and deb-systemd-invoke).
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
    "${SUDO[@]}" chmod 0755 "$policy"
    own_policy=1
    trap '"${SUDO[@]}" rm -f "$policy"' EXIT
  fi
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
  # policy-rc.d stops the starts, not the enabling: the packages' postinst still enables their
  # units, which would start the system's munged, slurmctld and slurmd at the next boot.
  for unit in munge slurmctld slurmd slurmdbd mariadb; do
    package="$unit"
    [[ "$unit" == mariadb ]] && package=mariadb-server
    [[ " ${missing[*]} " == *" $package "* ]] || continue
    if command -v systemctl >/dev/null; then
      "${SUDO[@]}" systemctl disable "$unit.service" >/dev/null 2>&1 || true
    fi
    "${SUDO[@]}" rm -f "/etc/systemd/system/multi-user.target.wants/$unit.service"
    step "left $unit.service disabled"
  done
  if ((own_policy)); then
    "${SUDO[@]}" rm -f "$policy"
    trap - EXIT
  fi
fi
version="$(dpkg-query -W -f='${Version}' slurmctld)"
step "slurmctld $version"

SOURCE="$BUILD/source"
tree="$(find "$SOURCE" -maxdepth 1 -mindepth 1 -type d -name 'slurm-wlm-*' 2>/dev/null | head -n1 || true)"
if [[ -z "$tree" || "$(cat "$SOURCE/version" 2>/dev/null)" != "$version" ]]; then
  # Not `apt-cache ... | grep -q`: under pipefail grep's early exit fails the pipeline.
  sources="$(apt-cache showsrc slurm-wlm 2>/dev/null || true)"
  if ! grep -q '^Version:' <<<"$sources"; then
    step "adding deb-src entries (/etc/apt/sources.list.d/topopreempt-debian-src.sources)"
    python3 "$HERE/enable-deb-src.py" >"$BUILD/debian-src.sources"
    "${SUDO[@]}" install -m 0644 "$BUILD/debian-src.sources" \
      /etc/apt/sources.list.d/topopreempt-debian-src.sources
    "${SUDO[@]}" apt-get update -q
  fi
  step "apt-get source slurm-wlm=$version"
  rm -rf "$SOURCE"
  mkdir -p "$SOURCE"
  (cd "$SOURCE" && apt-get source -q "slurm-wlm=$version" >/dev/null)
  echo "$version" >"$SOURCE/version"
  tree="$(find "$SOURCE" -maxdepth 1 -mindepth 1 -type d -name 'slurm-wlm-*' | head -n1)"
fi

if [[ ! -f "$tree/config.h" ]]; then
  # Debian's flags (debian/rules, override_dh_auto_configure, plus what dh_auto_configure
  # adds): what shapes config.h and so the layout of the structures the plugin reads.
  step "configure (Debian's flags)"
  multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
  (cd "$tree" && ./configure --prefix=/usr --libdir="/usr/lib/$multiarch" --sysconfdir=/etc/slurm \
    --localstatedir=/var --with-munge --enable-pam --without-rpath --disable-debug \
    --enable-multiple-slurmd SUCMD=/bin/su SLEEP_CMD=/bin/sleep >"$BUILD/configure.log" 2>&1) || {
    tail -n 30 "$BUILD/configure.log"
    exit 1
  }
fi

GEN="$BUILD/generated"
mkdir -p "$GEN" "$BUILD/plugin" "$BUILD/obj"
# src/common/list.c keeps its list layout private; the plugin must walk job_list while
# slurmctld holds that list's lock (see preempt_topopreempt.c), so it uses this exact copy.
awk '/^struct (listNode|listIterator|xlist) \{/,/^\};/' "$tree/src/common/list.c" >"$GEN/tp_list_layout.h.tmp"
grep -q '^struct xlist {' "$GEN/tp_list_layout.h.tmp" && grep -q 'LIST_MAGIC 0xDEADBEEF' "$tree/src/common/list.c" || {
  echo "build-plugin: src/common/list.c has no 'struct xlist' or a different LIST_MAGIC" >&2
  exit 1
}
{
  echo "/* Generated by build-plugin.sh from $(basename "$tree")/src/common/list.c. */"
  cat "$GEN/tp_list_layout.h.tmp"
} >"$GEN/tp_list_layout.h"
rm -f "$GEN/tp_list_layout.h.tmp"

step "compile the plugin"
cc="${CC:-gcc}"
cxx="${CXX:-g++}"
"$cc" -c -fPIC -O2 -g -Wall -DHAVE_CONFIG_H -I"$tree" -I"$tree/slurm" -I"$tree/src/common" \
  -I"$GEN" -I"$HERE/src" "$HERE/src/preempt_topopreempt.c" -o "$BUILD/obj/preempt_topopreempt.o"
# The C++ half is held to the project's flags (-Werror) and sees no Slurm header at all.
# It takes minutes (all three solvers), so it is rebuilt only when it or a header is newer.
engine="$BUILD/obj/tp_slurm_engine.o"
if [[ ! -f "$engine" ]] || [[ -n "$(find "$HERE/src" "$ROOT/include" -newer "$engine" -type f | head -n1)" ]]; then
  "$cxx" -c -fPIC -O2 -g -std=c++20 -Wall -Wextra -Wpedantic -Werror \
    -Wno-error=restrict -Wno-error=maybe-uninitialized \
    -I"$ROOT/include" -isystem /usr/include/eigen3 -I"$HERE/src" \
    "$HERE/src/tp_slurm_engine.cpp" -o "$engine"
fi
# Slurm's symbols (job_list, info(), bit_test(), ...) resolve against slurmctld and
# libslurmfull when slurmctld loads the plugin, as for Slurm's own plugins.
"$cxx" -shared -o "$BUILD/plugin/preempt_topopreempt.so" \
  "$BUILD/obj/preempt_topopreempt.o" "$BUILD/obj/tp_slurm_engine.o"
step "built $BUILD/plugin/preempt_topopreempt.so"

# The planner's own unit test, through the C interface and without Slurm.
"$cc" -O2 -g -Wall -Wextra -Werror -I"$HERE/src" "$HERE/tests/test_engine.c" \
  "$BUILD/obj/tp_slurm_engine.o" -lstdc++ -lm -o "$BUILD/obj/test_engine"
"$BUILD/obj/test_engine"

if [[ -n "$INSTALL" ]]; then
  "${SUDO[@]}" install -D -m 0755 "$BUILD/plugin/preempt_topopreempt.so" "$INSTALL/preempt_topopreempt.so"
  step "installed $INSTALL/preempt_topopreempt.so (slurm.conf: PluginDir=$INSTALL:<Slurm's own plugin directory>)"
fi
