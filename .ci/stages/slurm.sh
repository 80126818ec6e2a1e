#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI stage: preempt/topopreempt inside a real Slurm (Debian 12's slurmctld 22.05.8).
# On a fresh Debian 12 machine: installs Slurm and munge, fetches Debian's slurm-wlm source
# package, configures it, builds the plugin, then runs a loopback cluster (munged, slurmctld,
# 8 slurmd) through every scenario with stock preempt/partition_prio and with
# preempt/topopreempt, and checks that Slurm imposed topopreempt's verified plans; then the
# blocked-job scenario (an impossible -N4 --exclusive job pending through 20 state changes in
# 30 s, about a minute per variant): the main scheduler's median cycle and squeue's p95 latency
# with the plugin stay within 1.5x of stock's. One scenario alone:
#   run_scenarios.py --plugin-dir build/slurm/install --scenario blocked
# The plugin alone: integrations/slurm/build-plugin.sh --install build/slurm/install. Then the
# randomised differential test: two clusters (stock, topopreempt) on the same 384 random cases.
# Needs root or sudo. Leaves no daemon running (the scenario script kills and checks).
# Usage: bash .ci/stages/slurm.sh   (from the repository root; build output in build/slurm)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"
BUILD="$ROOT/build/slurm"
SUDO=()
((EUID == 0)) || SUDO=(sudo)

section() { printf '\n===== [slurm %4ds] %s =====\n' "$SECONDS" "$*"; }

section "build the plugin (apt, apt-get source, configure, compile) and install it"
# Installed where an administrator would point PluginDir; the clusters below load it from there.
timeout 900 bash integrations/slurm/build-plugin.sh --install "$BUILD/install" --test-packages "$BUILD"
for unit in munge slurmctld slurmd slurmdbd mariadb; do
  if systemctl is-enabled --quiet "$unit.service" 2>/dev/null; then
    echo "ERROR: $unit.service is enabled on the build host" >&2
    exit 1
  fi
done

section "loopback cluster: stock partition_prio vs topopreempt"
# The script traps SIGTERM and stops everything it started; timeout sends SIGTERM first.
timeout --kill-after=30 600 "${SUDO[@]}" python3 integrations/slurm/tests/run_scenarios.py \
  --plugin-dir "$BUILD/install" --results "$BUILD/results.md" --json "$BUILD/results.json"

section "randomised differential: stock partition_prio vs topopreempt on 384 random cases"
timeout --kill-after=30 1200 "${SUDO[@]}" python3 integrations/slurm/tests/run_differential.py \
  --plugin-dir "$BUILD/install" --cases 384 --min-cases 200 --results "$BUILD/differential.md" \
  --json "$BUILD/differential.json"

section "QOS preemption: preempt/qos vs topopreempt (relation = qos) with slurmdbd and MariaDB"
timeout --kill-after=30 450 "${SUDO[@]}" python3 integrations/slurm/tests/run_qos.py \
  --plugin-dir "$BUILD/install"

section "no Slurm, munge, slurmdbd or MariaDB process of ours left"
if pgrep -a -f 'topopreempt-slurm\.' >/dev/null; then
  pgrep -a -f 'topopreempt-slurm\.'
  echo "ERROR: processes of the scenario run survived" >&2
  exit 1
fi
section "slurm stage passed"
