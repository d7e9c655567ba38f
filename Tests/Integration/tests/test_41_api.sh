# The wedjat_* API: version, enabled, and a flush that puts records on disk before the
# process dies of SIGKILL (which leaves no process_end). Without wedjat the symbols are absent.
. "$WJ_LIB/common.sh"

out=$(plain "$FIXTURES/api_flush")
[ "$out" = "not watched" ] || fail "without wedjat: $out"
out=$(wj logs "$FIXTURES/api_flush"); rc=$?
[ $rc = 137 ] || fail "exit status $rc, want 137 (SIGKILL)"
[ "$out" = "0.1.0 1 0" ] || fail "with wedjat: '$out', want '0.1.0 1 0'"
out=$(WEDJAT_DISABLE=1 wj logs2 "$FIXTURES/api_flush")
[ "$out" = "0.1.0 0 -1" ] || fail "disabled: '$out', want '0.1.0 0 -1'"
[ -z "$(ls -A logs2 2>/dev/null)" ] || fail "disabled run wrote logs"

pylogs logs <<'PY'
log = one(load_dir(sys.argv[1]), "log")
expect(log.end is None, "a SIGKILLed process has no process_end")
conns = log.records("connection")
expect_eq(len(conns), 2, "connections flushed before SIGKILL (client and server side)")
expect_eq(sorted(c["role"] for c in conns), ["client", "server"], "roles")
expect(all(c["bytes_in"] + c["bytes_out"] == 5 for c in conns), "bytes")
print("ok")
PY
