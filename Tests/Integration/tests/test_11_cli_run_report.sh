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

[ "$(cli --version)" = "wedjat $(cat "$WJ_LIB"/../../../CShims/interposer/*.h | sed -n 's/^#define WEDJAT_VERSION "\(.*\)"/\1/p')" ] \
    || fail "wedjat --version: $(cli --version)"

# 5. The summary covers the run's own processes: another watched program writing into the same
# directory meanwhile is left out, and said so.
mkdir -p shared
( for i in 1 2 3 4 5 6; do env WEDJAT_DIR="$TEST_TMP/shared" LD_PRELOAD="$WEDJAT_PRELOAD" sh -c 'sleep 0.05'; done ) &
other=$!
cli run --dir "$TEST_TMP/shared" -- sh -c 'sleep 0.3; true' > /dev/null 2> shared.err || fail "wedjat run (shared dir) failed"
wait "$other"
cat shared.err
# sh and its sleep: 2 processes; the loop's sh and sleep processes are not the run's.
grep -q '^wedjat: 2 processes,' shared.err || fail "the summary counts processes that are not the run's: $(head -1 shared.err)"
grep -qE 'other new logs? from other programs not counted' shared.err || fail "the summary does not say it left other logs out"

# 6. An invalid setting is said once on a terminal (the library says it; wedjat run does not
# repeat it), and once off a terminal (wedjat run says it).
if command -v script >/dev/null; then
    script -qefc "env WEDJAT_LIB='$WEDJAT_PRELOAD' WEDJAT_FLUSH_MS=5 '$WEDJAT_CLI' run --dir '$TEST_TMP/cw' -- sh -c 'sleep 0.05'" tty.out \
        < /dev/null > /dev/null || fail "wedjat run on a terminal failed"
    n=$(tr -d '\r' < tty.out | grep -c '^wedjat: .*WEDJAT_FLUSH_MS=5: not an integer')
    [ "$n" = 1 ] || fail "the configuration warning is said $n times on a terminal: $(tr -d '\r' < tty.out)"
fi
cli run --dir "$TEST_TMP/cw2" -- sh -c 'sleep 0.05' 2> notty.err > /dev/null < /dev/null
WEDJAT_FLUSH_MS=5 cli run --dir "$TEST_TMP/cw3" -- sh -c 'sleep 0.05' 2> notty.err > /dev/null < /dev/null
n=$(grep -c 'WEDJAT_FLUSH_MS=5: not an integer' notty.err)
[ "$n" = 1 ] || fail "the configuration warning is said $n times off a terminal: $(cat notty.err)"
echo ok
