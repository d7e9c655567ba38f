# The app's fds are the app's (runtime core): wedjat never holds one of the app's fd numbers,
# even for a moment (300,000 close+open pairs get their number back while wedjat's thread
# samples and watches: on a quiet machine 100,000 took 100 ms, one sampling interval, and the
# log had only its exit sample); it uses none of the app's RLIMIT_NOFILE (as many sockets under
# ulimit -n 16 as without); and it does not grow the app's fd table (FDSize as without), also
# under the largest RLIMIT_NOFILE this machine allows.
. "$WJ_LIB/common.sh"
out=$(WEDJAT_SAMPLE_MS=100 wj logs_reuse "$FIXTURES/core_fdnum" reuse 300000) || fail "reuse: $out"
[ "$out" = "mismatches 0" ] || fail "close+open did not get its fd number back: $out"

want=$(bash -c "ulimit -n 16; exec env \"\$@\"" _ "$FIXTURES/core_fdnum" sockets) || fail "sockets without wedjat"
got=$(bash -c "ulimit -n 16; exec env WEDJAT_DIR=\"$TEST_TMP/logs_sockets\" LD_PRELOAD=\"$WEDJAT_PRELOAD\" \"\$@\"" _ "$FIXTURES/core_fdnum" sockets) || fail "sockets with wedjat"
[ "$got" = "$want" ] || fail "under ulimit -n 16: $got with wedjat, $want without"

hard=$(ulimit -Hn)
for limit in 1024 "$hard"; do
    want=$(bash -c "ulimit -n $limit; exec \"\$@\"" _ "$FIXTURES/core_fdnum" fdsize) || fail "fdsize without wedjat"
    got=$(bash -c "ulimit -n $limit; exec env WEDJAT_DIR=\"$TEST_TMP/logs_fdsize\" LD_PRELOAD=\"$WEDJAT_PRELOAD\" \"\$@\"" _ "$FIXTURES/core_fdnum" fdsize) || fail "fdsize with wedjat"
    [ "$got" = "$want" ] || fail "fd table under RLIMIT_NOFILE $limit: $got with wedjat, $want without"
    note "RLIMIT_NOFILE $limit: $got with and without wedjat"
done
pylogs logs_reuse <<'PY'
log = one(load_dir(sys.argv[1]), "log")
expect(len(log.records("sample")) >= 2, "samples were taken meanwhile")
expect(log.end is not None, "process_end")
print("fds: ok")
PY
[ $? = 0 ] || fail "log check"
finish
