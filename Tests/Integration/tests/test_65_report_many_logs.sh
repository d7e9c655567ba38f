# `wedjat report` on a directory of 1,000 process logs (generated: 10 servers, each forking
# 99 workers that make HTTP requests to 5 hosts, with samples), some of them damaged the
# ways real logs are: killed workers (no process_end), a truncated last line, garbage lines,
# an unknown record type, a newer schema. Everything else is still reported, to the request:
# the totals and per-host counts equal the generator's, each damaged line is a warning with
# its file:line, the text report stays short. Then empty input: a clear message, exit 2.
. "$WJ_LIB/common.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"

"$PYTHON" - many > expected.json <<'EOF'
import json, os, random, sys
d = sys.argv[1]
os.makedirs(d)
rng = random.Random(65)
hosts = [f"api-{i}.test:8080" for i in range(5)]
t0 = 1763782510000000
per_host, killed, damaged = {h: 0 for h in hosts}, [], {}
def line(r):
    return json.dumps(r, separators=(",", ":")) + "\n"
for s in range(10):
    spid = 1000 + s * 100
    slog = f"{d}/server.{spid}.{t0 + s}.ndjson"
    with open(slog, "w") as f:
        f.write(line({"type": "process_start", "schema": 1, "ts": t0 + s, "pid": spid, "tid": spid, "exe": "/usr/bin/server",
                      "argv": ["server"], "argv_mode": "redact", "ppid": 1, "parent_log": None, "exec_from": None,
                      "log": slog, "config": {}, "config_warnings": []}))
        for w in range(99):
            f.write(line({"type": "fork", "ts": t0 + s + w + 1, "pid": spid, "tid": spid, "child_pid": spid + 1 + w}))
        f.write(line({"type": "process_end", "ts": t0 + 9_000_000, "pid": spid, "tid": spid, "reason": "exit",
                      "exit_status": 0, "duration_us": 9_000_000 - s, "records": {}, "dropped_events": 0,
                      "dropped_records": 0, "open_connections": 0}))
    for w in range(99):
        pid = spid + 1 + w
        start = t0 + s + w + 10
        path = f"{d}/server.{pid}.{start}.ndjson"
        out = [line({"type": "process_start", "schema": 1, "ts": start, "pid": pid, "tid": pid, "exe": "/usr/bin/server",
                     "argv": ["server"], "argv_mode": "redact", "ppid": spid, "parent_log": slog, "exec_from": None,
                     "log": path, "config": {}, "config_warnings": []})]
        ts = start + 1000
        for c in range(3):
            h = hosts[rng.randrange(5)]
            n = rng.randrange(1, 5)
            for i in range(n):
                ttfb = rng.randrange(500, 50_000)
                ts += ttfb + 100
                out.append(line({"type": "http", "ts": ts, "pid": pid, "tid": pid, "conn_id": c + 1, "role": "client",
                                 "scheme": "http", "method": "GET", "host": h, "path": "/x", "status": 200,
                                 "peer": "10.0.0.1:8080", "request_index": i, "reused": i > 0,
                                 "request_start_ts": ts - ttfb - 100, "response_start_ts": ts - 100,
                                 "response_end_ts": ts, "ttfb_us": ttfb, "duration_us": ttfb + 100,
                                 "request_header_bytes": 80, "response_header_bytes": 120, "response_body_bytes": 1000,
                                 "complete": True, "error": None}))
                per_host[h] += 1
            out.append(line({"type": "connection", "ts": ts + 10, "pid": pid, "tid": pid, "conn_id": c + 1, "fd": 5,
                             "transport": "tcp", "family": "ipv4", "role": "client", "local": "10.0.0.2:40000",
                             "peer": "10.0.0.1:8080", "open_ts": start + 500, "close_ts": ts + 10,
                             "duration_us": ts + 10 - start - 500, "connect_us": 100, "bytes_in": 1120 * n,
                             "bytes_out": 80 * n, "http_requests": n, "host": h.split(":")[0], "error": None,
                             "error_phase": None, "open_at_exit": False}))
        out.append(line({"type": "sample", "ts": ts + 20, "pid": pid, "seq": 0, "at_exit": True,
                         "interval_start_ts": start, "interval_us": ts + 20 - start,
                         "cpu": {"total_pct": 5.0, "user_us": 1000, "system_us": 500},
                         "memory": {"rss_bytes": 10_000_000 + pid, "peak_rss_bytes": 12_000_000 + pid}}))
        if w % 25 == 24:
            killed.append(path)             # no process_end: killed
        else:
            out.append(line({"type": "process_end", "ts": ts + 30, "pid": pid, "tid": pid, "reason": "exit",
                             "exit_status": 0, "duration_us": ts + 30 - start, "records": {}, "dropped_events": 0,
                             "dropped_records": 0, "open_connections": 0}))
        if (s, w) == (1, 5):                # the writer died mid-line
            out.append('{"type":"connection","ts":')
            damaged[path] = [f"{len(out)}: truncated last line (no trailing newline); skipped"]
        elif (s, w) == (2, 6):
            out.insert(3, "\x00\x00garbage\n")
            out.insert(5, '{"type":"quic_stream","ts":1,"pid":1}\n')
            damaged[path] = ["4: invalid JSON; skipped",
                             '6: unknown record type "quic_stream"; skipped (further ones in this file not reported)']
        elif (s, w) == (3, 7):
            out[0] = out[0].replace('"schema":1', '"schema":2')
            damaged[path] = ["1: schema 2 is newer than the supported schema 1; reading the known fields only"]
        with open(path, "w") as f:
            f.write("".join(out))
json.dump({"per_host": per_host, "killed": killed, "damaged": damaged}, sys.stdout)
EOF
[ "$(ls many | wc -l)" = 1000 ] || fail "generated $(ls many | wc -l) logs"

/usr/bin/time -f '%e %M' -o time.txt timeout -k 5 60 "$WEDJAT_CLI" report --format json many > report.json 2> report.err \
    || fail "report --format json exited $?: $(head -5 report.err)"
read -r secs rss < time.txt
note "1,000 logs: ${secs} s, peak RSS $((rss / 1024)) MiB"
[ "$rss" -lt 400000 ] || fail "peak RSS ${rss} KiB for 1,000 small logs"
"$PYTHON" - expected.json report.json <<'EOF' || fail "the JSON report of 1,000 logs is not right"
import json, sys
exp, r = (json.load(open(p)) for p in sys.argv[1:])
ok = True
def check(what, got, want):
    global ok
    if got != want:
        print(f"FAIL: {what}: {got!r}, want {want!r}")
        ok = False
h = r["headline"]
check("processes", h["processes"], 1000)
check("logs", h["logs"], 1000)
check("requests", h["http_requests"], sum(exp["per_host"].values()))
check("per host", {x["host"]: x["requests"] for x in r["http"] if x["requests"]},
      exp["per_host"])
check("connections", h["connections"], 990 * 3)
check("tree roots", len(r["tree"]), 10)
check("children of each server", sorted({len(t["children"]) for t in r["tree"]}), [99])
check("killed", sorted(p["log"] for p in r["processes"] if p["killed"]), sorted(exp["killed"]))
check("peak RSS of the samples", h["peak_rss_bytes"], 12_000_000 + 1999)
want = sorted([f"{path}:{w}" for path, ws in exp["damaged"].items() for w in ws])
check("reader warnings", sorted(w["text"] for w in r["warnings"] if w["kind"] == "reader"), want)
check("warnings", h["warnings"], len(exp["killed"]) + len(want))
sys.exit(0 if ok else 1)
EOF

# The text: a short report that still names every damaged line.
timeout -k 5 60 "$WEDJAT_CLI" report --color never many > report.txt 2> report.err || fail "report exited $?"
head -n 12 report.txt
[ "$(wc -l < report.txt)" -lt 300 ] || fail "the text report has $(wc -l < report.txt) lines"
grep -q '^wedjat report: 1000 processes (1000 logs)' report.txt || fail "headline: $(head -n 1 report.txt)"
grep -qE '… 970 more processes( without network activity)?: .* \(--format json lists all\)' report.txt \
    || fail "the process table is not cut: $(grep -m1 'more processes' report.txt)"
grep -q '… 20 more warnings of this kind (no_end)' report.txt || fail "the no_end warnings are not cut"
for w in "truncated last line" "invalid JSON" "unknown record type \"quic_stream\"" "schema 2 is newer"; do
    grep -q "ndjson:[0-9]*: $w" report.txt || fail "no file:line warning '$w' in the text report"
done

# Empty input: a message that says what is missing, and exit 2.
mkdir -p empty empties
timeout 30 "$WEDJAT_CLI" report empty > out.txt 2> err.txt; rc=$?
[ $rc = 2 ] || fail "report of an empty directory exited $rc"
[ ! -s out.txt ] || fail "report of an empty directory printed: $(head -3 out.txt)"
grep -q "no wedjat logs (\*.ndjson) found in empty" err.txt || fail "no clear message: $(cat err.txt)"
grep -q "wedjat run -- CMD" err.txt || fail "no hint how to make logs: $(cat err.txt)"
: > empties/a.1.1.ndjson
: > empties/b.2.2.ndjson
timeout 30 "$WEDJAT_CLI" report empties > out.txt 2> err.txt; rc=$?
[ $rc = 2 ] || fail "report of empty files exited $rc"
grep -q "no readable wedjat records in 2 log files" err.txt || fail "no clear message: $(cat err.txt)"
grep -q "empties/a.1.1.ndjson: empty file" err.txt || fail "the empty file is not named: $(cat err.txt)"
echo ok
