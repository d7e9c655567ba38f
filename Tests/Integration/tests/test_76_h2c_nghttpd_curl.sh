# HTTP/2 in clear text with prior knowledge (issue 16): curl --http2-prior-knowledge against
# nghttpd --no-tls (Debian's nghttp2-server), both watched, one request per curl (several
# URLs in one curl make nghttpd 1.52 fail: exit 16): a small file, a query (redacted), a 404
# and a 1 MiB body. Each curl's client record and nghttpd's server record: method, path,
# status, version HTTP/2, stream id 1, body bytes equal to curl's size_download, phases in
# order, TTFB within max(1 ms, 5%) of curl's time_starttransfer - time_pretransfer; the
# connections say http_version HTTP/2.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/h2.sh"
command -v nghttpd >/dev/null || skip "nghttpd is not installed (scripts/deps.sh installs nghttp2-server)"
command -v curl >/dev/null || skip "curl is not installed"
curl --version | grep -q nghttp2 || skip "this curl has no HTTP/2"
mkdir -p www
echo "hello from nghttpd" > www/index.html
head -c 1000 /dev/urandom > www/small.bin
head -c 1048576 /dev/urandom > www/big.bin
port=$(free_port)
wj_bg nghttpd logs/srv nghttpd --no-tls --address=127.0.0.1 -d "$TEST_TMP/www" "$port"
srv=$BG_PID
wait_port "$port" 10 || fail "nghttpd did not listen: $(tail -3 nghttpd.out)"
W='%{local_port} %{http_code} %{http_version} %{size_download} %{size_upload} %{time_pretransfer} %{time_starttransfer} %{time_total}\n'
i=0
for path in /index.html /small.bin "/small.bin?token=qsecret" /missing /big.bin /index.html; do
    out=$(wj "logs/curl/$i" curl -s --http2-prior-knowledge -o /dev/null -w "$W" "http://127.0.0.1:$port$path") ||
        soft_fail "curl $path exited $?"
    echo "$path $out" >> curl.txt
    i=$((i + 1))
done
bg_stop "$srv" TERM
pylogs <<'PY'
import glob
from h2checks import *
soft_mode()
rows = curl_rows("curl.txt")
expect_eq([r["code"] for r in rows], [200, 200, 200, 404, 200, 200], "curl's statuses")
srv = load_dir("logs/srv")
server_http = [h for h in records(srv, "http") if h["role"] == "server"]
expect_eq(len(server_http), len(rows), "nghttpd's server http records")
redact = lambda p: p.split("?")[0] + "?REDACTED" if "?" in p else p
check_curl_pairs(rows, lambda i: load_dir(f"logs/curl/{i}"), server_http, "http", redact)
big = [r for r in rows if r["url_path"] == "/big.bin"]
expect(big and big[0]["size_download"] == 1048576, "the 1 MiB body")
sconns = [c for c in records(srv, "connection") if c["role"] == "server" and c["transport"] == "tcp"]
expect_eq(sorted((c.get("http_version"), c.get("http_requests")) for c in sconns), [("HTTP/2", 1)] * len(rows),
          "nghttpd's connections")
for f in glob.glob("logs/**/*.ndjson", recursive=True):
    expect("qsecret" not in open(f).read(), f"{f}: holds the query")
PY
h2_schema_check logs
finish
