# HTTP/2 over TLS (issue 16): curl (OpenSSL, ALPN h2) against nginx with `listen ... ssl
# http2`, both watched, one request per curl: a small file, a 404 and a 1 MiB body, and one
# curl with three URLs on one connection (streams 1, 3, 5: reuse). Client and server records:
# scheme https, version HTTP/2, statuses, paths, bytes equal to curl's, TTFB within max(1 ms,
# 5%) of curl's time_starttransfer - time_pretransfer; the connections: TLS ALPN h2 and
# http_version HTTP/2.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/h2.sh"
. "$WJ_LIB/nginx.sh"
command -v curl >/dev/null || skip "curl is not installed"
command -v openssl >/dev/null || skip "openssl is not installed"
curl --version | grep -q nghttp2 || skip "this curl has no HTTP/2"
h2_certs
h2_port=$(free_port)
nginx_start 1048576 64 1 warn "keepalive_timeout 10;
        listen 127.0.0.1:$h2_port ssl http2;
        ssl_certificate $TEST_TMP/cert.pem;
        ssl_certificate_key $TEST_TMP/key.pem;"
echo "small" > www/small.txt
W='%{local_port} %{http_code} %{http_version} %{size_download} %{size_upload} %{time_pretransfer} %{time_starttransfer} %{time_total}\n'
i=0
for path in /small.txt /missing /f.bin /small.txt; do
    out=$(wj "logs/curl/$i" curl -sk --http2 -o /dev/null -w "$W" "https://127.0.0.1:$h2_port$path") ||
        soft_fail "curl $path exited $?"
    echo "$path $out" >> curl.txt
    i=$((i + 1))
done
# three URLs, one connection
wj logs/multi curl -sk --http2 -o /dev/null -o /dev/null -o /dev/null -w "$W" \
    "https://127.0.0.1:$h2_port/small.txt" "https://127.0.0.1:$h2_port/f.bin" "https://127.0.0.1:$h2_port/nope" > multi.txt ||
    soft_fail "curl with three URLs exited $?"
nginx_stop
pylogs "$h2_port" <<'PY'
from h2checks import *
soft_mode()
h2_port = sys.argv[1]
rows = curl_rows("curl.txt")
expect_eq([r["code"] for r in rows], [200, 404, 200, 200], "curl's statuses")
nginx = [l for l in load_dir("logs") if l.exe == "nginx"]
server_http = [h for h in records(nginx, "http") if h["role"] == "server"]
check_curl_pairs(rows, lambda i: load_dir(f"logs/curl/{i}"), server_http, "https", lambda p: p)
for i in range(len(rows)):
    for c in records(load_dir(f"logs/curl/{i}"), "connection", transport="tcp"):
        expect_eq(((c["tls"] or {}).get("alpn"), c.get("http_version")), ("h2", "HTTP/2"), f"curl {i}: ALPN and http_version")
# one connection, three streams
multi = [l.split() for l in open("multi.txt")]
mh = sorted(records(load_dir("logs/multi"), "http"), key=lambda h: h["stream_id"])
expect_eq([(h["stream_id"], h["path"], h["status"], h["request_index"], h["reused"]) for h in mh],
          [(1, "/small.txt", 200, 0, False), (3, "/f.bin", 200, 1, True), (5, "/nope", 404, 2, True)],
          "three URLs on one connection: stream ids, paths, statuses, reuse")
expect_eq([h["response_body_bytes"] for h in mh], [int(l[3]) for l in multi], "their body bytes (curl's size_download)")
expect_eq(len({h["conn_id"] for h in mh}), 1, "one connection")
mconn = [c for c in records(load_dir("logs/multi"), "connection", transport="tcp")]
expect_eq([c.get("http_requests") for c in mconn], [3], "http_requests of that connection")
expect_eq(len([h for h in server_http if h["path"] in ("/small.txt", "/f.bin", "/nope")]), len(rows) - 1 + 3,
          "nginx's records of the same requests")
PY
h2_schema_check logs
finish
