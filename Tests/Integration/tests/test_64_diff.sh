# `wedjat diff` as a CI regression gate, on two real runs of curl against delay_server.py:
# run A waits 20 ms for each response, run B 150 ms. The diff shows TTFB growing by about
# 130 ms; a threshold it crosses exits 1, one it does not exits 0, per host too; a report
# saved with --format json diffs like its logs; bad input exits 2 with a message.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
cli() { timeout -k 5 60 "$WEDJAT_CLI" "$@"; }

bg_start server "$PYTHON" "$DELAY_SERVER"
srv=$BG_PID
delay_server_port server port
for run in a:20 b:150; do
    name=${run%%:*} ms=${run#*:}
    urls=()
    for i in 1 2 3 4 5 6; do urls+=("http://127.0.0.1:$port/delay/$ms"); done
    wj "$TEST_TMP/$name" curl -s "${urls[@]}" > /dev/null || fail "curl (run $name) exited $?"
done
bg_stop "$srv"

# 1. No threshold: exit 0, the TTFB rows there.
cli diff --color never a b > diff.txt 2> diff.err || fail "diff without thresholds exited $?: $(cat diff.err)"
cat diff.txt
grep -qE '^  ttfb\.p50 ' diff.txt || fail "no ttfb.p50 row"
grep -q "127.0.0.1:$port" diff.txt || fail "the host 127.0.0.1:$port is not in the diff"

# 2. Thresholds: crossed → 1, not crossed → 0 (150 / 20 ms is about +650%).
cli diff --fail-if 'ttfb.p99>+50%' a b > /dev/null; rc=$?
[ $rc = 1 ] || fail "ttfb.p99>+50% exited $rc, want 1"
cli diff --fail-if 'ttfb.p99>+5000%' --fail-if 'http.error_rate>+0.5pp' a b > /dev/null; rc=$?
[ $rc = 0 ] || fail "ttfb.p99>+5000% and http.error_rate>+0.5pp exited $rc, want 0"
cli diff --fail-if "ttfb.p50@127.0.0.1:$port>+100ms" a b > /dev/null; rc=$?
[ $rc = 1 ] || fail "per-host ttfb.p50>+100ms exited $rc, want 1"
cli diff --fail-if "ttfb.p50@127.0.0.1:$port>+200ms" a b > /dev/null; rc=$?
[ $rc = 0 ] || fail "per-host ttfb.p50>+200ms exited $rc, want 0"
# The host as the report prints it, or by name alone; an endpoint, its numbers folded.
cli diff --fail-if "ttfb.p50@http://127.0.0.1:$port>+100ms" a b > /dev/null; rc=$?
[ $rc = 1 ] || fail "ttfb.p50@http://127.0.0.1:$port>+100ms exited $rc, want 1"
cli diff --fail-if "ttfb.p50@127.0.0.1>+100ms" a b > /dev/null; rc=$?
[ $rc = 1 ] || fail "ttfb.p50@127.0.0.1 (any port) exited $rc, want 1"
cli diff --fail-if "ttfb.p50@GET /delay/{n}>+100ms" a b > endpoint.txt; rc=$?
[ $rc = 1 ] || fail "ttfb.p50@GET /delay/{n} exited $rc, want 1"
grep -q "GET /delay/{n}" endpoint.txt || fail "no ENDPOINTS row for GET /delay/{n}: $(cat endpoint.txt)"

# 3. JSON: the values, and the thresholds' verdicts.
cli diff --format json --fail-if 'ttfb.p99>+50%' --fail-if 'rss.peak>+20%' a b > diff.json; rc=$?
[ $rc = 1 ] || fail "diff --format json with a crossed threshold exited $rc"
"$PYTHON" - diff.json <<'EOF' || fail "diff JSON is not right"
import json, sys
d = json.load(open(sys.argv[1]))
m = {r["metric"]: r for r in d["metrics"]}
a, b = m["ttfb.p50"]["a"], m["ttfb.p50"]["b"]
ok = 20000 <= a < 60000 and 150000 <= b < 250000 and 100000 <= m["ttfb.p50"]["change"] < 200000
ok &= m["requests"]["a"] == m["requests"]["b"] == 6
t = {x["expression"]: x for x in d["thresholds"]}
ok &= t["ttfb.p99>+50%"]["status"] == "fail" and t["rss.peak>+20%"]["status"] in ("pass", "not_evaluated")
ok &= d["failed"] is True and d["diff_version"] == 2
print(f"ttfb p50 {a} -> {b} us; thresholds {[(k, v['status']) for k, v in t.items()]}")
sys.exit(0 if ok else 1)
EOF

# 4. A saved report is a run too: the same numbers as from the logs.
cli report --format json a > a.json || fail "report --format json exited $?"
cli diff --format json a.json b > saved.json; cli diff --format json a b > logs.json
"$PYTHON" - saved.json logs.json <<'EOF' || fail "diff from a saved report differs from the diff of the logs"
import json, sys
s, l = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if s["metrics"] == l["metrics"] and s["hosts"] == l["hosts"] else 1)
EOF

# 5. Bad input: exit 2 and a message that says what is wrong.
expect_2() {
    local what=$1 want=$2
    shift 2
    cli diff "$@" > /dev/null 2> bad.err; rc=$?
    [ $rc = 2 ] || fail "$what exited $rc, want 2"
    grep -q -- "$want" bad.err || fail "$what: message does not say '$want': $(cat bad.err)"
}
expect_2 "a malformed threshold" "unknown metric \"ttfb.p98\"" --fail-if 'ttfb.p98>+1%' a b
expect_2 "a threshold without an operator" "no comparison" --fail-if 'ttfb.p99' a b
expect_2 "a missing run" "no wedjat logs" a "$TEST_TMP/nowhere"
expect_2 "one run" "diff takes two runs" a
expect_2 "a host in neither run" "matches no host or endpoint in either run" --fail-if 'ttfb.p99@nowhere.example>+1%' a b
expect_2 "an endpoint in neither run" "matches no host or endpoint in either run" --fail-if 'ttfb.p99@GET /nowhere>+1%' a b
echo '{"report_version": 2}' > old.json
expect_2 "an old saved report" "report_version 2" old.json b
echo ok
