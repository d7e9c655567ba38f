# A resolver that bypasses libc (its own UDP to port 53; fixtures/dns_client.py against the
# tiny authoritative server fixtures/dns_server.py on 127.0.0.1:53): every answered query is a
# dns record with api "udp", the name, the family asked, the RCODE (NXDOMAIN) and the A
# addresses; the TCP connection made right after to the first address names that host, with
# the lookup's duration as its DNS phase. Skipped when port 53 cannot be bound (not root, or
# a local resolver holds it).
. "$WJ_LIB/common.sh"

bg_start dns "$PYTHON" "$WJ_LIB/../fixtures/dns_server.py"
srv=$BG_PID
wait_file dns.out 5 || true
grep -q ready dns.out || skip "cannot serve DNS on 127.0.0.1:53: $(tail -1 dns.out)"
wj logs "$PYTHON" "$WJ_LIB/../fixtures/dns_client.py" api.wedjat.test nope.example www.wedjat.test > out.txt 2> err.txt \
    || fail "dns_client exited $?: $(tail -3 err.txt)"
bg_stop "$srv"
pylogs logs out.txt <<'PY'
soft_mode()
d, outfile = sys.argv[1], sys.argv[2]
lines = [l.split() for l in open(outfile)]
expect_eq([l[:3] for l in lines[:3]], [["api.wedjat.test", "0", "2"], ["nope.example", "3", "0"], ["www.wedjat.test", "0", "2"]],
          "what the client got")
log = one(load_dir(d), "dns_client log")
dns = log.records("dns", api="udp")
expect_eq([(r["name"], r["family"], r["answers"], r["addresses"], r["error"]) for r in dns],
          [("api.wedjat.test", "ipv4", 2, ["127.0.0.7", "127.0.0.8"], None),
           ("nope.example", "ipv4", 0, [], "NXDOMAIN"),
           ("www.wedjat.test", "ipv4", 2, ["127.0.0.7", "127.0.0.8"], None)], "udp dns records")
expect(all(0 <= r["duration_us"] < 1_000_000 and r["start_ts"] + r["duration_us"] <= r["ts"] + 1 for r in dns),
       f"durations: {[r['duration_us'] for r in dns]}")
_, first, port = lines[3]
tcp = [c for c in log.records("connection", transport="tcp", role="client") if c["peer"] == f"{first}:{port}"]
if expect_eq(len(tcp), 1, "the TCP connection to the resolved address"):
    expect_eq(tcp[0]["host"], "www.wedjat.test", "its host: the latest lookup that answered this address")
    expect_eq(tcp[0]["dns_us"], dns[2]["duration_us"], "its DNS phase: that lookup's duration")
udp = log.records("connection", transport="udp")
expect_eq([(c["peer"], c["role"]) for c in udp], [("127.0.0.1:53", "client")], "the resolver's UDP socket")
print("ok")
PY
