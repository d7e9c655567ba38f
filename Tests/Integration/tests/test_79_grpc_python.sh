# gRPC over HTTP/2 (issue 16): a python grpcio client and server (insecure channel), both
# watched: unary, server streaming, bidirectional streaming and a call failing with NOT_FOUND.
# Each call's http records on both sides: POST, path /helloworld.Greeter/<Method>, status 200,
# grpc.service and grpc.method, grpc.status (0, or 5 for the failing call) and the message
# redacted, message counts per direction where the decoder saw every prefix (else null, never
# a guess); the secret in the failing call's message reaches no log.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/h2.sh"
"$PYTHON" -c "import grpc" 2>/dev/null || skip "python grpcio is not installed (scripts/deps.sh installs it with pip)"
F=$WJ_LIB/../fixtures
wj_bg server logs/server "$PYTHON" "$F/grpc_echo.py" server "$TEST_TMP/port"
srv=$BG_PID
wait_file port 20 || fail "the gRPC server did not start: $(tail -5 server.out)"
port=$(cat port)
wj logs/client "$PYTHON" "$F/grpc_echo.py" client "$port" > client.txt 2> client.err || soft_fail "the client exited $?: $(tail -3 client.err)"
bg_stop "$srv" TERM
cat client.txt | sed 's/^/# /'
pylogs <<'PY'
import glob
soft_mode()
calls = [l.split() for l in open("client.txt")]
expect_eq([(c[0], int(c[1])) for c in calls], [("SayHello", 0), ("ListItems", 0), ("Chat", 0), ("Fail", 5)],
          "the client's calls and their status codes")
want = {c[0]: (int(c[1]), int(c[2]), int(c[3])) for c in calls}
for side, role in (("client", "client"), ("server", "server")):
    hs = [h for h in records(load_dir(f"logs/{side}"), "http") if h["role"] == role and h.get("grpc")]
    by = {h["grpc"]["method"]: h for h in hs}
    expect_eq(sorted(by), sorted(want), f"{side}: gRPC methods seen")
    for m, (status, n_in, n_out) in want.items():
        h = by.get(m)
        if not h:
            continue
        g = h["grpc"]
        expect_eq((h["method"], h["path"], h["status"], h["version"], g["service"], g["status"]),
                  ("POST", f"/helloworld.Greeter/{m}", 200, "HTTP/2", "helloworld.Greeter", status), f"{side} {m}")
        expect_eq(g["message"], "REDACTED" if status else g["message"], f"{side} {m}: grpc-message redacted")
        for key, n in (("request_messages", n_in), ("response_messages", n_out)):
            expect(g[key] in (n, None), f"{side} {m}: {key} {g[key]}, want {n} (or null when a prefix was not seen)")
        expect(h["complete"] and h["error"] is None, f"{side} {m}: complete, no error: {h['error']}")
    unary = by.get("SayHello")
    if unary:
        expect_eq((unary["grpc"]["request_messages"], unary["grpc"]["response_messages"]), (1, 1), f"{side}: SayHello's message counts")
    conns = [c for c in records(load_dir(f"logs/{side}"), "connection", transport="tcp", role=role) if c.get("http_requests")]
    expect(conns and all(c.get("http_version") == "HTTP/2" for c in conns), f"{side}: HTTP/2 connections {[c.get('http_version') for c in conns]}")
for f in glob.glob("logs/**/*.ndjson", recursive=True):
    expect("secret-item-42" not in open(f).read(), f"{f}: holds the grpc-message")
PY
h2_schema_check logs
finish
