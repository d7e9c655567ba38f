# What wedjat says about traffic it did not decode, through the CLI, on synthetic logs written to
# the log contract (docs/LOG_FORMAT.md: http_none, http_undecoded, handed_off, inherited_from):
# the report's coverage line and COVERAGE section; an export with nothing in it says why on
# stderr and exits 1 (the file is still a valid HAR); a partly decoded run exports its exchanges,
# exits 0 and notes the rest; a CGI exchange handed off to a forked child is one exchange with
# the child's status, in the report and the trace. Self-contained: no program is watched.
. "$WJ_LIB/common.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
cli() { timeout -k 5 60 "$WEDJAT_CLI" "$@"; }

"$PYTHON" - <<'PY' || fail "could not write the synthetic logs"
import json, os
t0 = 1763782900000000
def write(path, records):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
def conn(pid, i, peer, bi, bo, requests, none=None, undecoded=None, role="client", **extra):
    c = {"type": "connection", "ts": t0 + i * 1000, "pid": pid, "tid": pid, "conn_id": i, "fd": 5, "transport": "tcp",
         "family": "ipv4", "role": role, "local": "127.0.0.1:%d" % (40000 + i), "peer": peer,
         "open_ts": t0 + i * 1000 - 500, "close_ts": t0 + i * 1000, "duration_us": 500, "bytes_in": bi, "bytes_out": bo,
         "http_requests": requests, "host": None, "error": None, "error_phase": None, "open_at_exit": False}
    if none: c["http_none"] = none
    if undecoded: c["http_undecoded"] = {"reason": undecoded[0], "bytes_in": undecoded[1], "bytes_out": undecoded[2]}
    c.update(extra)
    return c
def start(pid, exe, log, **extra):
    s = {"type": "process_start", "schema": 1, "ts": t0, "pid": pid, "tid": pid, "exe": exe, "argv": [exe], "log": log}
    s.update(extra)
    return s
def end(pid, ts):
    return {"type": "process_end", "ts": ts, "pid": pid, "tid": pid, "reason": "exit", "exit_status": 0}
def http(pid, i, status, role="client", index=0, **extra):
    ts = t0 + i * 1000 - 100
    h = {"type": "http", "ts": ts, "pid": pid, "tid": pid, "conn_id": i, "role": role, "scheme": "http", "method": "GET",
         "host": "api.local", "path": "/", "version": "HTTP/1.1", "status": status, "peer": "127.0.0.1:8080",
         "request_index": index, "reused": index > 0, "request_start_ts": ts - 300, "request_end_ts": ts - 290,
         "response_start_ts": ts - 100, "response_end_ts": ts, "ttfb_us": 200, "wait_us": 190, "duration_us": 300,
         "request_header_bytes": 50, "request_body_bytes": 0, "response_header_bytes": 100, "response_body_bytes": 50,
         "headers": {}, "complete": True, "error": None}
    h.update(extra)
    return h

# Only HTTP/2 and TLS no hooked library decrypted: nothing for a HAR.
write("h2/node.3.%d.ndjson" % t0, [start(3, "/usr/bin/node", "/x/node.3.ndjson")]
      + [conn(3, i, "127.0.0.1:8443", 5000, 700, 0, "http2", ("http2", 5000, 700)) for i in (1, 2, 3)]
      + [conn(3, 4, "10.0.0.8:443", 900, 300, 0, "tls_not_hooked"), end(3, t0 + 9000)])

# Partly decoded: two HTTP/1 exchanges, one HTTP/2 connection, Redis.
write("mixed/client.4.%d.ndjson" % t0, [start(4, "/usr/bin/client", "/x/client.4.ndjson"),
      http(4, 1, 200), http(4, 1, 404, index=1), conn(4, 1, "127.0.0.1:8080", 300, 100, 2),
      conn(4, 2, "127.0.0.1:8443", 9000, 800, 0, "http2"), conn(4, 3, "127.0.0.1:6379", 3000, 100, 0, "not_http"),
      end(4, t0 + 9000)])

# A CGI server: the parent read the request and forked, the exec'd child wrote the response.
parent_log = "/var/log/wj/python3.100.%d.ndjson" % t0
write("cgi/python3.100.%d.ndjson" % t0, [start(100, "/usr/bin/python3", parent_log),
      http(100, 1, None, role="server", response_start_ts=None, response_end_ts=None, ttfb_us=None, wait_us=None,
           duration_us=None, response_header_bytes=0, response_body_bytes=0, complete=False, error="handed_off",
           host="localhost:8080"),
      {"type": "fork", "ts": t0 + 950, "pid": 100, "tid": 100, "child_pid": 101},
      conn(100, 1, "127.0.0.1:50000", 80, 0, 1, role="server", forked_while_open=True), end(100, t0 + 90000)])
write("cgi/perl.101.%d.ndjson" % (t0 + 2000), [start(101, "/usr/bin/perl", "/var/log/wj/perl.101.ndjson", parent_log=parent_log),
      http(101, 3, 200, role="server", method=None, host=None, path=None, version=None, request_start_ts=None,
           request_end_ts=None, request_header_bytes=None, request_body_bytes=None, ttfb_us=None, wait_us=None,
           duration_us=None, response_start_ts=t0 + 5000, response_end_ts=t0 + 6000),
      conn(101, 3, "127.0.0.1:50000", 0, 560, 1, role="server", inherited_from={"log": parent_log, "conn_id": 1}),
      end(101, t0 + 7000)])
PY

# 1. The report says what was not decoded and why.
COLUMNS=200 cli report --color never h2 > h2.txt 2> h2.err || fail "report exited $?: $(cat h2.err)"
grep -q '^  coverage    0 of 4 HTTP connections decoded (0.0% of their 17.9 KiB); not decoded: 3 http2, 1 tls_not_hooked$' h2.txt \
    || fail "no coverage line: $(head -5 h2.txt)"
grep -q '^  not decoded: http2 *3 ' h2.txt || fail "no COVERAGE row for http2: $(cat h2.txt)"
cli report --format json h2 > h2.json || fail "report --format json exited $?"
pylogs <<'PY'
r = json.load(open("h2.json"))
c = r["coverage"]
expect_eq(c["http_connections"], 4, "HTTP connections")
expect_eq(c["decoded_connections"], 0, "decoded")
expect_eq([(g["reason"], g["connections"], g["bytes"]) for g in c["undecoded"]], [("http2", 3, 17100), ("tls_not_hooked", 1, 1200)], "undecoded")
print("ok")
PY

# 2. An export with nothing in it: the reason on stderr, exit 1; the HAR is still valid.
cli export --har h2.har h2 2> har.err; rc=$?
[ $rc = 1 ] || fail "export --har of an HTTP/2-only run exited $rc, want 1: $(cat har.err)"
grep -q 'nothing to export as HAR (h2.har): no HTTP exchange was decoded: 3 connections carried HTTP/2 (http_none: http2), 1 connection carried TLS that no hooked library decrypted' har.err \
    || fail "the reason is not said: $(cat har.err)"
"$PYTHON" -c 'import json,sys; h=json.load(open("h2.har"))["log"]; assert h["entries"] == [] and "HTTP/2" in h["comment"], h' \
    || fail "h2.har is not a HAR with the reason in its comment"
cli export --otlp-json h2.otlp h2 2> otlp.err; rc=$?
[ $rc = 1 ] || fail "export --otlp-json exited $rc, want 1"
grep -q 'nothing to export as OpenTelemetry' otlp.err || fail "OTLP: $(cat otlp.err)"
cli export --folded h2.folded h2 2> folded.err; rc=$?
[ $rc = 1 ] || fail "export --folded without stalls exited $rc, want 1"

# 3. A partly decoded run keeps its exchanges, exits 0, and notes the rest.
cli export --har mixed.har mixed 2> mixed.err || fail "export of a partly decoded run exited $?: $(cat mixed.err)"
grep -q 'wrote 2 HAR entries' mixed.err || fail "$(cat mixed.err)"
grep -q 'note: 1 HTTP connection was not decoded (http2: 1' mixed.err || fail "the undecoded connection is not noted: $(cat mixed.err)"
cli report --color never mixed | grep -q 'other protocol: tcp (not HTTP) *1 ' || fail "Redis is not an other protocol"

# 4. The CGI exchange: one, with the child's status, not an error.
cli report --format json cgi > cgi.json || fail "report of the CGI run exited $?"
pylogs <<'PY'
r = json.load(open("cgi.json"))
h = r["headline"]
expect_eq(h["http_requests"], 1, "exchanges")
expect_eq(h["http_errors"], 0, "errors")
expect_eq(h.get("network_error_rate"), 0, "network error rate")
expect_eq(h["handed_off"], {"joined": 1, "without_request": 0, "without_response": 0}, "handed off")
expect_eq(h["connections"], 1, "connections")
expect_eq([s.get("status") for s in r["statuses"]], [200], "statuses")
expect_eq(r["http"][0]["ttfb_us"]["p50"], 4400, "TTFB from the parent's request start to the child's response")
print("ok")
PY
cli export --chrome-trace cgi.trace cgi 2> trace.err || fail "trace export exited $?: $(cat trace.err)"
"$PYTHON" - <<'PY' || fail "the trace does not have the joined exchange"
import json
ev = [e for e in json.load(open("cgi.trace"))["traceEvents"] if e.get("cat") == "http"]
assert len(ev) == 1 and ev[0]["args"]["status"] == 200 and ev[0]["args"]["continued_by_pid"] == 101, ev
PY
finish
