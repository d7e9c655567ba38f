"""Checks shared by the HTTP/2 tests: curl's -w line against the http records of both sides."""
from logs import *

# curl -w fields, in this order
CURL_W = "%{local_port} %{http_code} %{http_version} %{size_download} %{size_upload} %{time_pretransfer} %{time_starttransfer} %{time_total}"


def curl_rows(path):
    rows = []
    for line in open(path):
        f = line.split()
        if len(f) < 9:
            continue
        rows.append(dict(url_path=f[0], local_port=int(f[1]), code=int(f[2]), version=f[3], size_download=int(f[4]),
                         size_upload=int(f[5]), pretransfer=float(f[6]), starttransfer=float(f[7]), total=float(f[8])))
    return rows


def within(ours_us, curl_s, what):
    """max(1 ms, 5%) of curl's value."""
    theirs = curl_s * 1e6
    tol = max(1000.0, 0.05 * theirs)
    expect(ours_us is not None and abs(ours_us - theirs) <= tol,
           f"{what}: wedjat {ours_us} us, curl {theirs:.0f} us (tolerance {tol:.0f} us)")


def check_curl_pairs(rows, client_logs_of, server_http, scheme, redacted):
    """rows: curl_rows; client_logs_of(i): the logs of the i-th curl; server_http: the server's
    http records (role server). redacted(path) -> the path as the log must show it."""
    for i, r in enumerate(rows):
        what = f"curl {i} {r['url_path']}"
        expect_eq(r["version"], "2", f"{what}: curl's HTTP version")
        logs = client_logs_of(i)
        hs = [h for h in records(logs, "http") if h["role"] == "client"]
        expect_eq(len(hs), 1, f"{what}: client http records")
        conns = [c for c in records(logs, "connection") if c["transport"] == "tcp" and c["role"] == "client"]
        expect_eq([(c.get("http_version"), c.get("http_requests")) for c in conns], [("HTTP/2", 1)],
                  f"{what}: the connection's http_version and http_requests")
        if len(hs) != 1:
            continue
        h = hs[0]
        expect_eq((h["method"], h["path"], h["status"], h["version"], h["scheme"], h.get("stream_id")),
                  ("GET", redacted(r["url_path"]), r["code"], "HTTP/2", scheme, 1), f"{what}: the client's record")
        expect_eq((h["response_body_bytes"], h["request_body_bytes"]), (r["size_download"], r["size_upload"]),
                  f"{what}: body bytes (curl's size_download, size_upload)")
        expect(h["complete"] and h["error"] is None, f"{what}: complete without error: {h['error']}")
        expect(h["request_start_ts"] <= h["request_end_ts"] <= h["response_start_ts"] <= h["response_end_ts"],
               f"{what}: phases in order")
        within(h["ttfb_us"], r["starttransfer"] - r["pretransfer"], f"{what}: ttfb vs time_starttransfer - time_pretransfer")
        expect(h["request_header_bytes"] > 9 and h["response_header_bytes"] > 9, f"{what}: header bytes")
        # the server's record of the same request: same local port as peer
        sv = [s for s in server_http if s["peer"].endswith(f":{r['local_port']}")]
        expect_eq(len(sv), 1, f"{what}: server http records from port {r['local_port']}")
        if len(sv) == 1:
            s = sv[0]
            expect_eq((s["method"], s["path"], s["status"], s["version"], s["response_body_bytes"], s.get("stream_id")),
                      ("GET", h["path"], h["status"], "HTTP/2", h["response_body_bytes"], 1), f"{what}: the server's record")
            expect(s["complete"] and s["error"] is None, f"{what}: the server's record complete: {s['error']}")
