# What watching costs a short networked process in page faults (the kernel's count, from
# wait4's rusage: deterministic within a few faults, unlike time on a shared machine). One GET
# to an unwatched loopback server from curl (15 runs plain and 15 watched, alternating), python
# and node (7 each); the medians of minor faults per process are compared. Watching adds about
# 170 to 190 (the agent's relocated pages, its thread's stack and arena, the log). The end of a
# process once read a word of each of the 1,024 framers of a connection chunk, a framer being
# over a page: about 1,200 added, 1 ms. Bar: at most 400 added, for each client.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"
command -v curl >/dev/null || skip "curl is not installed"
[ -f "$DELAY_SERVER" ] || fail "no $DELAY_SERVER"
bg_start http "$PYTHON" "$DELAY_SERVER"
http_pid=$BG_PID
delay_server_port http http_port

# One GET from each client: curl, python's urllib, node's http (when installed).
cat > client.py <<'PY'
import sys, urllib.request
sys.stdout.write(str(urllib.request.urlopen(sys.argv[1]).status))
PY
cat > client.js <<'JS'
require('http').get(process.argv[2], r => { r.resume(); r.on('end', () => process.stdout.write(String(r.statusCode))); });
JS
"$PYTHON" - "$WEDJAT_PRELOAD" "$http_port" "$TEST_TMP/logs" "$PYTHON" <<'PY' || fail "page faults: see above"
import os, shutil, statistics, sys
preload, port, logs, python = sys.argv[1:5]
url = f"http://127.0.0.1:{port}/delay/0"
clients = {"curl": ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url],
           "python": [python, "client.py", url]}
if shutil.which("node"):
    clients["node"] = ["node", "client.js", url]
else:
    print("# node is not installed: curl and python only")

def faults(argv, watched, logdir):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if watched:
        env.update(LD_PRELOAD=preload, WEDJAT_DIR=logdir)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        os.execvpe(argv[0], argv, env)
    os.close(w)
    out = b""
    while chunk := os.read(r, 100):
        out += chunk
    os.close(r)
    _, status, usage = os.wait4(pid, 0)
    if status != 0 or out != b"200":
        sys.exit(f"{argv[0]} {'watched' if watched else 'plain'}: status {status}, printed {out!r}")
    return usage.ru_minflt

failed = []
for name, argv in clients.items():
    logdir = os.path.join(logs, name)
    plain, watched = [], []
    for _ in range(15 if name == "curl" else 7):
        plain.append(faults(argv, False, logdir))
        watched.append(faults(argv, True, logdir))
    p, w = statistics.median(plain), statistics.median(watched)
    print(f"# {name}: minor faults plain {p:.0f} (range {min(plain)}-{max(plain)}), "
          f"watched {w:.0f} (range {min(watched)}-{max(watched)}), added {w - p:.0f}")
    written = [f for f in os.listdir(logdir) if f.endswith(".ndjson")]
    if len(written) != len(watched):
        failed.append(f"{name}: expected {len(watched)} logs, found {len(written)}")
    if w - p > 400:
        failed.append(f"{name}: watching adds {w - p:.0f} page faults to one request (bar: 400)")
if failed:
    sys.exit("; ".join(failed))
PY
bg_stop "$http_pid"
finish
