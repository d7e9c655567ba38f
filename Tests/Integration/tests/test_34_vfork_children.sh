# vfork children run no wedjat code that touches the parent's state (runtime core): Python's
# subprocess (vfork + close_range in the child) leaves the parent's fds as they were, and the
# inetd pattern (vfork; dup2 the socket onto 0 and 1; close it; exec) leaves the parent's
# connection record intact: closed when the parent closed it.
. "$WJ_LIB/common.sh"

plain "$PYTHON" "$WJ_LIB/../fixtures/core_vfork_fds.py" 60 > plain.out || fail "python without wedjat failed"
wj logs_py "$PYTHON" "$WJ_LIB/../fixtures/core_vfork_fds.py" 60 > wj.out || fail "python with wedjat failed"
cat wj.out
b=$(sed -n 's/^before //p' wj.out); a=$(sed -n 's/^after //p' wj.out)
[ "$b" = "$a" ] || fail "the parent's fds changed over 60 spawns with wedjat: before $b, after $a"
[ "$(sed -n 's/^after //p' plain.out)" = "$a" ] || fail "fds differ from the run without wedjat: $(sed -n 's/^after //p' plain.out) vs $a"

plain "$FIXTURES/core_inetd" > inetd.plain || fail "inetd fixture without wedjat failed"
wj logs_inetd "$FIXTURES/core_inetd" > inetd.out || fail "inetd fixture with wedjat failed: $(cat inetd.out)"
[ "$(cat inetd.out)" = "echo ok" ] || fail "inetd output: $(cat inetd.out)"
pylogs logs_inetd <<'PY'
log = one(by_exe(load_dir(sys.argv[1]), "core_inetd"), "core_inetd log")
server = one(log.records("connection", role="server"), "the accepted connection")
client = one(log.records("connection", role="client"), "the client thread's connection")
# The parent only accepted and handed the socket to cat: it moved no byte itself, and its
# record ends when it closed its copy, not at exit.
expect_eq(server["open_at_exit"], False, "server connection open_at_exit")
expect_eq((server["bytes_in"], server["bytes_out"]), (0, 0), "bytes the parent itself moved")
expect(server["close_ts"] <= log.end["ts"], "closed before the end")
expect_eq((client["bytes_out"], client["bytes_in"]), (6, 6), "client bytes (the echo came back)")
expect_eq(log.end["open_connections"], 0, "open connections at the end")
print("inetd: ok")
PY
[ $? = 0 ] || fail "inetd log check"
finish
