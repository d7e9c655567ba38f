# Fidelity matrix, nginx and redis (both watched, against their own counts):
#   a. nginx as a server: 30 curl processes (one connection each: /f.bin 200, /missing 404,
#      /up/... proxied) and one curl with 20 URLs on a keep-alive connection. nginx's exchanges
#      == the lines of its own access log, with its statuses; curl's exchanges and timers as in
#      test 52;
#   b. nginx as a client: the /up/ requests proxied to a python server: the worker's
#      client-role exchanges == what the python server says it answered, with its statuses;
#   c. redis: redis-benchmark (-c 10, 2,000 GETs and SETs each) and redis-cli: the server's
#      connection records == redis's INFO total_connections_received, the benchmark's client
#      connections == the server's records of them (by port); not HTTP, and said so on every
#      connection with bytes (http_none "not_http").
. "$WJ_LIB/common.sh"
. "$WJ_LIB/fidelity.sh"
. "$WJ_LIB/nginx.sh"
. "$WJ_LIB/redis.sh"
command -v curl >/dev/null || skip "curl is not installed"
command -v nginx >/dev/null || skip "nginx is not installed"
command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null || skip "redis-benchmark/redis-cli are not installed"
F=$WJ_LIB/../fixtures
N=${WJ_FID_N:-30}

# b's upstream, watched
fid_server up logs/up "$PYTHON" "$F/fid_py_server.py" threading
up=$srv
up_port=$port
nginx_start 50000 64 1 warn "access_log $TEST_TMP/access.log; keepalive_timeout 10;
        location /up/ { proxy_pass http://127.0.0.1:$up_port/; }"
mapfile -t paths < <(fid_paths "$N" /f.bin /missing /up/status/200 /up/delay/20 /up/status/503 /f.bin)
fid_curl logs/curl cli-a.txt "${paths[@]/#/http://127.0.0.1:$port}"
# one curl, 20 URLs, one keep-alive connection
ka=()
for i in $(seq 1 20); do ka+=(-o /dev/null "http://127.0.0.1:$port/f.bin?$i"); done
wj logs/curl-ka curl -s -w "%{url_effective} $FID_CURL_W" "${ka[@]}" > cli-ka.raw || soft_fail "keep-alive curl exited $?"
sed -E 's|^http://[^/]+||' cli-ka.raw > cli-ka.txt
nginx_stop
fid_stop "$up"

# c. redis
redis_start logs/redis 127.0.0.1
wj logs/bench redis-benchmark -h 127.0.0.1 -p "$port" -n 2000 -c 10 -t get,set -q > bench.out 2>&1 \
    || soft_fail "redis-benchmark exited $?: $(tr '\r' '\n' < bench.out | tail -3)"
wj logs/cli redis-cli -h 127.0.0.1 -p "$port" set k v > cli.out 2>&1 || soft_fail "redis-cli exited $?"
redis-cli -h 127.0.0.1 -p "$port" info stats | tr -d '\r' > info.txt || fail "redis-cli info failed"
bg_stop "$srv" TERM
redis_port=$port

pylogs "$up_port" "$redis_port" <<'PY'
import collections
from fidelity import *
soft_mode()
up_port, redis_port = map(int, sys.argv[1:])

# a. nginx's own counts: its access log (combined format: the status is the 9th field)
access = [l.split() for l in open("access.log")]
nginx_statuses = collections.Counter(f[8] for f in access)
cl, ka = curl_lines("cli-a.txt"), curl_lines("cli-ka.txt")
expect_eq(len(ka), 20, "keep-alive curl: requests")
expect_eq(sum(r["connects"] for r in ka), 1, "keep-alive curl: connections it opened")
expect_eq(nginx_statuses, collections.Counter(str(r["status"]) for r in cl + ka), "nginx's access log vs curl's statuses")
nlogs = load_dir("logs")
workers = [l for l in nlogs if l.exe == "nginx"]
check_exchanges("a: nginx server <- curl", workers, "server", nginx_statuses)
for what, lines, d in (("a: curl -> nginx", cl, "logs/curl"), ("a: keep-alive curl -> nginx", ka, "logs/curl-ka")):
    ch = check_exchanges(what, load_dir(d), "client", collections.Counter(str(r["status"]) for r in lines))
    if len(ch) == len(lines):
        check_timers(f"{what}: exchange durations vs curl's timer",
                     [(f"#{r['i']} {r['path']}", h["duration_us"], r["us"]) for r, h in zip(lines, ch)])

# b. nginx as a client of the python server
counted = server_counts("up.out")
if expect(counted is not None, "b: the upstream printed its counts"):
    want = collections.Counter(counted["statuses"])
    expect_eq(want, collections.Counter(str(r["status"]) for r in cl if r["path"].startswith("/up/")),
              "b: the upstream's count vs curl's /up/ requests")
    check_exchanges("b: nginx worker -> python upstream", workers, "client", want, peer_port=up_port)
    check_exchanges("b: python upstream <- nginx", load_dir("logs/up"), "server", want)

# c. redis
info = dict(l.split(":", 1) for l in open("info.txt").read().split("\n") if ":" in l)
received = int(info["total_connections_received"])
rlogs = load_dir("logs/redis")
srv_conns = [c for c in records(rlogs, "connection") if c["role"] == "server" and c["transport"] == "tcp"]
# the INFO connection was still open when redis counted it: it is in both
expect_eq(len(srv_conns), received, "c: redis server connection records vs INFO total_connections_received")
bench = [c for c in records(load_dir("logs/bench"), "connection") if c["transport"] == "tcp" and c["peer"] == f"127.0.0.1:{redis_port}"]
expect(len(bench) >= 20, f"c: redis-benchmark connections: {len(bench)} (10 for GET, 10 for SET, and its probe)")
srv_ports = {port_of(c["peer"]) for c in srv_conns}
missing = [c["local"] for c in bench if port_of(c["local"]) not in srv_ports]
expect(not missing, f"c: benchmark connections without a server record: {missing[:5]}")
for c in bench + srv_conns:
    if c["bytes_in"] + c["bytes_out"] > 0:
        expect_eq((c.get("http_requests"), c.get("http_none")), (0, "not_http"),
                  f"c: redis connection {c['local']} -> {c['peer']} (http_requests, http_none)")
PY
