#!/usr/bin/env bash
# Run beamcrawl rounds on a real dask.distributed cluster on this machine (issue #15):
# a scheduler and two worker processes on 127.0.0.1, started with dask's own commands,
# the rounds submitted with pipelines.daskrunner.DaskRunner, the cluster stopped when they end (or fail).
#
#   scripts/dask_local.sh crawl --crawl_dir D --rounds 3 [round flags]
#   scripts/dask_local.sh round --crawl_dir D [round flags]
#
# PYTHON (default: python) must have beamcrawl and apache-beam[dask] installed; the workers
# run the same interpreter, with this checkout on PYTHONPATH. DASK_WORKERS (default 2) worker
# processes, each with DASK_THREADS (default 1) threads. The cluster's logs go to a
# temporary folder that is printed, and kept, when something fails. Workers exit by themselves
# 60 s after losing the scheduler (--death-timeout), should this script be killed outright.
set -euo pipefail
PY=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
WORK=$(mktemp -d -t beamcrawl-dask.XXXXXX)
PIDS=()
stop() {
  status=$?
  # workers first, then the scheduler (a worker that loses its scheduler first retries it)
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; done
  # a worker that keeps retrying a scheduler that is gone may ignore SIGTERM: 10 s, then SIGKILL
  for _ in $(seq 1 100); do
    alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$status" -eq 0 ]; then rm -rf "$WORK"; else echo "dask_local: cluster logs in $WORK" >&2; fi
  exit "$status"
}
trap stop EXIT INT TERM
if [ $# -lt 1 ] || { [ "$1" != crawl ] && [ "$1" != round ]; }; then
  echo "error: usage: scripts/dask_local.sh crawl|round --crawl_dir D [flags]" >&2; exit 2
fi
CMD=$1; shift

"$PY" -m dask scheduler --host 127.0.0.1 --port 0 --no-dashboard \
  --scheduler-file "$WORK/scheduler.json" >"$WORK/scheduler.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do [ -s "$WORK/scheduler.json" ] && break; sleep 0.1; done
[ -s "$WORK/scheduler.json" ] || { echo "error: the dask scheduler did not start (see $WORK/scheduler.log)" >&2; exit 1; }
ADDR=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["address"])' "$WORK/scheduler.json")
for i in $(seq 1 "${DASK_WORKERS:-2}"); do
  "$PY" -m dask worker "$ADDR" --host 127.0.0.1 --nthreads "${DASK_THREADS:-1}" \
    --no-dashboard --no-nanny --death-timeout 60 --name "worker-$i" --local-directory "$WORK/worker-$i" \
    >"$WORK/worker-$i.log" 2>&1 &
  PIDS+=($!)
done
"$PY" - "$ADDR" "${DASK_WORKERS:-2}" <<'PYEOF'
import sys
from distributed import Client
with Client(sys.argv[1], timeout=60) as c:
    c.wait_for_workers(int(sys.argv[2]), timeout=60)
PYEOF
echo "dask_local: scheduler $ADDR, ${DASK_WORKERS:-2} workers" >&2
"$PY" -m "pipelines.$CMD" "$@" --runner pipelines.daskrunner.DaskRunner \
  --dask_client_address "$ADDR"
