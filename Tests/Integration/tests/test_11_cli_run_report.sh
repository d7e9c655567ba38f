# The wedjat CLI (only when run.sh was given CLI_PATH): `wedjat run` passes the command's
# stdout and exit status through untouched and leaves logs; `wedjat report` reads them.
. "$WJ_LIB/common.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
[ -x "$WEDJAT_CLI" ] || fail "WEDJAT_CLI=$WEDJAT_CLI is not executable"

mkdir -p www
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 300)' > www/b.bin
bg_start server "$PYTHON" "$WJ_LIB/httpserver.py" www port
srv=$BG_PID
wait_file port || fail "server did not start"
port=$(cat port)
url=http://127.0.0.1:$port/b.bin
# The CLI finds the library next to itself (../lib) or through WEDJAT_LIB.
cli() { timeout -k 5 60 env WEDJAT_LIB="$WEDJAT_PRELOAD" "$WEDJAT_CLI" "$@"; }

# 1. success: stdout byte-identical to curl's own, exit 0, a curl log with the connection
cli run --dir "$TEST_TMP/runlogs" -- curl -sS "$url" > run.out 2> run.err
rc=$?
cat run.err
[ $rc = 0 ] || fail "wedjat run -- curl exited $rc"
cmp -s run.out www/b.bin || fail "stdout through wedjat run differs from the served file"
python3 "$WJ_LIB/logs.py" check runlogs --exe curl --count 1 || fail "wedjat run left no valid curl log"

# 2. failure: curl's exit code comes through (7 = could not connect)
refused=$(free_port)
cli run --dir "$TEST_TMP/runlogs2" -- curl -sS "http://127.0.0.1:$refused/" > run2.out 2> run2.err
rc=$?
[ $rc = 7 ] || fail "wedjat run -- curl (refused) exited $rc, want 7: $(cat run2.err)"
[ ! -s run2.out ] || fail "unexpected stdout from the refused run"

# 3. exit status and stdout of something else, and a command that does not exist
cli run --dir "$TEST_TMP/runlogs3" -- sh -c 'printf "a\nb"; exit 42' > run3.out 2>/dev/null
rc=$?
[ $rc = 42 ] || fail "wedjat run -- sh -c 'exit 42' exited $rc"
[ "$(od -An -c run3.out | tr -d ' \n')" = 'a\nb' ] || fail "stdout changed: $(od -c run3.out)"
cli run --dir "$TEST_TMP/runlogs4" -- /nonexistent/program > /dev/null 2>&1
rc=$?
[ $rc = 127 ] || fail "wedjat run of a missing program exited $rc, want 127"

# 4. report mentions the server address
cli report runlogs > report.txt 2> report.err
rc=$?
[ $rc = 0 ] || fail "wedjat report exited $rc: $(cat report.err)"
head -n 40 report.txt
grep -q "127.0.0.1:$port" report.txt || fail "the report does not mention 127.0.0.1:$port"
if cli report --format json runlogs > report.json 2>/dev/null; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' report.json || fail "report --format json is not JSON"
    grep -q "127.0.0.1:$port" report.json || fail "the JSON report does not mention 127.0.0.1:$port"
fi
bg_stop "$srv"
echo ok
