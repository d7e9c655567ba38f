# HTTP/2 multiplexed (issue 16): h2load -n 2000 -c 4 -m 10 over TLS (ALPN h2) against nginx,
# both watched: nginx's server exchanges (http records plus those counted in http_summary)
# and h2load's client exchanges both equal h2load's own count of succeeded requests, every
# one status 200 with the file's bytes; 4 connections on each side, http_version HTTP/2, whose
# http_requests add up to the same count; no stream cut (error null).
. "$WJ_LIB/common.sh"
. "$WJ_LIB/h2.sh"
. "$WJ_LIB/nginx.sh"
command -v h2load >/dev/null || skip "h2load is not installed (scripts/deps.sh installs nghttp2-client)"
h2_certs
h2_port=$(free_port)
nginx_start 606 256 1 warn "keepalive_timeout 60; keepalive_requests 100000; http2_max_requests 100000;
        listen 127.0.0.1:$h2_port ssl http2;
        ssl_certificate $TEST_TMP/cert.pem;
        ssl_certificate_key $TEST_TMP/key.pem;"
wj logs/h2load h2load -n 2000 -c 4 -m 10 "https://127.0.0.1:$h2_port/f.bin" > h2load.txt 2>&1 || soft_fail "h2load exited $?"
nginx_stop
grep -E "^requests:|^status codes:|Application protocol" h2load.txt | sed 's/^/# /'
pylogs <<'PY'
import re
soft_mode()
text = open("h2load.txt").read()
m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded", text)
expect(m, "h2load's requests line")
succeeded = int(m.group(4)) if m else -1
expect_eq(succeeded, 2000, "h2load: succeeded requests")
expect("Application protocol: h2" in text, "h2load negotiated h2")

def count(logs, role):
    hs = [h for h in records(logs, "http") if h["role"] == role]
    ss = [s for s in records(logs, "http_summary") if s["role"] == role]
    n = len(hs) + sum(s["count"] for s in ss)
    bad = [h for h in hs if h["status"] != 200 or h["error"] or h["version"] != "HTTP/2" or h["response_body_bytes"] != 606]
    bad += [s for s in ss if s["status"] != 200 or s["error"] or s["version"] != "HTTP/2"]
    return n, bad, hs

nginx = [l for l in load_dir("logs") if l.exe == "nginx"]
for name, logs, role in (("nginx", nginx, "server"), ("h2load", load_dir("logs/h2load"), "client")):
    n, bad, hs = count(logs, role)
    expect_eq(n, succeeded, f"{name}: exchanges (http + http_summary)")
    expect(not bad, f"{name}: exchanges not 200 / HTTP/2 / 606 bytes / without error: {[(b.get('status'), b.get('error'), b.get('version')) for b in bad[:3]]}")
    conns = [c for c in records(logs, "connection", transport="tcp", role=role)]
    expect_eq(sorted(c.get("http_version") for c in conns), ["HTTP/2"] * 4, f"{name}: 4 HTTP/2 connections")
    expect_eq(sum(c.get("http_requests") or 0 for c in conns), succeeded, f"{name}: http_requests over its connections")
    expect_eq(len({h["stream_id"] for h in hs}) > 10, True, f"{name}: many stream ids")
PY
finish
