# One truth in every view: over three real runs, the same quantity is the same number in the
# text report, its JSON, the HTML page, the HAR, the Chrome trace and the OTLP export:
#   1. curl (a new connection, reused ones, a 404, a slow answer) against a watched delay_server:
#      both sides of the same exchanges;
#   2. HTTPS by a resolved name (DNS, connect, TLS set-up) from python's urllib, the server
#      unwatched;
#   3. a burst past WEDJAT_HTTP_RECORDS=1 (10 records, then summaries): exchanges only counted in http_summary records.
# Compared: requests, records and summarized exchanges per host and role; HTTP errors (4xx,
# 5xx) and network errors; bytes in and out per host (as the process saw them); every
# exchange's total (request start → response end) and, for a connection's first exchange,
# its set-up (HAR's time = set-up + total); the OTLP duration histograms' counts.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
command -v curl >/dev/null || skip "curl is not installed"
command -v chromium >/dev/null || skip "chromium is not installed (scripts/deps.sh installs it)"
cli() { timeout -k 5 60 "$WEDJAT_CLI" "$@"; }

# 1. curl and the watched server
delay_server_watched run1
base=http://127.0.0.1:$port
wj run1 curl -s -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
    "$base/delay/5" "$base/delay/120" "$base/bytes/150000" "$base/missing" "$base/items/42" || fail "curl (run 1) failed"
wj run1 curl -s -o /dev/null "$base/delay/30" || fail "curl (run 1, second) failed"
bg_stop "$srv"

# 2. HTTPS by name, python's client
delay_servers_http_https
name=$(loopback_name)
wj run2 "$PYTHON" - "https://$name:$https_port" <<'PY' || fail "python client (run 2) failed"
import ssl, sys, urllib.request, urllib.error
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
for path in ("/delay/10", "/bytes/20000", "/nothere"):
    try:
        urllib.request.urlopen(sys.argv[1] + path, context=ctx).read()
    except urllib.error.HTTPError:
        pass
PY
bg_stop "$http_pid"
bg_stop "$https_pid"

# 3. past the record budget
delay_server_watched run3 WEDJAT_HTTP_RECORDS=1
urls=()
for i in $(seq 1 80); do urls+=("http://127.0.0.1:$port/delay/0"); done
for i in $(seq 1 80); do urls+=(-o /dev/null); done
wj run3 env WEDJAT_HTTP_RECORDS=1 curl -s "${urls[@]}" || fail "curl burst (run 3) failed"
bg_stop "$srv"

for run in run1 run2 run3; do
    cli report --format json --top 1000 "$run" > "$run.json" 2> "$run.err" || fail "report --format json $run: $(cat "$run.err")"
    COLUMNS=300 cli report --color never --top 1000 "$run" > "$run.txt" 2>> "$run.err" || fail "report $run"
    cli report --html "$run.html" "$run" 2>> "$run.err" || fail "report --html $run"
    cli export --har "$run.har" --chrome-trace "$run.trace.json" --otlp-json "$run.otlp.jsonl" "$run" 2>> "$run.err" \
        || fail "export $run: $(cat "$run.err")"
    timeout -k 5 60 env HOME="$TEST_TMP/home" chromium --headless --no-sandbox --disable-gpu \
        --user-data-dir="$TEST_TMP/chrome" --no-first-run --disable-background-networking --virtual-time-budget=2000 \
        --dump-dom "file://$TEST_TMP/$run.html" > "$run.dom.html" 2> chrome.err || fail "chromium --dump-dom $run"
done

pylogs . <<'PY'
import logs as _logs
_logs._soft = True   # every disagreement, not only the first
import collections, html.parser, math, re
def load(p): return json.load(open(p))

def short(us):
    """Format.shortDuration: the text report's durations."""
    if us < 0: return "-" + short(-us)
    if us < 1000: return f"{us} us"
    def sig(v, unit):
        d = 2 if v < 9.995 else 1 if v < 99.95 else 0
        return f"{fixed(v, d)} {unit}"
    if us < 999_500: return sig(us / 1000, "ms")
    return sig(us / 1e6, "s")

def fixed(v, d):
    scale = 10 ** d
    r = int(abs(v) * scale + 0.5)
    w, f = divmod(r, scale)
    return ("-" if v < 0 and r else "") + str(w) + ("." + str(f).zfill(d) if d else "")

def nbytes(n):
    """Format.bytes."""
    if n < 1024: return f"{n} B"
    v, u = n / 1024, 0
    units = ["KiB", "MiB", "GiB", "TiB"]
    while v >= 1024 and u < len(units) - 1: v /= 1024; u += 1
    return fixed(v, 1) + " " + units[u]

class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.stats, self._dt, self._in = [], {}, None, None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "wf-row" in (a.get("class") or "").split():
            self.rows.append(a)
        if tag in ("dt", "dd"):
            self._in = tag
    def handle_endtag(self, tag):
        self._in = None
    def handle_data(self, data):
        if self._in == "dt": self._dt = data.strip()
        elif self._in == "dd" and self._dt and self._dt not in self.stats: self.stats[self._dt] = data.strip()

for run in ("run1", "run2", "run3"):
    logs = load_dir(run)
    records = [r for l in logs for r in l.records("http")]
    summaries = [r for l in logs for r in l.records("http_summary")]
    rep = load(f"{run}.json")
    txt = open(f"{run}.txt").read()
    dom = Dom(); dom.feed(open(f"{run}.dom.html").read())
    har = load(f"{run}.har")["log"]["entries"]
    trace = load(f"{run}.trace.json")["traceEvents"]
    otlp = [json.loads(l) for l in open(f"{run}.otlp.jsonl")]
    expect(records, f"{run}: no http records")
    where = f"{run}:"

    # Requests per host and role: the logs, the JSON, the text's HOSTS.
    want = collections.Counter()
    for r in records: want[(r["role"], r.get("host") or r.get("peer"))] += 1
    for s in summaries: want[(s["role"], s.get("host") or "?")] += s["count"]
    got = {(h["role"], h["host"]): h["requests"] for h in rep["http"] if h["requests"]}
    expect(got == dict(want), f"{where} requests per host: JSON {got}, logs {dict(want)}")
    expect(rep["headline"]["http_requests"] == sum(want.values()), f"{where} headline requests")
    for h in rep["http"]:
        if not h["requests"]: continue
        arrow = "→" if h["role"] == "client" else "←"
        label = f"{arrow} " + ("http(s)://" if h["schemes"] == ["http", "https"] else h["schemes"][0] + "://" if len(h["schemes"]) == 1 else "") + h["host"]
        row = next((l for l in txt.splitlines() if l.startswith("  " + label + " ")), None)
        if not expect(row is not None, f"{where} no HOSTS row {label!r} in the text"): continue
        cells = row[len("  " + label):].split()
        expect(cells[0] == str(h["requests"]), f"{where} text REQS {cells[0]} vs JSON {h['requests']} for {label}")
        # IN and OUT as the process saw them: a client receives the responses.
        bin_ = sum(r["response_header_bytes"] + r["response_body_bytes"] if r["role"] == "client" else r["request_header_bytes"] + r["request_body_bytes"]
                   for r in records if (r["role"], r.get("host") or r.get("peer")) == (h["role"], h["host"]))
        bin_ += sum(s["response_bytes"] if s["role"] == "client" else s["request_bytes"] for s in summaries
                    if (s["role"], s.get("host") or "?") == (h["role"], h["host"]))
        expect(h["bytes_in"] == bin_, f"{where} bytes_in {h['bytes_in']} vs logs {bin_} for {label}")
        expect(nbytes(h["bytes_in"]) in row and nbytes(h["bytes_out"]) in row, f"{where} text IN/OUT of {label}: {row}")
    # The text headline's and the HTML cards' request and error counts.
    hl = rep["headline"]
    expect(f"{hl['http_requests']} request" in txt.splitlines()[2], f"{where} text headline: {txt.splitlines()[2]}")
    s4 = sum(h["status_classes"]["4xx"] for h in rep["http"]); s5 = sum(h["status_classes"]["5xx"] for h in rep["http"])
    net = sum(h["network_errors"] for h in rep["http"])
    expect(dom.stats.get("HTTP requests") == str(hl["http_requests"]), f"{where} HTML requests {dom.stats.get('HTTP requests')}")
    expect(dom.stats.get("HTTP errors") == str(s4 + s5), f"{where} HTML HTTP errors {dom.stats.get('HTTP errors')} vs {s4 + s5}")
    expect(dom.stats.get("network errors") == str(net), f"{where} HTML network errors {dom.stats.get('network errors')} vs {net}")
    want_errors = sum(1 for r in records if (r.get("status") or 0) >= 400) + sum(s["count"] for s in summaries if (s.get("status") or 0) >= 400)
    expect(s4 + s5 == want_errors, f"{where} 4xx+5xx {s4 + s5} vs logs {want_errors}")

    # Every exchange's total, in every view that has one row per record.
    def key(pid, conn, idx): return f"{pid}-{conn}-{idx}"
    totals = {key(r["pid"], r.get("conn_id"), r.get("request_index")): (r.get("response_end_ts") or r["ts"]) - r["request_start_ts"]
              for r in records if r.get("request_start_ts")}
    html_totals = {a["data-rec"]: int(a["data-total"]) for a in dom.rows}
    expect(html_totals == totals, f"{where} HTML totals differ: {set(html_totals.items()) ^ set(totals.items())}")
    trace_totals = {key(e["pid"], e["args"].get("conn_id"), e["args"].get("request_index")): e["dur"]
                    for e in trace if e.get("ph") == "X" and e.get("cat") == "http"}
    expect(trace_totals == totals, f"{where} trace totals differ: {set(trace_totals.items()) ^ set(totals.items())}")
    for e in har:
        k = key(e["_pid"], e["connection"].split("-")[1], e.get("_request_index"))
        t = e["timings"]
        total = round((t["send"] + t["wait"] + t["receive"]) * 1000)
        expect(total == totals.get(k), f"{where} HAR {k}: send+wait+receive {total} vs total {totals.get(k)}")
        setup = sum(max(0, t[p]) for p in ("blocked", "dns", "connect"))
        expect(abs(e["time"] - (setup + total / 1000)) < 0.0015, f"{where} HAR {k}: time {e['time']} is not set-up + total")
    expect(len(har) == sum(1 for r in records if r["role"] == "client" and r.get("request_start_ts")), f"{where} HAR entries")
    spans = [s for req in otlp[:-1] for rs in req["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"] if s["name"] != "getaddrinfo"]
    span_totals = sorted((int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) // 1000 for s in spans if s["kind"] in (2, 3) and not s["name"].startswith("get"))
    expect(span_totals == sorted(totals.values()), f"{where} OTLP span durations differ from the records' totals")
    # The JSON's slowest (all of them, --top 1000 in the text) and the text's SLOWEST rows.
    for s in rep["slowest"]:
        k = key(s["pid"], "?", "?")
        expect(s["duration_us"] in totals.values(), f"{where} slowest {s['path']}: {s['duration_us']} is no record's total")
        if s.get("setup_us") is not None:
            expect(s["elapsed_us"] == s["setup_us"] + s["duration_us"], f"{where} slowest {s['path']}: elapsed")
            phases = sum(s.get(p) or 0 for p in ("blocked_us", "dns_us", "connect_us", "tls_us"))
            expect(phases == s["setup_us"], f"{where} slowest {s['path']}: set-up phases {phases} vs {s['setup_us']}")
    block = txt.split("SLOWEST REQUESTS")[1].split("\n\n")[0].split("\n  + ")[0]
    text_totals = [l.split()[0] + " " + l.split()[1] for l in block.splitlines()[2::2] if l.strip()]
    expect(text_totals == [short(s["duration_us"]) for s in rep["slowest"]][:len(text_totals)] and len(text_totals) == len(rep["slowest"]),
           f"{where} text SLOWEST totals {text_totals[:5]} vs JSON {[short(s['duration_us']) for s in rep['slowest']][:5]}")

    # The OTLP histograms: every record with a duration, and each summary's bucket counts.
    points = [p for rm in otlp[-1]["resourceMetrics"] for sm in rm["scopeMetrics"] for m in sm["metrics"]
              if m["name"].startswith("http.") for p in m["histogram"]["dataPoints"]]
    want_points = len(totals) + sum(sum(s["duration_us"]["buckets"]) for s in summaries if "buckets" in s.get("duration_us", {}))
    expect(sum(int(p["count"]) for p in points) == want_points, f"{where} OTLP histogram counts {sum(int(p['count']) for p in points)} vs {want_points}")
    print(f"# {run}: {len(records)} records, {sum(s['count'] for s in summaries)} summarized, {len(har)} HAR entries,"
          f" {len(dom.rows)} HTML rows, {len(trace_totals)} trace slices, {len(spans)} spans agree")
expect(any(load_dir("run3")[i].records("http_summary") for i in range(len(load_dir("run3")))), "run 3 has no http_summary")
PY
rc=$?
[ $rc = 0 ] || exit $rc
echo ok
