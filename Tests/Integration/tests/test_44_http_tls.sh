# HTTP/1 records from real clients and a real server, plaintext and over TLS:
# - curl (OpenSSL) against fixtures/http_variety_server.py, plain and HTTPS, all on one
#   keep-alive connection per scheme: Content-Length, chunked (extensions, trailer), HEAD,
#   204, 304, a 103 before the final 200, a POST with a body, then a close-delimited body on
#   a last connection. Each http record's method, path (query redacted), status, body bytes
#   (curl's own %{size_download}), reuse and phase order are checked; the HTTPS connection
#   carries the TLS version and ALPN that curl itself reports.
# - the server (python, its libssl loaded RTLD_LOCAL by the _ssl module) sees the same
#   requests as server-role http records.
# - git (libcurl-gnutls) over HTTPS: a GnuTLS handshake and an http record.
# - No header value outside the allowlist (a secret Authorization header, a cookie) and no
#   query string reaches any log.
. "$WJ_LIB/common.sh"

openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 -keyout key.pem -out cert.pem 2>/dev/null \
    || skip "openssl cannot make a certificate"
wj_bg plain logs_plain "$PYTHON" "$WJ_LIB/../fixtures/http_variety_server.py"
plain_pid=$BG_PID
wj_bg tls logs_tls "$PYTHON" "$WJ_LIB/../fixtures/http_variety_server.py" --tls cert.pem key.pem
tls_pid=$BG_PID
wait_file plain.out 10 && wait_file tls.out 10 || fail "servers did not start: $(cat plain.out tls.out)"
plain_port=$(sed -n 's/^port //p' plain.out) tls_port=$(sed -n 's/^port //p' tls.out)
[ -n "$plain_port" ] && [ -n "$tls_port" ] || fail "no ports: '$plain_port' '$tls_port'"

fmt='%{http_code} %{size_download} %{num_connects}\n'
for scheme in http https; do
    port=$plain_port; [ $scheme = https ] && port=$tls_port
    base="$scheme://127.0.0.1:$port"
    # One curl, one keep-alive connection: --next starts a new set of options, not a new connection.
    wj "logs_curl_$scheme" curl -sk --http1.1 -o /dev/null -w "$fmt" -H "Authorization: Bearer topsecret-token" -b "session=cookie-secret" \
        "$base/len/1234?key=qsecret" "$base/chunked/2500" \
        --next -sk --http1.1 -o /dev/null -w "$fmt" -I "$base/len/77" \
        --next -sk --http1.1 -o /dev/null -w "$fmt" "$base/empty" "$base/notmod" "$base/continue" \
        --next -sk --http1.1 -o /dev/null -w "$fmt" -d "0123456789" "$base/echo" > "curl_$scheme.1" 2> "curl_$scheme.err" \
        || fail "curl $scheme (1) exited $?: $(cat "curl_$scheme.err")"
    : > "curl_$scheme.2"
    wj "logs_curl_$scheme" curl -sk --http1.1 -o /dev/null -w "$fmt" "$base/close/3000" > "curl_$scheme.3" 2>> "curl_$scheme.err" \
        || fail "curl $scheme (3) exited $?"
    [ $scheme = https ] && wj "logs_curl_$scheme" curl -sk --http1.1 -o /dev/null -w '%{ssl_verify_result}\n' "$base/len/1" > /dev/null
done
curl -sk -o /dev/null -w '%{http_version}\n' --http1.1 "https://127.0.0.1:$tls_port/len/1" > alpn.txt

git_ok=0
if command -v git >/dev/null; then
    GIT_SSL_NO_VERIFY=1 GIT_TERMINAL_PROMPT=0 wj logs_git git ls-remote "https://127.0.0.1:$tls_port/repo.git?tok=gsecret" \
        > git.out 2> git.err
    git_ok=1
fi
bg_stop "$plain_pid"
bg_stop "$tls_pid"

pylogs "$git_ok" <<'PY'
import glob
soft_mode()
git_ok = sys.argv[1] == "1"

def http_of(d):
    return [r for r in records(load_dir(d), "http")]

for scheme in ("http", "https"):
    logs = load_dir(f"logs_curl_{scheme}")
    curl_lines = [l.split() for n in (1, 2, 3) for l in open(f"curl_{scheme}.{n}") if l.strip()]
    hs = sorted(records(logs, "http"), key=lambda r: r["request_start_ts"])
    got = [(h["method"], h["path"], h["status"]) for h in hs]
    want = [("GET", "/len/1234?REDACTED", 200), ("GET", "/chunked/2500", 200), ("HEAD", "/len/77", 200),
            ("GET", "/empty", 204), ("GET", "/notmod", 304), ("GET", "/continue", 200), ("POST", "/echo", 200),
            ("GET", "/close/3000", 200)] + ([("GET", "/len/1", 200)] if scheme == "https" else [])
    expect_eq(got, want, f"{scheme}: (method, path, status) of the http records")
    if len(hs) != len(want):
        continue
    # curl's %{size_download} is the decoded body; chunked framing is counted on the wire.
    bodies = [h["response_body_bytes"] for h in hs]
    expect_eq(bodies[0], 1234, f"{scheme}: Content-Length body bytes")
    expect(bodies[1] > 2500, f"{scheme}: chunked body on the wire includes the framing: {bodies[1]}")
    expect_eq(bodies[2:5], [0, 0, 0], f"{scheme}: HEAD, 204, 304 have no body")
    expect_eq((hs[5]["interim_responses"] if "interim_responses" in hs[5] else 0, bodies[5]), (1, 5), f"{scheme}: 103 then 200 with 5 bytes")
    expect_eq((hs[6]["request_body_bytes"], bodies[6]), (10, 10), f"{scheme}: POST body and its echo")
    expect_eq(bodies[7], 3000, f"{scheme}: close-delimited body")
    expect_eq([h["reused"] for h in hs[:7]], [False] + [True] * 6, f"{scheme}: keep-alive reuse in the first curl")
    expect_eq([int(l[1]) for l in curl_lines[:2]], [1234, 2500], f"{scheme}: curl's own size_download")
    for h in hs:
        expect(h["complete"] and h["error"] is None, f"{scheme} {h['path']}: complete, no error: {h['error']}")
        expect(h["request_start_ts"] <= h["request_end_ts"] <= h["response_start_ts"] <= h["response_end_ts"],
               f"{scheme} {h['path']}: phases in order")
        expect_eq(h["scheme"], scheme, f"{h['path']}: scheme")
    conns = records(logs, "connection", transport="tcp")
    expect_eq(sum(c["http_requests"] for c in conns), len(want), f"{scheme}: http_requests over the connections")
    if scheme == "https":
        tls = [c["tls"] for c in conns]
        expect(all(t and t["library"] == "openssl" and t["version"] == "TLSv1.3" and t["alpn"] == "http/1.1" for t in tls),
               f"https connections: TLS facts {tls[:2]}")
        expect(all(t["start_ts"] <= t["end_ts"] for t in tls), "tls start <= end")
        expect(all(c["connect_end_ts"] <= c["tls"]["start_ts"] for c in conns), "TLS starts after connect")

# the servers' view
for scheme, name in (("http", "plain"), ("https", "tls")):
    sv = [h for h in http_of(f"logs_{name}") if h["role"] == "server"]
    want = 8 + (1 if scheme == "https" else 0) + (1 if scheme == "https" and git_ok else 0)
    expect(len(sv) >= want, f"{name} server: {len(sv)} server http records, want at least {want}")
    expect(any(h["path"] == "/len/1234?REDACTED" and h["status"] == 200 for h in sv), f"{name} server: the first request")

if git_ok:
    logs = load_dir("logs_git")
    tls = [c["tls"] for c in records(logs, "connection", transport="tcp") if c["tls"]]
    expect(any(t["library"] == "gnutls" and t["version"] in ("TLSv1.2", "TLSv1.3") and t["end_ts"] for t in tls),
           f"git: a GnuTLS handshake: {tls}")
    gh = records(logs, "http")
    expect(any(h["path"].startswith("/repo.git?REDACTED") and h["status"] == 404 and h["scheme"] == "https" for h in gh),
           f"git: its request (git appends info/refs after the query, so all of it is redacted) over GnuTLS: {[(h['path'], h['status']) for h in gh]}")

# secrets: nothing of the Authorization header, the cookie or the query strings in any log
for d in glob.glob("logs_*"):
    for f in glob.glob(f"{d}/*.ndjson"):
        text = open(f).read()
        for secret in ("topsecret-token", "cookie-secret", "qsecret", "gsecret"):
            expect(secret not in text, f"{f}: contains {secret}")
print("ok")
PY
