# Sourced by the HTTP/2 tests (76-79), after common.sh.
#   wait_port PORT [SECS] wait until 127.0.0.1:PORT accepts connections
#   h2_certs              key.pem and cert.pem (self-signed, CN localhost) in $TEST_TMP
#
wait_port() {
    local p=$1 secs=${2:-10} i
    for i in $(seq 1 $((secs * 20))); do
        python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $p), 0.2).close()" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

h2_certs() {
    openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 -keyout key.pem -out cert.pem \
        > openssl.out 2>&1 || skip "openssl cannot make a certificate: $(tail -2 openssl.out)"
}

# h2_schema_check DIR...: every record under the directories validates against
# docs/log.schema.json (HTTP/2 fields included); skipped when python jsonschema is missing.
h2_schema_check() {
    "$PYTHON" -c 'import jsonschema' 2>/dev/null || { note "python jsonschema is not installed: schema not checked"; return 0; }
    "$PYTHON" - "$WJ_LIB/../../../docs/log.schema.json" "$@" <<'PY' || soft_fail "HTTP/2 logs do not all match docs/log.schema.json"
import glob, json, sys
import jsonschema
validator = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
problems, h2 = [], 0
for d in sys.argv[2:]:
    for f in sorted(glob.glob(d + "/**/*.ndjson", recursive=True)):
        for n, line in enumerate(open(f, encoding="utf-8"), 1):
            r = json.loads(line)
            h2 += r.get("version") == "HTTP/2" or r.get("http_version") == "HTTP/2"
            problems += [f"{f}:{n}: {r.get('type')}: {e.json_path}: {e.message[:160]}" for e in validator.iter_errors(r)]
for p in problems[:10]:
    print("FAIL:", p)
print(f"# schema: {h2} HTTP/2 records validated")
sys.exit(1 if problems or h2 == 0 else 0)
PY
}
