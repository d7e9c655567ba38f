# Every line real programs write under wedjat is valid against docs/log.schema.json (JSON
# Schema draft 2020-12, one definition per record type, fields not listed there rejected):
# - python servers (plain and TLS) answering curl (keep-alive, HTTPS, a refused connect, the
#   record budget at 1 a second so http_summary is written) and a python client (a lookup,
#   a plain and an HTTPS request, and an event loop stalled three times by 300 ms of work:
#   stall, modules, and sample loops at WEDJAT_SAMPLE_MS=100);
# - sh running curl then exiting 3 (fork, exec, process_end with exit 3);
# - nginx serving a file (when installed).
# The schema must itself be valid, and these logs must contain every record type the
# scenario makes, so the test cannot pass by validating nothing.
. "$WJ_LIB/common.sh"
"$PYTHON" -c 'import jsonschema' 2>/dev/null || skip "python jsonschema is not installed (scripts/deps.sh)"
schema=$WJ_LIB/../../../docs/log.schema.json
[ -f "$schema" ] || fail "no $schema"
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 -keyout key.pem -out cert.pem 2>/dev/null \
    || skip "openssl cannot make a certificate"

export WEDJAT_SAMPLE_MS=100
wj_bg plain "$TEST_TMP/logs" "$PYTHON" "$WJ_LIB/../fixtures/http_variety_server.py"
plain_pid=$BG_PID
wj_bg tls "$TEST_TMP/logs" "$PYTHON" "$WJ_LIB/../fixtures/http_variety_server.py" --tls cert.pem key.pem
tls_pid=$BG_PID
wait_file plain.out 10 && wait_file tls.out 10 || fail "servers did not start: $(cat plain.out tls.out)"
pp=$(sed -n 's/^port //p' plain.out) tp=$(sed -n 's/^port //p' tls.out)
[ -n "$pp" ] && [ -n "$tp" ] || fail "no ports: '$pp' '$tp'"

cat > client.py <<'EOF'
import select, socket, ssl, sys, time, urllib.request
port, tls_port = int(sys.argv[1]), int(sys.argv[2])
socket.getaddrinfo("localhost", port)
urllib.request.urlopen(f"http://localhost:{port}/len/10").read()
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
urllib.request.urlopen(f"https://127.0.0.1:{tls_port}/len/20", context=ctx).read()
for _ in range(3):            # an event loop: a wait, then 300 ms of work
    select.select([], [], [], 0.02)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
select.select([], [], [], 0.01)
EOF
WEDJAT_STALL_MS=50 wj "$TEST_TMP/logs" "$PYTHON" client.py "$pp" "$tp" || fail "python client exited $?"
urls=()
for i in $(seq 1 30); do urls+=("http://127.0.0.1:$pp/len/$i"); done
WEDJAT_HTTP_RECORDS=1 wj "$TEST_TMP/logs" curl -s "${urls[@]}" > /dev/null || fail "curl (30 requests) exited $?"
refused=$(free_port)
wj "$TEST_TMP/logs" curl -sk "https://127.0.0.1:$tp/len/5" "http://127.0.0.1:$refused/" > /dev/null
wj "$TEST_TMP/logs" sh -c "curl -s -o /dev/null http://127.0.0.1:$pp/len/3; exit 3"
[ $? = 3 ] || fail "sh -c '...; exit 3' did not exit 3"
bg_stop "$plain_pid"
bg_stop "$tls_pid"
expected="process_start process_end connection http http_summary dns fork startup sample stall modules"

if command -v nginx >/dev/null; then
    # nginx_start works in the current directory and $TEST_TMP: a directory of its own.
    mkdir -p nginx && cd nginx && TEST_TMP=$TEST_TMP/nginx
    . "$WJ_LIB/nginx.sh"
    nginx_start 20000 64
    for i in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$port/f.bin" || fail "curl to nginx exited $?"; done
    bg_stop "$master" QUIT
    cd .. && TEST_TMP=${TEST_TMP%/nginx}
    nginx_logs=nginx/logs
else
    note "nginx is not installed: not part of this run"
    nginx_logs=
fi

"$PYTHON" - "$schema" "$expected" logs $nginx_logs <<'EOF'
import glob, json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
types, lines, problems = {}, 0, []
for d in sys.argv[3:]:
    files = sorted(glob.glob(d + "/*.ndjson"))
    if not files:
        print(f"FAIL: no logs in {d}")
        sys.exit(1)
    for f in files:
        for n, line in enumerate(open(f, encoding="utf-8"), 1):
            record = json.loads(line)
            lines += 1
            types[record.get("type")] = types.get(record.get("type"), 0) + 1
            for e in validator.iter_errors(record):
                problems.append(f"{f}:{n}: {record.get('type')}: {e.json_path}: {e.message[:200]}")
for p in problems[:20]:
    print("FAIL:", p)
missing = [t for t in sys.argv[2].split() if t not in types]
if missing:
    print("FAIL: no", ", ".join(missing), "record in the logs: the scenario did not cover them")
loops = 0
for f in glob.glob("logs/*.ndjson"):
    loops += sum('"loops":[{' in l for l in open(f))
if loops == 0:
    print("FAIL: no sample record with loops")
print(f"# {lines} lines validated: " + ", ".join(f"{t} {n}" for t, n in sorted(types.items())))
sys.exit(1 if problems or missing or loops == 0 else 0)
EOF
[ $? = 0 ] || fail "logs do not all match docs/log.schema.json"
echo ok
