# Byte counting through every I/O function family on a tracked TCP connection (both ends in
# one process): write/read, writev/readv, sendto/recvfrom, sendmsg/recvmsg,
# sendmmsg/recvmmsg, sendfile, recv(MSG_PEEK) then recv, splice; plain and _FORTIFY_SOURCE=2
# builds (__read_chk, __recv_chk). bytes_in/bytes_out must equal what the app moved.
. "$WJ_LIB/common.sh"

for prog in io_variants io_variants_fortify; do
    wj "logs_$prog" "$FIXTURES/$prog" "$TEST_TMP/$prog.data" > "$prog.out" 2> "$prog.err"
    rc=$?
    [ $rc = 0 ] || fail "$prog exited $rc: $(cat "$prog.err")"
done
pylogs <<'PY'
soft_mode()
for prog in ("io_variants", "io_variants_fortify"):
    cases = []
    for line in open(f"{prog}.out"):
        _, name, _, port, _, out, _, inn = line.split()
        cases.append((name, int(port), int(out), int(inn)))
    expect_eq(len(cases), 8, f"{prog}: cases run")
    log = one(load_dir(f"logs_{prog}"), f"{prog} log")
    conns = log.records("connection")
    for name, port, out, inn in cases:
        cl = [c for c in conns if c["role"] == "client" and port_of(c["local"]) == port]
        sv = [c for c in conns if c["role"] == "server" and port_of(c["peer"]) == port]
        if not expect(len(cl) == 1 and len(sv) == 1, f"{prog} {name}: records client={len(cl)} server={len(sv)}"):
            continue
        expect_eq((cl[0]["bytes_out"], cl[0]["bytes_in"]), (out, inn), f"{prog} {name}: client (bytes_out, bytes_in)")
        expect_eq((sv[0]["bytes_out"], sv[0]["bytes_in"]), (inn, out), f"{prog} {name}: server (bytes_out, bytes_in)")
    print(f"{prog}: {len(cases)} cases checked")
PY
