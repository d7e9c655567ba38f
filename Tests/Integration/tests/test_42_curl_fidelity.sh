# Timing fidelity: curl's own timers (-w %{time_*}) against the connection records wedjat
# writes for the same curl process, over HTTP and HTTPS, against fixtures/delay_server.py.
# For delays of 0, 50 and 300 ms, N requests each (one curl process, one connection, one
# request), every curl watched; per request, with a tolerance of max(1 ms, 5%) of curl's value
# (judged per batch: its median, and 90% of its requests; see within() below):
#   connect   connect_us                            vs time_connect - time_namelookup
#   wait      first_byte_in_ts - first_byte_out_ts  vs time_starttransfer - time_pretransfer  (HTTP)
#   ttfb      first_byte_in_ts - open_ts            vs time_starttransfer - time_namelookup   (HTTP)
#   total     close_ts - open_ts                    vs time_total - time_namelookup
# and: /delay/300 over HTTP waits 300 ms +- 5 ms from the first byte out to the first byte in;
# /bytes/10485760 gives bytes_in == size_header + size_download (HTTP; HTTPS: >=, plus the TLS
# overhead). check_tls_and_http() below compares the TLS handshake and the http record's wait
# and duration with curl's timers the same way, and their sizes with curl's exactly.
# Env: WJ_FIDELITY_N (default 50 per delay and scheme), WJ_FIDELITY_N300 (default: the same;
# the 300 ms batches of the two schemes run side by side to keep the test near 30 s).
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"
command -v curl >/dev/null || skip "curl is not installed"
command -v openssl >/dev/null || skip "openssl is not installed"
N=${WJ_FIDELITY_N:-50}
N300=${WJ_FIDELITY_N300:-$N}

# Both servers unwatched: only curl's logs are in the log directories.
delay_servers_http_https
kill -0 "$http_pid" && kill -0 "$https_pid" || fail "a delay_server exited"

# The fields curl prints per request (rows.txt: scheme, path, curl's exit status, these).
W='%{local_port} %{num_connects} %{http_code} %{time_namelookup} %{time_connect} %{time_appconnect} %{time_pretransfer} %{time_starttransfer} %{time_total} %{size_header} %{size_download} %{size_request}\n'
# batch SCHEME PATH COUNT: COUNT watched curls, one after the other, logs in logs/SCHEME-TAG/N.
batch() {
    local scheme=$1 path=$2 count=$3 port dir i out rc
    port=$http_port
    [ "$scheme" = https ] && port=$https_port
    dir=logs/$scheme-$(echo "$path" | tr -c 'A-Za-z0-9\n' '_')
    for i in $(seq 1 "$count"); do
        # one log directory per request: local ports get reused within a batch
        out=$(wj "$dir/$i" curl -s -k -o /dev/null -w "$W" "$scheme://127.0.0.1:$port$path")
        rc=$?
        echo "$scheme $path $dir/$i $rc $out"
    done
}
: > rows.txt
t0=$(date +%s)
for scheme in http https; do
    batch "$scheme" /delay/0 "$N" >> rows.txt
    batch "$scheme" /delay/50 "$N" >> rows.txt
    batch "$scheme" /bytes/10485760 3 >> rows.txt
done
# The 300 ms batches wait most of the time: the two schemes run side by side.
batch http /delay/300 "$N300" > rows300-http.txt &
b1=$!
batch https /delay/300 "$N300" > rows300-https.txt &
b2=$!
wait "$b1" "$b2"
cat rows300-http.txt rows300-https.txt >> rows.txt
note "$(wc -l < rows.txt) watched curls in $(( $(date +%s) - t0 )) s"
kill -0 "$http_pid" && kill -0 "$https_pid" || fail "a delay_server died during the test: $(cat http.out https.out | tail -5)"
bg_stop "$http_pid"
bg_stop "$https_pid"

pylogs rows.txt <<'PY'
import collections, statistics
soft_mode()
rows = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 16:
        fail(f"bad row (curl failed?): {line.strip()}")
    scheme, path, d, rc = f[0], f[1], f[2], int(f[3])
    lport, nconn, code = int(f[4]), int(f[5]), int(f[6])
    # curl's timers are seconds from the start of the transfer; in microseconds here
    t = dict(zip(("namelookup", "connect", "appconnect", "pretransfer", "starttransfer", "total"),
                 (round(float(x) * 1e6) for x in f[7:13])))
    hdr, body, req = map(int, f[13:16])
    rows.append(dict(scheme=scheme, path=path, dir=d, rc=rc, lport=lport, nconn=nconn, code=code, t=t,
                     hdr=hdr, body=body, req=req))

def tol(v):
    return max(1000, 0.05 * abs(v))

# Each comparison: wedjat's value w against curl's cu for the same request. curl reads its
# clock when it gets round to it (after its poll returns and it runs again); wedjat at the
# call itself. On a loaded 2-core machine curl is sometimes descheduled in between, so a
# comparison is judged per (scheme, path, metric) batch: its median within tolerance, and at
# least 90% of its requests within tolerance (the outliers are listed).
diffs = collections.defaultdict(list)   # (scheme, path, metric) -> wedjat - curl, us
tols = collections.defaultdict(list)
outside = collections.defaultdict(list)
def within(row, name, w, cu, what, tolerance=None):
    if row["path"].startswith("/bytes/"):
        return   # three downloads each: there for the byte counts, too few for the timing rule
    key = (row["scheme"], row["path"], name)
    t = tol(cu) if tolerance is None else tolerance
    diffs[key].append(w - cu)
    tols[key].append(t)
    if abs(w - cu) > t:
        outside[key].append(f"{what}: {name} {w} us in wedjat's record vs {cu} us (tolerance {t:.0f} us)")

def check_tls_and_http(row, conn, http_records):
    """TLS and HTTP fidelity, per request, with the same tolerance:
      - HTTPS: the TLS phase (tls.phase_us: connect end -> handshake end, as curl counts it,
        with curl's own set-up before SSL_connect, e.g. loading the CA bundle) vs curl's
        time_appconnect - time_connect; the handshake proper (first SSL_connect call -> it
        returned 1) within it; TLS 1.3 from OpenSSL, after the connect ended;
      - the http record: GET, the path, 200, complete, the scheme; header and body sizes
        exactly curl's size_request, size_header and size_download (plaintext sizes, also
        over HTTPS);
      - wait (request's last byte sent -> response's first byte) vs time_starttransfer -
        time_pretransfer on both schemes (over HTTPS only the http record tells the request
        from the handshake); /delay/300: 300 ms +- 5 ms;
      - the exchange's duration (request start -> response end) vs time_total -
        time_pretransfer."""
    what = f"{row['scheme']}://...{row['path']} (curl local port {row['lport']})"
    t = row["t"]
    tls = conn["tls"]
    if row["scheme"] == "https":
        if expect(tls is not None and tls.get("phase_us") is not None, f"{what}: TLS phase in the record: {tls}"):
            hs, cu = tls["phase_us"], t["appconnect"] - t["connect"]
            expect(0 < tls["handshake_us"] <= hs, f"{what}: handshake {tls['handshake_us']} us within the TLS phase {hs} us")
            within(row, "tls", hs, cu, what)
            expect_eq((tls["library"], tls["version"]), ("openssl", "TLSv1.3"), f"{what}: TLS library, version")
            expect(conn["connect_end_ts"] <= tls["start_ts"] <= tls["end_ts"], f"{what}: connect end <= TLS start <= TLS end")
    else:
        expect(tls is None, f"{what}: no TLS on plain HTTP: {tls}")
    if not expect(len(http_records) == 1, f"{what}: {len(http_records)} http records"):
        return
    h = http_records[0]
    expect_eq((h["method"], h["path"], h["status"], h["complete"], h["error"], h["scheme"], h["reused"]),
              ("GET", row["path"], 200, True, None, row["scheme"], False), f"{what}: http record")
    expect_eq((h["request_header_bytes"] + h["request_body_bytes"], h["response_header_bytes"], h["response_body_bytes"]),
              (row["req"], row["hdr"], row["body"]), f"{what}: http sizes vs curl's size_request, size_header, size_download")
    expect_eq(conn["http_requests"], 1, f"{what}: http_requests on the connection")
    for name, w, cu in (("http_wait", h["wait_us"], t["starttransfer"] - t["pretransfer"]),
                        ("http_duration", h["duration_us"], t["total"] - t["pretransfer"])):
        if not expect(w is not None, f"{what}: {name} missing"):
            continue
        within(row, name, w, cu, what)
    if row["path"] == "/delay/300":
        within(row, "http_wait_300ms", h["wait_us"], 300_000, what, tolerance=5000)

logs_by_dir = {}
for r in rows:
    what = f"{r['scheme']}://...{r['path']} (curl local port {r['lport']})"
    if not expect((r["rc"], r["code"], r["nconn"]) == (0, 200, 1), f"{what}: curl exit {r['rc']}, HTTP {r['code']}, {r['nconn']} connects"):
        continue
    if r["dir"] not in logs_by_dir:
        logs_by_dir[r["dir"]] = load_dir(r["dir"])
    logs = logs_by_dir[r["dir"]]
    mine = [l for l in logs if any(c["local"] == f"127.0.0.1:{r['lport']}" for c in l.records("connection", transport="tcp"))]
    if not expect(len(mine) == 1, f"{what}: {len(mine)} curl logs with that local port"):
        continue
    log = mine[0]
    e = log.end
    expect(e is not None and (e["reason"], e["exit_status"], e["dropped_events"], e["dropped_records"]) == ("exit", 0, 0, 0),
           f"{what}: process_end {e}")
    conns = log.records("connection", transport="tcp")
    if not expect(len(conns) == 1, f"{what}: {len(conns)} connection records"):
        continue
    c = conns[0]
    t = r["t"]
    ok = expect((c["role"], c["error"], c["open_at_exit"]) == ("client", None, False), f"{what}: role/error/open_at_exit")
    ok = ok and expect(None not in (c["connect_us"], c["first_byte_out_ts"], c["first_byte_in_ts"], c["last_byte_ts"]),
                       f"{what}: missing phase times {c}")
    if not ok:
        continue
    # Every curl timer counts from the start of the transfer, which wedjat does not see; it sees
    # the connect call (open_ts). For an IP literal, time_namelookup ends a few us before curl
    # creates the socket and calls connect, so "curl timer - time_namelookup" and "wedjat ts -
    # open_ts" measure the same interval, from the connect start.
    pairs = {
        # connect: connect() called -> known established (non-blocking: SO_ERROR after poll)
        "connect": (c["connect_us"], t["connect"] - t["namelookup"]),
        # total: connect start -> end. curl stops its clock when the transfer is done; wedjat's
        # close_ts is when curl closes the socket, a moment later (after printing -w).
        "total": (c["close_ts"] - c["open_ts"], t["total"] - t["namelookup"]),
    }
    if r["scheme"] == "http":
        # time_pretransfer: the request is about to be sent; time_starttransfer: the first
        # response byte came in. wedjat: first payload byte out (the request) -> first in.
        pairs["wait"] = (c["first_byte_in_ts"] - c["first_byte_out_ts"], t["starttransfer"] - t["pretransfer"])
        pairs["ttfb"] = (c["first_byte_in_ts"] - c["open_ts"], t["starttransfer"] - t["namelookup"])
        # (over HTTPS the first bytes out and in are the ClientHello and ServerHello, not the
        # request and the response: those comparisons need the TLS/HTTP records)
    for name, (w, cu) in pairs.items():
        within(r, name, w, cu, what)
    # (over HTTPS curl's last write is its TLS close_notify, after its clock stopped)
    expect(r["scheme"] == "https" or c["last_byte_ts"] - c["open_ts"] <= t["total"] - t["namelookup"] + tol(t["total"]),
           f"{what}: last byte {c['last_byte_ts'] - c['open_ts']} us after the connect start, after curl's total")
    if r["scheme"] == "https":
        # the handshake's first reply arrives before curl calls the handshake done
        expect(c["first_byte_in_ts"] - c["open_ts"] <= t["appconnect"] - t["namelookup"] + 1000,
               f"{what}: first byte in {c['first_byte_in_ts'] - c['open_ts']} us after the connect start, after curl's appconnect {t['appconnect'] - t['namelookup']}")
    if r["path"] == "/delay/300" and r["scheme"] == "http":
        # the server holds its first byte 300 ms (its own sleep may overshoot on a busy machine)
        within(r, "wait_300ms", c["first_byte_in_ts"] - c["first_byte_out_ts"], 300_000, what, tolerance=5000)
    # bytes: over HTTP exactly what curl read (head + body) and sent; over HTTPS that plus TLS
    want_in, want_out = r["hdr"] + r["body"], r["req"]
    if r["path"].startswith("/bytes/"):
        expect(r["body"] == int(r["path"].split("/")[2]), f"{what}: curl downloaded {r['body']} bytes")
        expect(c["bytes_in"] >= 10485760, f"{what}: bytes_in {c['bytes_in']} < 10485760")
    if r["scheme"] == "http":
        expect((c["bytes_in"], c["bytes_out"]) == (want_in, want_out),
               f"{what}: bytes in/out {c['bytes_in']}/{c['bytes_out']} vs curl's head+body {want_in} / request {want_out}")
    else:
        # TLS 1.3: ~1.5 to 4 kB of handshake (certificate, tickets) + 22 bytes per record
        # (records of at most 16 kB), so at most 1% + 8 kB over the HTTP bytes.
        expect(want_in < c["bytes_in"] <= want_in * 1.01 + 8192 and want_out < c["bytes_out"] <= want_out * 1.01 + 8192,
               f"{what}: bytes in/out {c['bytes_in']}/{c['bytes_out']} vs HTTP {want_in}/{want_out} + TLS overhead")
    check_tls_and_http(r, c, log.records("http"))

# one log per watched curl, nothing else (timeout and env run unwatched)
per_dir = collections.Counter(r["dir"] for r in rows)
for d, k in sorted(per_dir.items()):
    logs = logs_by_dir.get(d) or load_dir(d)
    expect_eq((len(logs), sorted({l.exe for l in logs})), (k, ["curl"]), f"{d}: logs, programs")
for key, v in sorted(diffs.items()):
    if not v:
        continue
    med = statistics.median(v)
    expect(abs(med) <= statistics.median(tols[key]),
           f"{key}: median wedjat - curl {med:+.0f} us beyond the tolerance {statistics.median(tols[key]):.0f} us")
    out = outside.get(key, [])
    if out:
        print(f"# {key}: {len(out)} of {len(v)} outside the tolerance, e.g. {out[0]}")
    if key[2].endswith("_300ms"):
        # The server's own 300 ms sleep overshoots when the machine is busy (curl sees the same
        # wait: the "wait" comparison above, within microseconds). Here: its median within 5 ms,
        # and no wait much shorter than the hold. (A write's time is taken when the call
        # returns: a client descheduled just then shows a wait shortened by that delay.)
        expect(min(v) >= -5000, f"{key}: a response came {-min(v)} us before the 300 ms hold ended")
        continue
    expect(len(out) <= 0.1 * len(v), f"{key}: {len(out)} of {len(v)} requests outside the tolerance: {out[:3]}")
n = collections.Counter((r["scheme"], r["path"]) for r in rows)
for (scheme, path), k in sorted(n.items()):
    parts = []
    for name in ("connect", "tls", "wait", "ttfb", "total", "http_wait", "http_duration", "wait_300ms", "http_wait_300ms"):
        v = diffs.get((scheme, path, name))
        if v:
            parts.append(f"{name} {statistics.median(v):+.0f} [{min(v):+d}..{max(v):+d}]")
    print(f"# {scheme:5} {path:16} {k:3} requests; wedjat - curl, us (median [min..max]): " + ", ".join(parts))
PY
