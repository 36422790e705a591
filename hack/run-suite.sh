#!/usr/bin/env bash
# The main pytest suite (everything but the QEMU e2e) as two concurrent pytest processes: the in-cluster
# package (test/integration/incluster), the hollow-node rollouts (test/integration/hollow), the plan
# scenarios (test/integration/plan) and the quick benchmarks (test/integration/bench) in one, everything
# else in the other.
#
# Why: the in-cluster package and the quick benchmarks are the longest single parts of the suite (about
# 11 and 9 minutes on an idle 2-core machine), and most of the suite waits, not computes: on kubelets
# starting pods, on the kubelet delivering a renewed Secret and the certificate delivery margin, on
# leases expiring. Run one after the other they add up; side by side the waits overlap with the work
# (the two cores were still idle half of the time). The hollow and plan packages (about 2.5 min each)
# even out the two sessions: without them the background one ended 9 min before the other.
# Every part is built to run beside other clusters (every cluster takes its own address slot, bridges,
# ports and cgroups), and no test asserts a duration. The QEMU suites stay after both: beside them a
# TCG guest ran half as fast and the e2e suite took twice as long (docs/development.md).
#
# Usage: hack/run-suite.sh [PYTEST_ARG...]   (the arguments go to both processes)
# Env:   PYTEST (default .venv/bin/pytest), SUITE_LOG (default build/suite-background.log: the background
#        session's output, followed live once the rest is done, or printed in full at the end)
set -uo pipefail
cd "$(dirname "$0")/.."
PYTEST=${PYTEST:-.venv/bin/pytest}
LOG=${SUITE_LOG:-build/suite-background.log}
BACKGROUND=(test/integration/incluster test/integration/hollow test/integration/plan test/integration/bench)
mkdir -p "$(dirname "$LOG")"

# A non-interactive shell starts background commands with SIGINT ignored, and Python then never raises
# KeyboardInterrupt: the exec shim restores the default, so Ctrl-C on the terminal stops this session
# too and its fixtures still tear its cluster down. -p no:cacheprovider: two sessions must not both
# rewrite .pytest_cache/.
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
  "$PYTEST" -p no:cacheprovider --durations=10 "${BACKGROUND[@]}" "$@" >"$LOG" 2>&1 &
bg=$!
# A SIGTERM of this script (a CI timeout) becomes a Ctrl-C of the background session.
trap 'kill -INT "$bg" 2>/dev/null' TERM
echo "run-suite: ${BACKGROUND[*]} run beside the rest of the suite (pid $bg, output in $LOG)"

"$PYTEST" --durations=10 "${BACKGROUND[@]/#/--ignore=}" "$@"
rc=$?

if kill -0 "$bg" 2>/dev/null; then
  echo "run-suite: the rest is done (exit $rc); following the background session until it ends"
  tail -n +1 -f --pid="$bg" "$LOG"
  wait "$bg"
  bgrc=$?
else
  wait "$bg"
  bgrc=$?
  echo "run-suite: ---- ${BACKGROUND[*]} ----"
  cat "$LOG"
fi
echo "run-suite: rest of the suite exit $rc, ${BACKGROUND[*]} exit $bgrc"
[ "$rc" -eq 0 ] && [ "$bgrc" -eq 0 ]
