# Fidelity matrix, traffic beyond HTTP/1 (issue 15): HTTP/2 is decoded, and every connection
# with bytes and no exchange says why (http_none), the report says how much was decoded and
# why not (a COVERAGE line), and an export that writes nothing says why, with a non-zero exit
# status. Every program watched:
#   a. curl --http2 over TLS (ALPN h2) to nginx (listen ... ssl http2): curl's OpenSSL is
#      hooked, its plaintext is HTTP/2 frames: on curl's connections and on nginx's one
#      exchange each (stream 1, the status curl saw), http_version "HTTP/2", TLS ALPN h2;
#   b. curl --http2-prior-knowledge (h2c) to nginx (listen ... http2): the same, in clear;
#   c. a Node https client (Node's own OpenSSL, linked into the node binary, not hooked) to
#      the python https server: http_none "tls_not_hooked" on Node's connections, the
#      server's side (python's OpenSSL, hooked) has every exchange;
#   d. Java's HttpClient over https (JSSE, Java's own TLS): the same; `wedjat export --har`
#      of Node's logs exits non-zero naming tls_not_hooked;
#   e. `wedjat report` of c and d: a COVERAGE line with the reasons.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/fidelity.sh"
. "$WJ_LIB/nginx.sh"
command -v curl >/dev/null || skip "curl is not installed"
command -v openssl >/dev/null || skip "openssl is not installed"
command -v node >/dev/null || skip "node is not installed (scripts/deps.sh installs nodejs)"
command -v javac >/dev/null || skip "no JDK (scripts/deps.sh installs default-jdk-headless)"
[ -n "$WEDJAT_CLI" ] || skip "needs the CLI"
F=$WJ_LIB/../fixtures
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 -keyout key.pem -out cert.pem \
    > openssl.out 2>&1 || fail "openssl req failed: $(tail -3 openssl.out)"

# a, b: nginx with an h2 (TLS) and an h2c listener
h2_port=$(free_port)
h2c_port=$(free_port)
nginx_start 20000 64 1 warn "access_log $TEST_TMP/access.log;
        listen 127.0.0.1:$h2_port ssl http2;
        listen 127.0.0.1:$h2c_port http2;
        ssl_certificate $TEST_TMP/cert.pem;
        ssl_certificate_key $TEST_TMP/key.pem;"
for i in 1 2 3; do
    wj logs/h2 curl -sk --http2 -o /dev/null -w '%{http_version} %{http_code}\n' "https://127.0.0.1:$h2_port/f.bin" >> h2.txt \
        || soft_fail "curl --http2 exited $?"
    wj logs/h2c curl -s --http2-prior-knowledge -o /dev/null -w '%{http_version} %{http_code}\n' "http://127.0.0.1:$h2c_port/f.bin" >> h2c.txt \
        || soft_fail "curl --http2-prior-knowledge exited $?"
done
nginx_stop

# c, d: the python https server, Node and Java clients
fid_server srv-tls logs/tls-server "$PYTHON" "$F/fid_py_server.py" threading --tls cert.pem key.pem
wj logs/node node "$F/fid_node_client.js" https "https://127.0.0.1:$port" 6 /status/200 /status/404 \
    > node.txt 2> node.err || soft_fail "node https client exited $?: $(tail -3 node.err)"
mkdir -p classes
javac -d classes "$F/fid_java_client.java" > javac.out 2>&1 || fail "javac: $(tail -5 javac.out)"
wj logs/java java -XX:TieredStopAtLevel=1 -Djdk.internal.httpclient.disableHostnameVerification=true -cp classes \
    fid_java_client "https://127.0.0.1:$port" 6 0 /status/200 /status/404 > java.txt 2> java.err \
    || soft_fail "java https client exited $?: $(tail -3 java.err)"
fid_stop "$srv"
tls_port=$port

"$WEDJAT_CLI" export --har node.har logs/node > har.out 2> har.err
har_rc=$?
for d in node java; do
    "$WEDJAT_CLI" report "logs/$d" > "report-$d.txt" 2> "report-$d.err" || soft_fail "report of $d: $(tail -3 "report-$d.err")"
done

pylogs "$tls_port" "$har_rc" <<'PY'
import collections
from fidelity import *
soft_mode()
tls_port, har_rc = map(int, sys.argv[1:])

def decoded_h2(what, conns, http):
    expect(conns, f"{what}: no connection recorded")
    for c in conns:
        name = f"{what}: {c['local']} -> {c['peer']}"
        expect_eq((c.get("http_requests"), c.get("http_none"), c.get("http_version")), (1, None, "HTTP/2"),
                  f"{name} (http_requests, http_none, http_version)")
        ex = [h for h in http if h["conn_id"] == c["conn_id"] and h["pid"] == c["pid"]]
        expect_eq([(h["version"], h["stream_id"], h["status"], h["path"], h["complete"]) for h in ex],
                  [("HTTP/2", 1, 200, "/f.bin", True)], f"{name}: its exchanges")

def reasons(what, conns, want):
    expect(conns, f"{what}: no connection recorded")
    for c in conns:
        expect(c["bytes_in"] > 0 and c["bytes_out"] > 0, f"{what}: {c['local']} -> {c['peer']} moved bytes")
        expect_eq((c.get("http_requests"), c.get("http_none")), (0, want),
                  f"{what}: {c['local']} -> {c['peer']} (http_requests, http_none)")

nginx = [l for l in load_dir("logs") if l.exe == "nginx"]
for d, port in (("h2", None), ("h2c", None)):
    lines = [l.split() for l in open(f"{d}.txt")]
    expect_eq(lines, [["2", "200"]] * 3, f"{d}: curl's HTTP version and status per request")
    cl = load_dir(f"logs/{d}")
    cc = [c for c in records(cl, "connection") if c["transport"] == "tcp"]
    expect_eq(len(cc), 3, f"{d}: curl connections")
    decoded_h2(f"{d}: curl", cc, records(cl, "http"))
    local = {c["local"] for c in cc}
    decoded_h2(f"{d}: nginx", [c for c in records(nginx, "connection") if c["peer"] in local], records(nginx, "http"))
    if d == "h2":
        for c in cc:
            expect_eq((c["tls"] or {}).get("alpn"), "h2", f"h2: ALPN of {c['local']}")
access = [l.split() for l in open("access.log")]
expect_eq(collections.Counter(f[8] for f in access), collections.Counter({"200": 6}), "nginx's access log")

served = collections.Counter((server_counts("srv-tls.out") or {}).get("statuses", {}))
for d in ("node", "java"):
    lines = client_lines(f"{d}.txt")
    expect_eq(len(lines), 6, f"{d}: requests the client reports")
    reasons(f"{d} https client", [c for c in records(load_dir(f"logs/{d}"), "connection")
                                  if c["transport"] == "tcp" and c["peer"].endswith(f":{tls_port}")], "tls_not_hooked")
expect_eq(sum(served.values()), 12, "python https server: requests it answered")
check_exchanges("python https server <- node and java", load_dir("logs/tls-server"), "server", served)

# the export with nothing to write says why
har_err = open("har.err").read()
expect(har_rc != 0, f"export --har of Node's logs exited 0 (stderr: {har_err.strip()[:200]!r})")
expect("tls_not_hooked" in har_err, f"export --har does not say why it wrote nothing: {har_err.strip()[:300]!r}")
for d, why in (("node", "tls_not_hooked"), ("java", "tls_not_hooked")):
    text = open(f"report-{d}.txt").read()
    cov = [l for l in text.splitlines() if "COVERAGE" in l.upper()]
    expect(cov and any(why in l for l in text.splitlines()[text.splitlines().index(cov[0]):][:8]),
           f"report of {d}: no COVERAGE line naming {why}: {cov[:2]}")
PY
