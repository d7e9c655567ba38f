# `wedjat export --chrome-trace`: a watched fixtures/delay_server.py answers a watched curl
# making four transfers at once (-Z: four connections overlapping on curl's one thread) and
# three more on one kept-alive connection, by a name resolved with getaddrinfo; a watched
# python loop stalls three times (busy 400 ms between two select calls). The trace is loaded
# by Perfetto's trace processor (fixtures/check_trace.py; it falls back to a strict Trace
# Event Format check when the trace processor cannot be had, and says so) and its slices,
# read back with SQL, must be the logs' connections (with their connect phases), HTTP
# exchanges, DNS lookups and stalls, with their exact durations.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
command -v curl >/dev/null || skip "curl is not installed"
fixtures_dir=$WJ_LIB/../fixtures

delay_server_watched logs
host=$(loopback_name)

base=http://$host:$port
wj logs curl -s --no-progress-meter -Z --parallel-immediate --parallel-max 4 -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
    "$base/delay/200" "$base/delay/150" "$base/delay/100" "$base/delay/50" || fail "parallel curl failed"
wj logs curl -s -o /dev/null -o /dev/null -o /dev/null "$base/delay/10" "$base/bytes/5000" "$base/nothere" \
    || fail "sequential curl failed"
wj logs "$PYTHON" -c '
import select, socket, time
a, b = socket.socketpair()
for _ in range(3):
    select.select([a], [], [], 0.05)
    t = time.monotonic()
    while time.monotonic() - t < 0.4:
        pass
select.select([a], [], [], 0.01)
' || fail "the stalling loop failed"
bg_stop "$srv"

stalls=$(cat logs/*.ndjson | grep -c '"type":"stall"')
[ "$stalls" -gt 0 ] || note "no stall records in the logs (stall detection off in this build?): no stall slices to check"

timeout -k 5 60 "$WEDJAT_CLI" export --chrome-trace trace.json logs > export.out 2> export.err \
    || fail "wedjat export --chrome-trace exited $?: $(cat export.err)"
cat export.err
python3 "$fixtures_dir/check_trace.py" trace.json logs > check.out 2>&1
rc=$?
grep -v '^Downloading' check.out
[ $rc = 0 ] || fail "check_trace.py"
# Which consumer read the trace, in so many words (the perfetto package fetches its
# trace_processor_shell binary at run time, which an offline machine cannot).
if grep -q "^NOTE: Perfetto's trace processor is unavailable" check.out; then
    note "checked by: the strict Trace Event Format check, not Perfetto: its trace processor could not be had" \
        "(no network to fetch it; WJ_TRACE_PROCESSOR=/path/to/trace_processor_shell uses a local one)"
else
    grep -q "read by Perfetto's trace processor" check.out || fail "check_trace.py did not say which consumer read the trace"
    note "checked by: Perfetto's trace processor"
fi

# The four parallel connections overlap: they are on four tracks of curl's process.
python3 - trace.json <<'PY' || fail "overlapping connections share a track"
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
conns = [e for e in events if e.get("ph") == "X" and e.get("cat") == "connection" and e["name"].startswith("tcp → ")]
lanes = collections.defaultdict(set)
for c in conns:
    lanes[c["pid"]].add(c["tid"])
assert max(len(v) for v in lanes.values()) >= 4, dict(lanes)
print("# client connection tracks per process:", {p: len(v) for p, v in lanes.items()})
PY

# Stall slices carry their stack (symbolized: the function the loop spun in), and every sample
# record is a CPU and an RSS point of its process's counter tracks.
python3 - trace.json logs <<'PY' || fail "stall stacks or counters are not in the trace"
import glob, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
records = [json.loads(l) for f in glob.glob(sys.argv[2] + "/*.ndjson") for l in open(f) if l.strip()]
stalls = [e for e in events if e.get("cat") == "stall"]
with_samples = [r for r in records if r.get("type") == "stall" and r.get("samples")]
stacked = [e for e in stalls if e["args"].get("stack")]
assert len(stacked) == len(with_samples), f"{len(stacked)} stall slices with a stack, {len(with_samples)} stalls with samples"
for e in stacked:
    assert isinstance(e["args"].get("function"), str) and e["args"]["function"], e["args"]
samples = [r for r in records if r.get("type") == "sample"]
want = {("CPU %", r["pid"], r["ts"]) for r in samples if isinstance(r.get("cpu"), dict) and "total_pct" in r["cpu"]} | \
       {("RSS bytes", r["pid"], r["ts"]) for r in samples if isinstance(r.get("memory"), dict) and "rss_bytes" in r["memory"]}
got = {(e["name"], e["pid"], e["ts"]) for e in events if e.get("ph") == "C"}
assert want == got, f"counters: {len(want - got)} missing, {len(got - want)} extra"
print(f"# {len(stacked)} stall slices with stacks (e.g. {stacked[0]['args']['function'] if stacked else '-'}), {len(got)} counter points")
PY
finish
