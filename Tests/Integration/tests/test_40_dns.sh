# Resolver calls: one dns record per lookup (name, service, duration, answers, error), none
# for literal addresses, and the connections made to a resolved address name their host,
# with the DNS phase attributed to the first connection after the lookup only.
. "$WJ_LIB/common.sh"

mkdir -p www
head -c 1000 /dev/urandom > www/data.bin
wj_bg server srvlogs "$PYTHON" "$WJ_LIB/httpserver.py" www port 3
wait_file port || fail "server did not start: $(cat server.out)"
port=$(cat port)

cat > client.py <<'PY'
import socket, sys, time, urllib.request
port = int(sys.argv[1])
# Two lookups + connections through urllib (each request resolves "localhost").
for _ in range(2):
    urllib.request.urlopen(f"http://localhost:{port}/data.bin", timeout=10).read()
# One lookup, then a connection 1.5 s later: same host, but no DNS phase of its own.
addr = socket.getaddrinfo("localhost", port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
time.sleep(1.5)
s = socket.create_connection(addr)
s.close()
# A literal address is not a lookup; a name that does not exist fails with EAI_NONAME.
socket.getaddrinfo("127.0.0.1", port)
try:
    socket.getaddrinfo("no-such-host.invalid", 80)
except socket.gaierror as e:
    print("gaierror", e.errno)
print(socket.gethostbyname("localhost"))
PY
out=$(wj clilogs "$PYTHON" client.py "$port") || fail "client failed: $out"
note "$out"
echo "$out" | grep -q "^gaierror -2$" || fail "the bad name did not fail with EAI_NONAME: $out"

pylogs clilogs "$port" <<'PY'
d, port = sys.argv[1], int(sys.argv[2])
log = one(load_dir(d), "client log")
dns = log.records("dns")
names = [r["name"] for r in dns]
# urllib x2, getaddrinfo, the failing name, gethostbyname (python uses getaddrinfo for it)
expect_eq(names, ["localhost", "localhost", "localhost", "no-such-host.invalid", "localhost"], "lookups in order")
expect("127.0.0.1" not in names, "a literal address was reported as a lookup")
for r in dns:
    expect_eq(r["api"], "getaddrinfo", "api")
    expect(isinstance(r["duration_us"], int) and r["duration_us"] >= 0, f"duration {r['duration_us']}")
    expect(r["start_ts"] <= r["ts"], "start_ts after ts")
ok = [r for r in dns if r["error"] is None]
expect_eq(len(ok), 4, "successful lookups")
for r in ok:
    expect("127.0.0.1" in r["addresses"], f"answers {r['addresses']}")
    expect_eq(r["answers"], len(r["addresses"]), "answers count")
bad = one([r for r in dns if r["error"]], "failed lookup")
expect_eq(bad["error"], "EAI_NONAME", "error name")
expect_eq(bad["answers"], 0, "answers of a failed lookup")
expect_eq(dns[0]["service"], str(port), "service")
expect_eq(dns[2]["family"], "ipv4", "family of the AF_INET lookup")

conns = sorted(log.records("connection", role="client"), key=lambda c: c["open_ts"])
expect_eq(len(conns), 3, "client connections")
for c in conns:
    expect_eq(c["host"], "localhost", "host of a connection to a resolved address")
    expect_eq(c["peer"], f"127.0.0.1:{port}", "peer")
    expect(c["connect_end_ts"] >= c["open_ts"], "connect end before start")
    expect(c["first_byte_out_ts"] is None or c["first_byte_out_ts"] >= c["connect_end_ts"], "first byte before connect end")
# The first two follow their lookup at once; the third comes 1.5 s after its lookup.
for c, lookup in zip(conns[:2], dns[:2]):
    expect_eq(c["dns_us"], lookup["duration_us"], "dns_us of a connection right after its lookup")
    expect(lookup["ts"] <= c["open_ts"], "lookup ends before the connect")
expect_eq(conns[2]["dns_us"], None, "dns_us of a connection 1.5 s after the lookup")
for c in conns[:2]:
    expect(c["first_byte_in_ts"] >= c["first_byte_out_ts"], "response before request")
    expect(c["last_byte_ts"] >= c["first_byte_in_ts"], "last byte before first")
    expect(c["bytes_in"] > 1000, "bytes_in")
expect_eq(conns[2]["first_byte_out_ts"], None, "first byte of a connection that sent nothing")
print("ok")
PY
