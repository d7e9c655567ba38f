# Long-running servers rotate their log instead of going blind (issue 17): nginx under 5,000
# requests with WEDJAT_SEGMENT_MB=1 writes 5+ segments, each starting with process_start (its
# segment number in it) and, but the last, ending with segment_end; no exchange is lost (the
# http records and http_summary counts add up to curl's 5,000), and `wedjat report` counts the
# same requests as for a run without rotation. With WEDJAT_RETAIN_MB=2 the oldest segments go,
# each removal recorded (segments_removed), and what stays is within the retention.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/nginx.sh"
[ -n "$WEDJAT_CLI" ] || skip "needs the CLI"

run() {  # NAME SEGMENT_MB RETAIN_MB
    rm -rf logs nginx.pid
    export WEDJAT_SEGMENT_MB=$2 WEDJAT_RETAIN_MB=$3 WEDJAT_HTTP_RECORDS=100000
    nginx_start 600 256 1
    unset WEDJAT_SEGMENT_MB WEDJAT_RETAIN_MB WEDJAT_HTTP_RECORDS
    nginx_curl_requests 5000 150
    nginx_stop
    mv logs "logs_$1"
}
run rotated 1 0
run whole 0 0
run retained 1 2

pylogs logs_rotated logs_whole logs_retained <<'PY'
import glob, os
def worker_segments(d):
    segs = {}
    for p in glob.glob(os.path.join(d, "nginx.*.ndjson")):
        recs = load_lines(p)
        segs.setdefault(recs[0]["log"], []).append((recs[0].get("segment"), p, recs))
    return segs

def exchanges(all_recs):
    http = sum(1 for r in all_recs if r["type"] == "http")
    summ = sum(r["count"] for r in all_recs if r["type"] == "http_summary")
    return http + summ

rot = worker_segments(sys.argv[1])
busy = max(rot.values(), key=len)
busy.sort(key=lambda s: s[0])
expect([s[0] for s in busy] == list(range(len(busy))), f"segment numbers {[s[0] for s in busy]}")
expect(len(busy) >= 5, f"segments of the busy worker: {len(busy)}")
for n, p, recs in busy:
    expect_eq(recs[0]["type"], "process_start", f"{p}: first record")
    expect_eq(recs[0]["segment"], n, f"{p}: process_start.segment")
    last = recs[-1]["type"]
    expect_eq(last, "segment_end" if n < len(busy) - 1 else "process_end", f"{p}: last record")
    ends = [r for r in recs if r["type"] == "segment_end"]
    if ends:
        expect_eq(os.path.basename(ends[0]["next"]), os.path.basename(busy[n + 1][1]), f"{p}: segment_end.next")
all_rot = [r for segs in rot.values() for _, _, recs in segs for r in recs]
expect_eq(exchanges(all_rot), 5000, "exchanges recorded across the segments")
whole = [r for p in glob.glob(os.path.join(sys.argv[2], "nginx.*.ndjson")) for r in load_lines(p)]
expect_eq(exchanges(whole), 5000, "exchanges without rotation")

ret = worker_segments(sys.argv[3])
busy = max(ret.values(), key=len)
removed = [r for _, _, recs in busy for r in recs if r["type"] == "segments_removed"]
expect(len(removed) >= 1, "segments_removed records")
gone = sum(len(r["segments"]) for r in removed)
kept = sum(os.path.getsize(p) for _, p, _ in busy)
expect(kept <= 3 * 1024 * 1024, f"bytes kept {kept} within the retention (2 MiB) and the live segment")
expect(all(r["reason"] == "retain_mb" for r in removed), "reason retain_mb")
print(f"rotation: {len(rot[max(rot, key=lambda k: len(rot[k]))])} segments; retention removed {gone}, kept {kept} bytes")
PY
[ $? = 0 ] || fail "segments"
a=$("$WEDJAT_CLI" report --format json logs_rotated | python3 -c 'import json,sys; h=json.load(sys.stdin)["headline"]; print(h["http_requests"], h["connections"])')
b=$("$WEDJAT_CLI" report --format json logs_whole | python3 -c 'import json,sys; h=json.load(sys.stdin)["headline"]; print(h["http_requests"], h["connections"])')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "report requests: rotated $a, without rotation $b"
finish
