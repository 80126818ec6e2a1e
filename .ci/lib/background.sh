# SPDX-License-Identifier: MIT
# Background jobs for CI scripts (sourced by .ci/run and .ci/stages/fuzz.sh): each job runs in
# its own process group with its output in $BACKGROUND_LOG_DIR/<name>.log, printed when the job
# is reported. The sourcing script sets BACKGROUND_LOG_DIR and calls stop_background from its
# EXIT trap, so that an early exit stops what is still running.
declare -A BACKGROUND_PID BACKGROUND_LOG

# start_in_background NAME COMMAND...
start_in_background() {
  local name=$1
  shift
  BACKGROUND_LOG[$name]="$BACKGROUND_LOG_DIR/$name.log"
  # setsid -w: should setsid have to fork, $! still waits for, and reports, the command itself.
  setsid -w "$@" >"${BACKGROUND_LOG[$name]}" 2>&1 </dev/null &
  BACKGROUND_PID[$name]=$!
  echo "started in the background: $name (pid ${BACKGROUND_PID[$name]}): $*"
}

# report_background NAME: waits for the job, prints its log; returns 1 if it failed.
report_background() {
  local name=$1 status=0
  wait "${BACKGROUND_PID[$name]}" || status=$?
  unset "BACKGROUND_PID[$name]"
  echo "--- $name (exit $status)"
  cat "${BACKGROUND_LOG[$name]}"
  if ((status != 0)); then
    echo "ERROR: $name failed in the background (exit $status)" >&2
    return 1
  fi
}

# stop_background: SIGTERM to every unreported job's group (its `timeout`s pass it on to the
# scenario scripts and test binaries, which stop the daemons they started), up to 60 s each to
# end, then the end of its log.
stop_background() {
  local name pid
  for name in "${!BACKGROUND_PID[@]}"; do
    pid=${BACKGROUND_PID[$name]}
    kill -0 "$pid" 2>/dev/null || continue
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 60); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    echo "--- $name was stopped; the end of its log:" >&2
    tail -n 40 "${BACKGROUND_LOG[$name]}" >&2 || true
  done
}
