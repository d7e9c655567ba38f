# A socket closed by one thread while another is still in a call on it (issue 15; the send/close
# race behind test 53's rare lost exchange): fixtures/fid_close_in_flight.c closes each client
# socket right after sending, while its reader thread waits in recv(MSG_WAITALL) for a response
# the in-process server sends 100 ms later. The kernel keeps the socket until the recv returns;
# wedjat must too: every client connection has the reader's bytes and its exchange, and lasts
# until the response came. One is answered only after 2 s: its end is held one second at most,
# so it ends without the response, whose bytes process_end counts as bytes_after_end (nothing
# lost silently). The last connection is never answered: its reader is still in recv at exit,
# and the connection is recorded all the same (ended at exit, its request counted). The 2 s
# recv is a blocked stall: its stack walk (libunwind's address checks, raw syscall(SYS_write)
# and SYS_read on a pipe in wedjat's fd table, fds 0 and 1 there) must leave the app's stdout
# and stdin alone: stdout holds only the fixture's lines, and it reads all 1,000 bytes of stdin.
. "$WJ_LIB/common.sh"
N=8
head -c 1000 /dev/zero | wj logs "$FIXTURES/fid_close_in_flight" $N > client.txt 2> client.err ||
    fail "fixture exited $?: $(tail -3 client.err)"
pylogs "$N" <<'PY' || exit 1
import re
n = int(sys.argv[1])
rounds = {}
stuck = late = None
for line in open("client.txt", errors="replace"):
    m = re.match(r"round (\d+) lport (\d+) in (\d+) out (\d+)", line)
    if m:
        rounds[int(m[2])] = (int(m[3]), int(m[4]))
    m = re.match(r"late lport (\d+) in (\d+) out (\d+)", line)
    if m:
        late = (int(m[1]), int(m[2]), int(m[3]))
    m = re.match(r"stuck lport (\d+) out (\d+)", line)
    if m:
        stuck = (int(m[1]), int(m[2]))
expect_eq(len(rounds), n, "rounds the fixture reports")
foreign = [l for l in open("client.txt", "rb") if not re.match(rb"(round|late|stuck|stdin) ", l)]
expect(not foreign, f"stdout holds only the fixture's lines, not: {foreign[:2]}")
expect("stdin 1000\n" in open("client.txt", errors="replace").read(), "the fixture read all of its stdin")
stalls = records(load_dir("logs"), "stall")
expect(any(s.get("kind") == "blocked" and s.get("samples") and s["samples"][0].get("frames") for s in stalls),
       f"the late recv is a blocked stall with a stack: {[(s.get('kind'), len(s.get('samples') or [])) for s in stalls]}")
expect(stuck is not None, "the fixture reports its unanswered connection")
logs = load_dir("logs")
clients = {int(c["local"].rsplit(":", 1)[1]): c for c in records(logs, "connection") if c["role"] == "client"}
for lport, (got, sent) in sorted(rounds.items()):
    c = clients.get(lport)
    expect(c is not None, f"client connection from port {lport} recorded")
    if not c:
        continue
    expect_eq((c["bytes_in"], c["bytes_out"]), (got, sent), f"port {lport}: bytes in, out (the reader's recv counted)")
    expect_eq(c.get("http_requests"), 1, f"port {lport}: its exchange")
    expect(c["duration_us"] >= 90_000, f"port {lport}: lasts until the response came 100 ms later, not until the close ({c['duration_us']} us)")
    expect(not c.get("open_at_exit"), f"port {lport}: closed")
statuses = [h.get("status") for h in records(logs, "http") if (h["pid"], h["conn_id"]) in
            {(c["pid"], c["conn_id"]) for p, c in clients.items() if p in rounds}]
expect_eq(sorted(statuses), [200] * n, "the client's exchanges, each with its 200")
expect(late is not None, "the fixture reports its late connection")
if late:
    c = clients.get(late[0])
    expect(c is not None, "the late connection is recorded")
    if c:
        expect_eq((c["bytes_in"], c["bytes_out"]), (0, late[2]), "late connection: ended before its response came")
        expect(1_000_000 <= c["duration_us"] < 2_000_000, f"late connection: held one second after the close ({c['duration_us']} us)")
ends = records(logs, "process_end")
expect_eq([e.get("bytes_after_end") for e in ends], [late[1] if late else None], "process_end: the late response's bytes, counted after the end")
if stuck:
    c = clients.get(stuck[0])
    expect(c is not None, "the unanswered connection is recorded")
    if c:
        expect_eq((c["bytes_in"], c["bytes_out"]), (0, stuck[1]), "unanswered connection: bytes in, out")
PY
[ -x "${WEDJAT_CLI:-}" ] || skip "no CLI given to run.sh (the rest passed)"
timeout -k 5 60 "$WEDJAT_CLI" report logs > report.txt 2>&1 || fail "wedjat report exited $?: $(tail -3 report.txt)"
grep -q "62 B moved after their connection ended" report.txt || fail "the report names the late bytes: $(grep -i loss report.txt)"
