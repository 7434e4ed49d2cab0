# Sourced by the command tests that stop a run mid-stream (tests/cli_*.sh).
#   fifo_sigterm_run INPUT READY CMD...
# runs CMD in the background (it reads the named pipe ./fifo, made here; its standard error goes
# to err.txt), writes INPUT into the pipe and keeps the pipe open, so the run has read every
# sample but not the end of its input; once the file READY exists (up to 5 s) and 0.3 s more,
# sends it SIGTERM (a script's background job ignores SIGINT) and returns its exit status.
fifo_sigterm_run() {
  local input=$1 ready=$2 pid rc
  shift 2
  mkfifo fifo
  "$@" 2>err.txt &
  pid=$!
  exec 3>fifo
  cat "$input" >&3
  for _ in $(seq 100); do [ -f "$ready" ] && break; sleep 0.05; done
  sleep 0.3
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  exec 3>&-
  return "$rc"
}
