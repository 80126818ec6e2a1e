#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI stage: preemption scenarios on a real Kubernetes v1.37.2 control plane on 127.0.0.1.
# Builds the C ABI library (CMake), etcd v3.7, kube-apiserver, kube-controller-manager, kubectl,
# KWOK, kube-scheduler (our app.NewSchedulerCommand main with the TopoPreempt plugin, linked to
# the C ABI through cgo) and topopreempt-whatif from the Go module integrations/kubernetes, starts them with
# the DRA, Workload API, PodGroup preemption and topology-aware workload scheduling gates, and
# runs every scenario with stock kube-scheduler and with TopoPreempt on identical states (the
# 1,000-node state: TopoPreempt only, DRA only, by default), and fails if TopoPreempt does worse
# than stock, or wastes an eviction, where the requirement is visible (docs/kubernetes.md), or
# where topopreempt-whatif's plan on a kubectl dump of the state is not what TopoPreempt evicted.
# Before the scenarios, the deployment manifests (integrations/kubernetes/deploy/) are applied to
# the API server with `kubectl apply --dry-run=server`, and the built scheduler runs with exactly
# the configuration of their ConfigMap and preempts once (about 10 s).
# Builds and runs in one checkout take a lock (build/kubernetes/.lock: exclusive to build, shared
# to run), so that no run starts binaries that a concurrent build is replacing.
# Needs Go >= 1.26 and the Go module proxy; uses the standard GOCACHE/GOMODCACHE, so a warm
# build cache makes the build step take seconds. Leaves no process running.
# Usage: bash .ci/stages/kubernetes.sh [--build-only | --run-only]
#   (from anywhere; output in build/kubernetes). --build-only builds the library and the
#   binaries and runs the unit tests; --run-only runs the scenarios on what --build-only built.
#   CI runs --build-only in the background from stage 4 and --run-only at stage 12.
# Env: TOPOPREEMPT_K8S_SCALE_NODES (default 1000; 0 skips the KWOK scale scenario),
#      TOPOPREEMPT_K8S_SCALE_MODES (default dra; extres,dra also runs the scale state with
#      extended resources, where neither scheduler can see the NUMA requirement: about 6 more
#      minutes that gate nothing the small extres scenarios do not),
#      TOPOPREEMPT_K8S_SCALE_VARIANTS (default topopreempt; stock,topopreempt also runs stock
#      kube-scheduler on the scale state, where with DRA its preemptor does not run: about 5
#      more minutes, up to 10 on a loaded machine; TopoPreempt's wasted evictions are checked
#      without it),
#      TOPOPREEMPT_K8S_GO_PARALLEL (go build -p, default 2),
#      TOPOPREEMPT_K8S_CAPI_CMAKE_ARGS (more arguments for configuring the C ABI library, split
#      on spaces; CI passes those that give it the release preset's compile commands, so that
#      stage 5 takes its objects from ccache instead of compiling them again).
set -euo pipefail
PHASE=all
case "${1:-}" in
  "") ;;
  --build-only) PHASE=build ;;
  --run-only) PHASE=run ;;
  *) echo "usage: $0 [--build-only | --run-only]" >&2; exit 2 ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"
MODULE="$ROOT/integrations/kubernetes"
BUILD="$ROOT/build/kubernetes"
BIN="$BUILD/bin"
JOBS="${TOPOPREEMPT_K8S_GO_PARALLEL:-2}"

section() { printf '\n===== [kubernetes %4ds] %s =====\n' "$SECONDS" "$*"; }

# build/kubernetes/bin and build/c_api are shared by every build and run in this checkout: a
# build holds the lock exclusively, a run shares it (runs do not disturb each other: each has
# its own directory and ports). Released when the script exits.
mkdir -p "$BUILD"
exec 9>"$BUILD/.lock"
if [[ "$PHASE" == run ]]; then LOCK_MODE=-s; else LOCK_MODE=-x; fi
if ! flock -n "$LOCK_MODE" 9; then
  echo "waiting for $BUILD/.lock: another build or run of this checkout holds it"
  flock "$LOCK_MODE" 9
fi

if [[ "$PHASE" != run ]]; then
  section "Go toolchain"
  go version
  go version | grep -Eq 'go1\.(2[6-9]|[3-9][0-9])' || { echo "ERROR: needs Go >= 1.26" >&2; exit 1; }

  section "build the C ABI library (static) for cgo"
  CAPI="$ROOT/build/c_api"
  read -r -a CAPI_CMAKE_ARGS <<<"${TOPOPREEMPT_K8S_CAPI_CMAKE_ARGS:-}"
  timeout 1200 cmake -S "$ROOT" -B "$CAPI" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DTOPOPREEMPT_BUILD_C_API=ON -DTOPOPREEMPT_BUILD_TESTS=OFF -DTOPOPREEMPT_BUILD_EXAMPLES=OFF \
    -DTOPOPREEMPT_BUILD_BENCHMARKS=OFF -DTOPOPREEMPT_BUILD_TOOLS=OFF -DTOPOPREEMPT_BUILD_EXPERIMENTS=OFF \
    ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} \
    "${CAPI_CMAKE_ARGS[@]}" >/dev/null
  timeout 1800 cmake --build "$CAPI" --target topopreempt_c -j2
  export CGO_ENABLED=1
  export CGO_CFLAGS="-I$ROOT/integrations/c_api/include"
  export CGO_LDFLAGS="-L$CAPI/integrations/c_api"

  section "build the control plane, kubectl, KWOK and kube-scheduler from the module (-p=$JOBS)"
  mkdir -p "$BIN"
  cd "$MODULE"
  # Versions as Kubernetes' own build sets them (hack/lib/version.sh: -X on the variables of
  # k8s.io/component-base/version and k8s.io/client-go/pkg/version), so that `--version` names
  # the release instead of v0.0.0-master. The stock binaries are v1.37.2 (the module's version);
  # our kube-scheduler is v1.37.2+topopreempt.MAJOR.MINOR.PATCH (semver build metadata: it
  # orders and gates as v1.37.2), with topopreempt's commit and tree state. The build date is
  # the commit's (SOURCE_DATE_EPOCH when set), so that a rebuild of one commit is identical.
  K8S_VERSION="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
  [[ "$K8S_VERSION" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || { echo "ERROR: k8s.io/kubernetes $K8S_VERSION" >&2; exit 1; }
  K8S_MAJOR="${BASH_REMATCH[1]}" K8S_MINOR="${BASH_REMATCH[2]}"
  TP_VERSION="$(sed -nE 's/^#define TOPOPREEMPT_VERSION_(MAJOR|MINOR|PATCH) ([0-9]+)$/\2/p' \
    "$ROOT/include/topopreempt/version.hpp" | paste -sd.)"
  [[ "$TP_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "ERROR: topopreempt version '$TP_VERSION'" >&2; exit 1; }
  TP_COMMIT="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
  if [[ -z "$(git -C "$ROOT" status --porcelain 2>/dev/null)" ]]; then TP_TREE=clean; else TP_TREE=dirty; fi
  BUILD_DATE="$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%dT%H:%M:%SZ)"
  version_flags() { # VERSION [COMMIT TREE]: the -X flags of both version packages
    local pkg flags=""
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      flags+=" -X $pkg.gitVersion=$1 -X $pkg.gitMajor=$K8S_MAJOR -X $pkg.gitMinor=$K8S_MINOR"
      flags+=" -X $pkg.buildDate=$BUILD_DATE"
      [[ -n "${2:-}" ]] && flags+=" -X $pkg.gitCommit=$2 -X $pkg.gitTreeState=$3"
    done
    echo "$flags"
  }
  # -s -w: no symbol table or DWARF in the binaries (panics still print file:line); linking
  # kube-apiserver and the others is shorter, and this build runs beside CI's compiles. A
  # pattern=flags -ldflags applies to the packages it names (the last match wins).
  timeout 3600 go build -p="$JOBS" -trimpath -buildvcs=false \
    -ldflags="-s -w $(version_flags "$K8S_VERSION")" \
    -ldflags="./cmd/kube-scheduler=-s -w $(version_flags "$K8S_VERSION+topopreempt.$TP_VERSION" "$TP_COMMIT" "$TP_TREE")" \
    -o "$BIN/" \
    ./cmd/kube-scheduler \
    ./cmd/topopreempt-whatif \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl \
    sigs.k8s.io/kwok/cmd/kwok
  # etcd's main package is go.etcd.io/etcd/server/v3, which `go build -o DIR/` names "server".
  timeout 1800 go build -p="$JOBS" -trimpath -buildvcs=false -ldflags="-s -w" -o "$BIN/etcd" \
    go.etcd.io/etcd/server/v3
  rm -f "$BIN/server" # the name older builds of this stage used
  timeout 900 go test -p="$JOBS" -trimpath -buildvcs=false -c -o "$BIN/e2e.test" ./test/e2e
  ls -la "$BIN"
  # Outputs captured whole, not piped into a reader that may stop early (pipefail, SIGPIPE).
  SCHEDULER_VERSION="$("$BIN/kube-scheduler" --version)"
  echo "$SCHEDULER_VERSION"
  [[ "$SCHEDULER_VERSION" == "Kubernetes $K8S_VERSION+topopreempt.$TP_VERSION" ]] || {
    echo "ERROR: kube-scheduler --version does not name $K8S_VERSION and topopreempt $TP_VERSION" >&2; exit 1; }
  "$BIN/kubectl" version --client
  "$BIN/etcd" --version

  section "the plugin's unit tests (model building and the C ABI through cgo) and topopreempt-whatif's"
  timeout 600 go test -p="$JOBS" -trimpath -buildvcs=false ./plugin/ ./cmd/topopreempt-whatif/

fi

if [[ "$PHASE" == build ]]; then
  section "kubernetes build passed (scenarios: --run-only)"
  exit 0
fi
for binary in e2e.test kube-scheduler kubectl etcd topopreempt-whatif; do
  [[ -x "$BIN/$binary" ]] || { echo "ERROR: $BIN/$binary missing: run --build-only first" >&2; exit 1; }
done
cd "$MODULE"

section "scenarios: stock kube-scheduler v1.37.2 against TopoPreempt"
# The test binary traps SIGTERM and stops every process it started; timeout sends SIGTERM first.
# -baseline stock fails the run where TopoPreempt does worse than stock (compareWithBaseline).
timeout --kill-after=30 2100 "$BIN/e2e.test" -test.v -test.timeout=34m \
  -bin "$BIN" \
  -variant "stock=$BIN/kube-scheduler:$MODULE/config/stock.yaml" \
  -variant "topopreempt=$BIN/kube-scheduler:$MODULE/config/topopreempt.yaml" -baseline stock \
  -scale-nodes "${TOPOPREEMPT_K8S_SCALE_NODES:-1000}" -scale-modes "${TOPOPREEMPT_K8S_SCALE_MODES:-dra}" \
  -scale-variants "${TOPOPREEMPT_K8S_SCALE_VARIANTS:-topopreempt}" \
  -deploy "$MODULE/deploy/topopreempt-scheduler.yaml" -whatif topopreempt \
  -results "$BUILD/results"
cat "$BUILD/results/results.md"

section "no process of the run left"
if pgrep -a -f 'topopreempt-k8s\.' >/dev/null; then
  pgrep -a -f 'topopreempt-k8s\.'
  echo "ERROR: processes of the scenario run survived" >&2
  exit 1
fi
section "kubernetes stage passed"
