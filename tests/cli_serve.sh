#!/usr/bin/env bash
# polyrx serve: channelize (file, standard input, -o - to standard output), demod and rx run
# through a server (POLYRX_SERVE=require) give the bytes, standard error and exit statuses they
# give in their own process (POLYRX_SERVE=off), a usage error included; a stop signal to the
# client ends the served run cleanly with what was read written; a closed output pipe ends the
# client by SIGPIPE as it ends the command; the server killed mid-run gives the client one error
# line and status 1; 50 runs leave the server's descriptors as they were; sockets of another mode
# or in a directory others may write into, and links to either, are refused; the client's soft
# limits apply to the run and a lower hard limit runs the command in process; a stale socket is
# replaced, a live one is not; --status and --stop answer; --daemon detaches; an rx run that takes
# the receiver kept from the last one gives a fresh receiver's bits and report.
set -u
P=${1:?usage: cli_serve.sh PATH_TO_POLYRX}
. "$(dirname "$0")/support/cli_test.sh"
. "$(dirname "$0")/support/fifo_sigterm.sh"
cd "$T" || exit 1
export POLYRX_SERVE_SOCKET=$T/run/serve.sock
mkdir -m 700 run
SP=
# a failed check leaves no server behind; each wait for the server is bounded at 30 s (a loaded
# 2-core machine starts a sanitized server slowly) and ends as soon as its condition holds
trap '[ -n "$SP" ] && kill "$SP" 2>/dev/null; "$P" serve --stop >/dev/null 2>&1; rm -rf "$T"' EXIT

# the server holds 60 descriptors more than a fresh process, as the CUDA driver's on a GPU host:
# a client's soft open-file limit still leaves the run the room it has in the client's process
start_server() {
  (
    for fd in $(seq 3 62); do eval "exec $fd</dev/null"; done
    exec "$P" serve -q "$@"
  ) 2>server.err &
  SP=$!
  for _ in $(seq 1500); do "$P" serve --status >/dev/null 2>&1 && return 0; sleep 0.02; done
  bad "the server did not start: $(cat server.err)"
  return 1
}
fds() { ls "/proc/$SP/fd" | wc -l; }

start_server || exit 1
"$P" serve --status | grep -q "pid $SP, .* 0 requests served" || bad "--status: $("$P" serve --status)"

# ---- the same bytes, messages and statuses in the server and in process ----
"$P" gen -q -o x.cf32 -s 1M -n 200000 --carrier f=100k,rs=50k --esn0 15 || bad "gen failed"
"$P" gen -q -o d.cf32 -s 9600 -n 40000 --carrier f=100,rs=2400,diff,seed=3 --bits d.tx --esn0 12 ||
  bad "gen failed"
"$P" gen -q -o r.cf32 -s 409600 -n 409600 --carrier f=32000,rs=2400,diff --esn0 25 ||
  bad "gen failed"
n=0
same() { # name, stdin file, then the arguments; "@O@" is the output path of the mode
  local name=$1 in=$2 m rc_require rc_off
  shift 2
  for m in require off; do
    local args=()
    for a in "$@"; do args+=("${a//@O@/o_$m}"); done
    rm -rf "o_$m"
    POLYRX_SERVE=$m "$P" "${args[@]}" <"$in" >"out_$m" 2>"err_$m"
    eval "rc_$m=$?"
    # the output's name, and the figures of the lines that report a rate (timed; a time below
    # 1e-4 s prints with an exponent: "9.7e-05 s" against "0.000103 s" differed on the H200)
    sed -i -E "s/o_$m/o_MODE/g; /[Ss]ample(s)?\/s/s/[0-9.]+(e[-+]?[0-9]+)?/N/g" "err_$m" "out_$m"
  done
  n=$((n + 1))
  [ "$rc_require" = "$rc_off" ] || bad "$name: exit status $rc_require served, $rc_off in process"
  cmp -s out_require out_off || bad "$name: standard output differs"
  cmp -s err_require err_off || bad "$name: standard error differs: $(head -3 err_require)"
  if [ -e o_off ] || [ -e o_require ]; then
    diff -r o_require o_off >/dev/null 2>&1 || bad "$name: outputs differ"
  fi
}
same chan_file /dev/null channelize -q -i x.cf32 -s 1M -K 16 -o @O@
same chan_notes /dev/null channelize -i x.cf32 -s 1M -K 8 -c 1,3 --out-format cf16 -o @O@
same chan_stdin x.cf32 channelize -q -i - -s 1M -K 16 -c 0-3 -o @O@
same chan_stdout x.cf32 channelize -q -i - -s 1M -K 16 -c 5 -o -
same demod /dev/null demod -q -i d.cf32 -s 9600 -r 2400 --diff -o @O@.bits
same demod_stdin d.cf32 demod -q -i - -s 9600 -r 2400 --diff -o -
same rx /dev/null rx -q -i r.cf32 -s 409600 -K 64 --carrier f=32000,rs=2400,diff -o @O@
# the receiver kept between served rx runs: served twice (the second takes the first's receiver),
# then another configuration, another command (which drops it) and the first again; each run's
# bits and report (less its timed figures) those of the command in its own process
"$P" gen -q -o r3.cf32 -s 409600 -n 300000 --carrier f=32000,rs=2400,diff \
  --carrier f=-60800,rs=2400,diff --carrier f=100000,rs=1200,diff --esn0 14 --bits r3.tx ||
  bad "gen failed"
rx3=(-q -i r3.cf32 -s 409600 -K 64 --carrier f=32000,rs=2400 --carrier f=-60800,rs=2400
  --carrier f=100000,rs=1200 --truth r3.tx)
untimed() { sed -E '/"(elapsed_s|input_rate_sps|realtime_factor|channelizer|demodulators|other)"/d' "$1"; }
POLYRX_SERVE=off "$P" rx "${rx3[@]}" -o k_cold --report k_cold.json >k_cold.out ||
  bad "rx in process failed"
POLYRX_SERVE=off "$P" rx "${rx3[@]:0:9}" --llr -o k2_cold --report k2_cold.json >/dev/null ||
  bad "rx in process failed"
for run in 1 2 llr chan 3; do
  case $run in
  llr) POLYRX_SERVE=require "$P" rx "${rx3[@]:0:9}" --llr -o k_$run --report k_$run.json \
    >/dev/null || bad "served rx ($run) failed"
    diff -r k_$run k2_cold >/dev/null || bad "kept receiver: run $run: the outputs differ"
    cmp -s <(untimed k_$run.json | sed s/k_$run/k2_cold/g) <(untimed k2_cold.json) ||
      bad "kept receiver: run $run: the report differs"
    continue ;;
  chan) POLYRX_SERVE=require "$P" channelize -q -i x.cf32 -s 1M -K 4 -c 0 -o - >/dev/null ||
    bad "served channelize failed"
    continue ;;
  esac
  POLYRX_SERVE=require "$P" rx "${rx3[@]}" -o k_$run --report k_$run.json >k_$run.out ||
    bad "served rx ($run) failed"
  diff -r k_$run k_cold >/dev/null || bad "kept receiver: run $run: the bits differ"
  cmp -s <(untimed k_$run.json | sed s/k_$run/k_cold/g) <(untimed k_cold.json) ||
    bad "kept receiver: run $run: the report differs: $(diff <(untimed k_$run.json) <(untimed k_cold.json) | head -4)"
  cmp -s <(sed -E '$d' k_$run.out) <(sed -E '$d' k_cold.out) ||
    bad "kept receiver: run $run: the table differs"
  n=$((n + 1))
done
POLYRX_TIMING=1 POLYRX_SERVE=require "$P" rx "${rx3[@]}" -o k_t >/dev/null 2>k_t.err
grep -q "receiver: kept from the previous run" k_t.err ||
  bad "kept receiver: not taken by a run of the same configuration: $(grep receiver k_t.err)"
same usage /dev/null channelize -i x.cf32 -s 1M -K
same missing /dev/null demod -i nothing.cf32 -s 9600 -r 2400 -o -
POLYRX_SERVE=require "$P" channelize -i x.cf32 -s 1M -K 2>e.txt
[ $? = 2 ] && grep -q "channelize: error: option -K needs a value" e.txt ||
  bad "usage error through the server: $(cat e.txt)"
# a relative path in the client's directory, its umask and environment
mkdir sub && (cd sub && umask 027 && POLYRX_SERVE=require POLYRX_PIPELINE=serial "$P" channelize \
  -q -i ../x.cf32 -s 1M -K 4 -c 1 -o rel) || bad "run from a subdirectory"
[ "$(stat -c %a sub/rel/ch0001.sigmf-data 2>/dev/null)" = 640 ] ||
  bad "the client's umask: mode $(stat -c %a sub/rel/ch0001.sigmf-data 2>&1)"

# ---- a stop signal to the client (SIGTERM: a background job of a script ignores SIGINT): the
# served run ends cleanly with what was read ----
"$P" gen -q -o in.ci16 -F ci16 -s 16k -n 3000 --carrier f=1k,rs=2k || bad "gen failed"
fifo_sigterm_run in.ci16 sig/ch0003.sigmf-data \
  env POLYRX_SERVE=require "$P" channelize -i fifo -F ci16 -s 16k -K 4 --block 1000 -o sig -q
rc=$?
[ $rc = 130 ] || bad "SIGTERM: exit status $rc, expected 130: $(cat err.txt)"
grep -q '"polyrx:input_samples":[[:space:]]*3000' sig/ch0000.sigmf-meta 2>/dev/null ||
  bad "SIGTERM: the samples read were not all written and described"
grep -q "interrupted" err.txt || bad "SIGTERM: no note on the client's standard error"
kill -0 "$SP" 2>/dev/null || bad "the server ended with its client's run"

# ---- a closed output pipe: SIGPIPE, as in process ----
for m in require off; do
  POLYRX_SERVE=$m "$P" channelize -q -i x.cf32 -s 1M -K 16 -c 5 -o - 2>"pipe_$m.err" | head -c 100 >/dev/null
  eval "pipe_$m=\${PIPESTATUS[0]}"
done
[ "$pipe_require" = "$pipe_off" ] || bad "closed pipe: status $pipe_require served, $pipe_off in process"
[ -s pipe_require.err ] && bad "closed pipe: the served run wrote $(head -2 pipe_require.err)"

# ---- the client's limits: a soft one applied to the run; a lower hard one, which the server
# cannot take and give back, runs the command in process (require: an error) ----
for m in require off; do
  (ulimit -Sn 40 && POLYRX_SERVE=$m "$P" channelize -i in.ci16 -F ci16 -s 16k -K 64 -P 2 \
    -o "lim_$m" -q) || bad "soft open-file limit 40 ($m) failed"
done
diff -r lim_require lim_off >/dev/null || bad "soft open-file limit: the outputs differ"
(ulimit -n 40 && "$P" channelize -i in.ci16 -F ci16 -s 16k -K 64 -P 2 -o lim_h -q) 2>e.txt &&
  bad "hard limit 40 with K = 64 should fail"
grep -q "open files" e.txt || bad "hard limit, declined by the server: $(cat e.txt)"
(ulimit -n 40 && POLYRX_SERVE=require "$P" channelize -i in.ci16 -F ci16 -s 16k -K 4 -o lim_r -q) \
  2>e.txt
[ $? = 1 ] && grep -q "resource limits" e.txt || bad "hard limit with require: $(cat e.txt)"

# ---- a setting the library reads once per process (POLYRX_CPU) that differs from the server's:
# the command runs in process (require: an error), with the bytes of its own process ----
POLYRX_CPU=generic POLYRX_SERVE=require "$P" channelize -q -i x.cf32 -s 1M -K 4 -c 0 -o - \
  >/dev/null 2>e.txt
[ $? = 1 ] && grep -q "POLYRX_CPU" e.txt || bad "POLYRX_CPU with require: $(cat e.txt)"
POLYRX_CPU=generic "$P" channelize -q -i x.cf32 -s 1M -K 4 -c 0 -o - >cpu_auto.bin ||
  bad "POLYRX_CPU, auto: failed"
POLYRX_CPU=generic POLYRX_SERVE=off "$P" channelize -q -i x.cf32 -s 1M -K 4 -c 0 -o - >cpu_off.bin
cmp -s cpu_auto.bin cpu_off.bin || bad "POLYRX_CPU, auto: not the bytes of its own process"

# ---- 50 runs: no descriptor left behind in the server, its memory the same after 10 and 50 ----
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$SP/status"; }
f0=$(fds)
for i in $(seq 50); do
  POLYRX_SERVE=require "$P" channelize -q -i x.cf32 -s 1M -K 4 -c 0 -o - >/dev/null ||
    bad "run $i failed"
  [ "$i" = 10 ] && r10=$(rss)
done
# (the server closes a run's connection after its reply: the count settles within moments)
for _ in $(seq 250); do [ "$(fds)" = "$f0" ] && break; sleep 0.02; done
f50=$(fds)
[ "$f50" = "$f0" ] || bad "50 runs: the server holds $f50 descriptors, $f0 before"
# (not under AddressSanitizer, whose quarantine holds freed memory)
grep -qa __asan_init "$P" || [ "$(rss)" -le $((r10 + 2048)) ] ||
  bad "40 runs grew the server from $r10 to $(rss) KiB"
"$P" serve --status | grep -q "pid $SP, .* [0-9]* requests served" || bad "--status after runs"

# ---- the socket's mode and its directory's: refused ----
chmod 0666 "$POLYRX_SERVE_SOCKET"
POLYRX_SERVE=require "$P" channelize -q -i x.cf32 -s 1M -K 4 -o m1 2>e.txt
[ $? = 1 ] && grep -q "mode 0666" e.txt || bad "a socket of mode 0666 was not refused: $(cat e.txt)"
"$P" channelize -q -i x.cf32 -s 1M -K 4 -o m2 2>e.txt || bad "no server: the run in process failed"
[ -s e.txt ] && bad "no server: the run in process said $(cat e.txt)"
chmod 0600 "$POLYRX_SERVE_SOCKET"
chmod 0777 run
POLYRX_SERVE=require "$P" channelize -q -i x.cf32 -s 1M -K 4 -o m3 2>e.txt
[ $? = 1 ] && grep -q "others may write" e.txt || bad "an open directory was not refused: $(cat e.txt)"
chmod 0700 run
# a link to the socket, and the socket reached through a link to its directory: refused (a link
# could be changed to point elsewhere by whoever owns it)
ln -s run/serve.sock link.sock
ln -s run runlink
POLYRX_SERVE_SOCKET=$T/link.sock POLYRX_SERVE=require "$P" channelize -q -i x.cf32 -s 1M -K 4 \
  -o m7 2>e.txt
[ $? = 1 ] && grep -q "is not a socket" e.txt || bad "a link to the socket was not refused: $(cat e.txt)"
POLYRX_SERVE_SOCKET=$T/runlink/serve.sock POLYRX_SERVE=require "$P" channelize -q -i x.cf32 \
  -s 1M -K 4 -o m8 2>e.txt
[ $? = 1 ] && grep -q "runlink is not a directory" e.txt ||
  bad "a linked directory was not refused: $(cat e.txt)"

# ---- a second server on a live socket: refused; --stop ends the first ----
timeout 10 "$P" serve -q 2>e.txt && bad "a second server started on a live socket"
grep -q "already answers" e.txt || bad "second server: $(cat e.txt)"
"$P" serve --stop || bad "--stop failed"
wait "$SP"
[ $? = 0 ] || bad "the server's exit status after --stop"
[ -e "$POLYRX_SERVE_SOCKET" ] && bad "--stop left the socket"
grep -q Sanitizer server.err && bad "the server's sanitizer report: $(head -20 server.err)"
POLYRX_SERVE=require "$P" channelize -q -i x.cf32 -s 1M -K 4 -o m4 2>e.txt
[ $? = 1 ] && grep -q "no polyrx server answers" e.txt || bad "require without server: $(cat e.txt)"
"$P" serve --status 2>/dev/null && bad "--status without a server succeeded"

# ---- the server killed mid-run: one error line, status 1; its stale socket replaced ----
start_server || exit 1
mkfifo fifo2
POLYRX_SERVE=require "$P" channelize -i fifo2 -F ci16 -s 16k -K 4 --block 1000 -o k -q 2>err.txt &
PID=$!
exec 3>fifo2
cat in.ci16 >&3
for _ in $(seq 600); do ls k/ch0003.sigmf-data* >/dev/null 2>&1 && break; sleep 0.05; done
kill -KILL "$SP"
wait "$SP" 2>/dev/null
wait $PID
rc=$?
exec 3>&-
[ $rc = 1 ] || bad "server killed: client status $rc, expected 1"
[ "$(wc -l <err.txt)" = 1 ] && grep -q "ended during the request" err.txt ||
  bad "server killed: client said $(cat err.txt)"
[ -S "$POLYRX_SERVE_SOCKET" ] || bad "the killed server's socket is gone (the stale case untested)"
start_server || exit 1
grep -q "stale" server.err 2>/dev/null && bad "-q: a note was printed"
POLYRX_SERVE=require "$P" channelize -q -i x.cf32 -s 1M -K 4 -o m5 || bad "run after the stale socket"
kill -TERM "$SP"
wait "$SP"
[ $? = 0 ] || bad "SIGTERM: the server's exit status"
[ -e "$POLYRX_SERVE_SOCKET" ] && bad "SIGTERM left the socket"
grep -q Sanitizer server.err && bad "the server's sanitizer report: $(head -20 server.err)"

# ---- --daemon: the command returns, the server answers, --stop ends it ----
"$P" serve --daemon -q || bad "--daemon failed"
"$P" serve --status | grep -q "0 requests served" || bad "--daemon: no answer"
POLYRX_SERVE=require "$P" channelize -q -i x.cf32 -s 1M -K 4 -o m6 || bad "a run through the daemon"
"$P" serve --stop || bad "--stop of the daemon failed"
for _ in $(seq 600); do [ -e "$POLYRX_SERVE_SOCKET" ] || break; sleep 0.05; done
[ -e "$POLYRX_SERVE_SOCKET" ] && bad "the daemon's socket is left after --stop"

echo "cli_serve: $n comparisons, $fail failed"
exit $((fail > 0))
