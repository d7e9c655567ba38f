# curl fetches a file of known size from a local HTTP server under the preload: one log, one
# client connection with the exact byte counts curl itself reports, one http record with the
# versions of the request line (curl's HTTP/1.1) and of the answer (python's http.server
# answers HTTP/1.0: response_version, as curl's %{http_version} says); output unchanged.
. "$WJ_LIB/common.sh"

mkdir -p www
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) % 251 for i in range(123457)))' > www/blob.bin
bg_start server "$PYTHON" "$WJ_LIB/httpserver.py" www port
srv=$BG_PID
wait_file port || fail "server did not start: $(cat server.out)"
port=$(cat port)
url=http://127.0.0.1:$port/blob.bin

# Watched run: curl's own view of the bytes.
w=$(wj logs curl -s -o body.bin -w '%{size_header} %{size_download} %{size_request} %{local_port} %{http_version}' "$url")
rc=$?
[ $rc = 0 ] || fail "curl under the preload exited $rc"
read -r size_header size_download size_request local_port http_version <<<"$w"
note "curl says: header=$size_header body=$size_download request=$size_request local_port=$local_port http_version=$http_version"
[ "$size_download" = 123457 ] || fail "curl downloaded $size_download bytes, want 123457"
cmp -s body.bin www/blob.bin || fail "body differs from the served file"

pylogs logs "$port" "$size_header" "$size_download" "$size_request" "$local_port" "$http_version" <<'PY'
d, port, hdr, body, req, lport = sys.argv[1], *map(int, sys.argv[2:7])
curl_version = sys.argv[7]
logs = load_dir(d)
expect_eq(len(logs), 1, "number of log files")
curl = one(by_exe(logs, "curl"), "curl log")
conns = curl.records("connection")
c = one(conns, "connection record")
expect_eq(c["role"], "client", "role")
expect_eq(c["transport"], "tcp", "transport")
expect_eq(c["family"], "ipv4", "family")
expect_eq(c["peer"], f"127.0.0.1:{port}", "peer")
expect_eq(c["local"], f"127.0.0.1:{lport}", "local")
expect(c["bytes_in"] >= 123457, f"bytes_in {c['bytes_in']} < file size")
expect_eq(c["bytes_in"], hdr + body, "bytes_in (curl size_header + size_download)")
expect_eq(c["bytes_out"], req, "bytes_out (curl size_request)")
expect_eq(c["error"], None, "error")
expect_eq(c["open_at_exit"], False, "open_at_exit")
h = one(curl.records("http"), "http record")
expect_eq((h["path"], h["status"], h["version"]), ("/blob.bin", 200, "HTTP/1.1"), "http: path, status, request line's version")
# curl says "1" for HTTP/1.0, "1.1" for HTTP/1.1.
expect_eq(h.get("response_version", h["version"]), {"1": "HTTP/1.0", "1.1": "HTTP/1.1"}.get(curl_version, curl_version),
          "http: the response's version (curl's %{http_version})")
ti = c["tcp_info"]
expect(isinstance(ti, dict) and isinstance(ti["rtt_us"], int) and 0 < ti["rtt_us"] < 1_000_000, f"tcp_info {ti}")
expect_eq(ti["total_retrans"], 0, "retransmits on loopback")
expect(c["close_ts"] >= c["open_ts"], "close_ts before open_ts")
expect_eq(c["duration_us"], c["close_ts"] - c["open_ts"], "duration_us")
# curl connects non-blocking: the end of connect is seen through SO_ERROR or the first byte.
expect(isinstance(c["connect_us"], int) and 0 <= c["connect_us"] <= c["duration_us"], f"connect_us {c['connect_us']}")
expect(abs(c["connect_end_ts"] - c["open_ts"] - c["connect_us"]) <= 1, "connect_end_ts - open_ts != connect_us (±1 us rounding)")
expect(c["connect_end_ts"] <= c["first_byte_out_ts"] <= c["first_byte_in_ts"] <= c["last_byte_ts"] <= c["close_ts"],
       "phases out of order: connect end, first byte out, first byte in, last byte, close")
expect_eq(curl.start["log"], curl.path, "process_start.log")
expect_eq(curl.start["exe"], "/usr/bin/curl", "process_start.exe")
expect_eq(curl.start["argv"][0], "curl", "argv[0]")
expect(curl.start["ts"] <= c["open_ts"] <= c["close_ts"] <= curl.end["ts"], "timestamps out of order")
end = curl.end
expect(end is not None, "no process_end")
expect_eq(end["reason"], "exit", "process_end.reason")
expect_eq(end["exit_status"], 0, "process_end.exit_status")
expect_eq(end["records"].get("connection"), 1, "process_end.records.connection")
expect_eq(end["dropped_events"], 0, "dropped_events")
print("log ok:", c["local"], "->", c["peer"], c["bytes_in"], c["bytes_out"])
PY
[ $? = 0 ] || exit 1

# stdout (and stderr, exit status) identical with and without the preload.
plain curl -sS "$url" >plain.out 2>plain.err; rc1=$?
wj logs2 curl -sS "$url" >watched.out 2>watched.err; rc2=$?
[ $rc1 = $rc2 ] || fail "exit status differs: $rc1 without, $rc2 with the preload"
cmp -s plain.out watched.out || fail "curl stdout differs with the preload"
cmp -s plain.err watched.err || fail "curl stderr differs with the preload"
cmp -s plain.out www/blob.bin || fail "curl stdout is not the file"
bg_stop "$srv"
echo "ok"
