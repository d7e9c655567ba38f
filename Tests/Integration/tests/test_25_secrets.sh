# Secrets on command lines and in traffic never reach the logs or the reports (default
# WEDJAT_ARGV=redact): a token in the query string, userinfo in the URL, an Authorization
# header, a Cookie header, and a Set-Cookie the server sends back; for curl and for a python
# urllib client (taking curl-like -H arguments), plus the other ways curl accepts the same
# options (-uUSER:PASS, -H"..." attached) and an httpie-style bare "Authorization: ..."
# argument. None of the secrets appears anywhere in the log directory (grep -r), nor in
# `wedjat report` / `wedjat report --format json` when the CLI is given. A control run with
# WEDJAT_ARGV=full shows the grep would see them.
. "$WJ_LIB/common.sh"

cat > server.py <<'PY'
import http.server, os, signal, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello\n"
        self.send_response(200)
        self.send_header("Set-Cookie", "s=WJSECRET5; Path=/; HttpOnly")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{srv.server_address[1]}\n")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
try:
    srv.serve_forever()
finally:
    srv.server_close()
PY
cat > client.py <<'PY'
# client.py URL [-H "Name: value"]... ["Name: value"]...   (urllib; userinfo -> Basic auth)
import base64, sys, urllib.parse, urllib.request
url, headers, args = sys.argv[1], {}, sys.argv[2:]
i = 0
while i < len(args):
    h = args[i + 1] if args[i] == "-H" else args[i]
    i += 2 if args[i] == "-H" else 1
    k, v = h.split(":", 1)
    headers[k.strip()] = v.strip()
u = urllib.parse.urlsplit(url)
if u.username:
    cred = f"{u.username}:{u.password}".encode()
    headers["Authorization"] = "Basic " + base64.b64encode(cred).decode()
    url = urllib.parse.urlunsplit((u.scheme, u.hostname + (f":{u.port}" if u.port else ""), u.path, u.query, u.fragment))
with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as r:
    print(r.status, r.headers.get("Set-Cookie") is not None, r.read().decode().strip())
PY

wj_bg server logs "$PYTHON" server.py port
srv=$BG_PID
wait_file port || fail "server did not start: $(cat server.out)"
base=http://127.0.0.1:$(cat port)

run() {  # LABEL cmd...: watched, must succeed
    local label=$1
    shift
    wj logs "$@" > "$label.out" 2> "$label.err" || soft_fail "$label: exit $? ($(head -c 200 "$label.err"))"
}
# the five secrets of the brief, curl
run curl_query curl -sS "$base/a?token=WJSECRET1"
run curl_userinfo curl -sS "http://user:WJSECRET2@${base#http://}/b"
run curl_bearer curl -sS -H "Authorization: Bearer WJSECRET3" "$base/c"
run curl_cookie curl -sS -H "Cookie: sid=WJSECRET4" "$base/d"
run curl_setcookie curl -sS -c "$TEST_TMP/jar.txt" -i "$base/e"
grep -q WJSECRET5 curl_setcookie.out || fail "the server did not send its Set-Cookie: $(cat curl_setcookie.out)"
# ... and python urllib
run py_query "$PYTHON" client.py "$base/a?token=WJSECRET1"
run py_userinfo "$PYTHON" client.py "http://user:WJSECRET2@${base#http://}/b"
run py_bearer "$PYTHON" client.py "$base/c" -H "Authorization: Bearer WJSECRET3"
run py_cookie "$PYTHON" client.py "$base/d" -H "Cookie: sid=WJSECRET4"
grep -q '^200 True hello$' py_cookie.out || fail "python client: $(cat py_cookie.out)"
# other spellings of the same options that the programs accept
run curl_u_attached curl -sS -uuser:WJSECRET6 "$base/f"
run curl_h_attached curl -sS "-HAuthorization: Bearer WJSECRET7" "$base/g"
run py_bare_header "$PYTHON" client.py "$base/h" "Authorization: Bearer WJSECRET8"
bg_stop "$srv"

# control: with WEDJAT_ARGV=full the same command line is in the log (the grep works)
wj control env WEDJAT_ARGV=full curl -sS "$base/a?token=WJSECRET1" > /dev/null 2>&1
grep -rq WJSECRET1 control || fail "control run with WEDJAT_ARGV=full: secret not found, the check below could not see a leak"

python3 "$WJ_LIB/logs.py" check logs > check.txt || soft_fail "logs: $(cat check.txt)"
n=$(ls logs | wc -l)
[ "$n" -ge 13 ] || soft_fail "want at least 13 logs (server + 12 clients), got $n"

leaks() {  # PATH...: one line per secret found, with where
    grep -raoE '.{0,60}WJSECRET[0-9]+.{0,20}' "$@" 2>/dev/null | sort -u
}
found=$(leaks logs)
if [ -n "$found" ]; then
    echo "$found" | head -n 20
    for s in $(echo "$found" | grep -o 'WJSECRET[0-9]*' | sort -u); do
        soft_fail "$s found in the log directory: $(echo "$found" | grep -m1 "$s" | sed 's/^[^:]*\///' | cut -c1-160)"
    done
else
    echo "no secret in $n log files"
fi

if [ -n "${WEDJAT_CLI:-}" ]; then
    cli() { timeout -k 5 60 env WEDJAT_LIB="$WEDJAT_PRELOAD" "$WEDJAT_CLI" "$@"; }
    cli report logs > report.txt 2> report.err || soft_fail "wedjat report exited $?: $(head -3 report.err)"
    cli report --format json logs > report.json 2> report.json.err || soft_fail "wedjat report --format json exited $?"
    grep -q "127.0.0.1:$(cat port)" report.txt || soft_fail "the text report does not mention the server"
    for f in report.txt report.err report.json report.json.err; do
        found=$(leaks "$f")
        [ -z "$found" ] || soft_fail "secrets in $f: $(echo "$found" | grep -o 'WJSECRET[0-9]*' | sort -u | paste -sd,)"
    done
else
    note "no CLI given: reports not checked"
fi
finish
