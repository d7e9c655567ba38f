# Direct system calls on non-blocking sockets (docs/RUNTIME.md): every I/O call wedjat makes
# straight to the kernel gives the program the same results, errno and bytes as libc's
# (fixtures/core_direct_io.c, output compared with and without wedjat), the log counts their
# bytes, and a socket made blocking again (fcntl, ioctl FIONBIO, or a forked child through the
# shared file description) leaves a thread blocked in recv cancellable by the process's first
# pthread_cancel (a cancel that does not act ends the fixture by SIGALRM).
. "$WJ_LIB/common.sh"

for part in io cancel-fcntl cancel-ioctl cancel-child; do
    plain "$FIXTURES/core_direct_io" "$part" > "$part.plain" 2> "$part.plain.err"; rp=$?
    [ $rp = 0 ] || fail "$part without wedjat exited $rp: $(head -3 "$part.plain.err")"
    WJ_TIMEOUT=30 wj "logs-$part" "$FIXTURES/core_direct_io" "$part" > "$part.wj" 2> "$part.wj.err"; rw=$?
    [ $rw = 0 ] || fail "$part with wedjat exited $rw (142: a cancel did not act): $(tail -3 "$part.wj")"
    cmp -s "$part.plain" "$part.wj" || { diff "$part.plain" "$part.wj" | head -20; fail "$part: output differs with wedjat"; }
    echo "$part: $(wc -l < "$part.plain") lines identical"
done
grep -q '^cancel  *cancelled$' cancel-child.plain || fail "fixture: the cancel did not act without wedjat"
[ "$(grep -c 'send to closed peer  *ret=-1 errno=EPIPE$' io.plain)" = 5 ] || fail "fixture: EPIPE lines"

# Each of the five rounds sends 20 bytes one way with every call and reads them back.
pylogs logs-io <<'PY'
log = one(load_dir(sys.argv[1]), "log")
conns = log.records("connection")
pairs = [c for c in conns if c["role"] == "pair"]
tcp = [c for c in conns if c["role"] in ("client", "server")]
expect_eq(len(pairs), 6, "socketpair ends (three pairs)")
expect_eq(len(tcp), 4, "TCP ends (two connections, both sides)")
moved = sorted((c["bytes_out"], c["bytes_in"]) for c in pairs + tcp)
expect_eq(moved, [(0, 20)] * 5 + [(20, 0)] * 5, "bytes of each end")
expect(log.end is not None and log.end["exit_status"] == 0, f"process_end: {log.end}")
print(f"log ok: {len(pairs)} pair ends, {len(tcp)} TCP ends, 20 bytes each way")
PY
[ $? = 0 ] || fail "log check"
finish
