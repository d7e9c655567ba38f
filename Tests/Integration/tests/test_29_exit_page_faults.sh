# What watching costs a short networked process in page faults (the kernel's count, from
# wait4's rusage: deterministic within a few faults, unlike time on a shared machine). One curl
# GET to an unwatched loopback server, 15 runs plain and 15 watched, alternating; the medians
# of minor faults per process are compared. Loading the agent costs about 170 (its relocated
# pages, the thread's stack, the log); the end of the process once read a word of each of the
# 1,024 framers of a connection chunk (a framer is over a page: 1,024 zero pages faulted in,
# about 1 ms). Bar: at most 400 faults added.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"
command -v curl >/dev/null || skip "curl is not installed"
[ -f "$DELAY_SERVER" ] || fail "no $DELAY_SERVER"
bg_start http "$PYTHON" "$DELAY_SERVER"
http_pid=$BG_PID
delay_server_port http http_port

"$PYTHON" - "$WEDJAT_PRELOAD" "$http_port" "$TEST_TMP/logs" <<'PY' || fail "page faults: see above"
import os, statistics, sys
preload, port, logs = sys.argv[1], sys.argv[2], sys.argv[3]
url = f"http://127.0.0.1:{port}/delay/0"
argv = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url]

def faults(watched):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if watched:
        env.update(LD_PRELOAD=preload, WEDJAT_DIR=logs)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        os.execvpe(argv[0], argv, env)
    os.close(w)
    out = os.read(r, 100).decode()
    os.close(r)
    _, status, usage = os.wait4(pid, 0)
    if status != 0 or out != "200":
        sys.exit(f"curl {'watched' if watched else 'plain'}: status {status}, printed {out!r}")
    return usage.ru_minflt

plain, watched = [], []
for _ in range(15):
    plain.append(faults(False))
    watched.append(faults(True))
p, w = statistics.median(plain), statistics.median(watched)
print(f"# minor faults per curl: plain {p:.0f} (range {min(plain)}-{max(plain)}), "
      f"watched {w:.0f} (range {min(watched)}-{max(watched)}), added {w - p:.0f}")
logs_written = [f for f in os.listdir(logs) if f.endswith(".ndjson")]
if len(logs_written) != 15:
    sys.exit(f"expected 15 logs of watched curls, found {len(logs_written)}")
if w - p > 400:
    sys.exit(f"watching adds {w - p:.0f} page faults to a one-request curl (bar: 400)")
PY
bg_stop "$http_pid"
finish
