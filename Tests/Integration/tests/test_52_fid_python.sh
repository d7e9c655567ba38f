# Fidelity matrix, python: three python servers (http.server threading, asyncio streams,
# aiohttp.web) each against four clients (curl, one process per request; urllib; a
# requests.Session; an aiohttp.ClientSession), every program watched. Per pair, against the
# programs' own counts and timers (lib/fidelity.py):
#   client side: exchanges (http + http_summary) == the requests the client made, with its
#     statuses; each http record's duration within max(1 ms, 5%) of the client's own timer
#     (curl: time_total - time_pretransfer; python: its first send to the body's end, io_us,
#     which a client descheduled between its send and its clock read makes short: anything up
#     to the whole library call, us, counts as equal);
#   server side: exchanges == what the server says it answered, with its statuses.
# (A server's exchange is not timed against the client: under load the server wakes up
# milliseconds after the request arrived, which is in the client's time and not the server's.)
. "$WJ_LIB/common.sh"
. "$WJ_LIB/fidelity.sh"
command -v curl >/dev/null || skip "curl is not installed"
N=${WJ_FID_N:-20}
PATHS=(/status/200 /status/404 /delay/20 /bytes/100000 /status/500 /delay/5)
servers=(threading asyncio aiohttp)
clients=(curl urllib requests aiohttp)
"$PYTHON" -c 'import requests, aiohttp' 2>/dev/null || fail "python's requests or aiohttp is missing (scripts/deps.sh installs them)"

mapfile -t paths < <(fid_paths "$N" "${PATHS[@]}")
pairs=()
for s in "${servers[@]}"; do
    for c in "${clients[@]}"; do
        pair=$s-$c
        fid_server "srv-$pair" "logs/$pair/server" "$PYTHON" "$WJ_LIB/../fixtures/fid_py_server.py" "$s"
        base=http://127.0.0.1:$port
        if [ "$c" = curl ]; then
            fid_curl "logs/$pair/client" "cli-$pair.txt" "${paths[@]/#/$base}"
        else
            wj "logs/$pair/client" "$PYTHON" "$WJ_LIB/../fixtures/fid_py_client.py" "$c" "$base" "$N" "${PATHS[@]}" \
                > "cli-$pair.txt" 2> "cli-$pair.err" || soft_fail "$pair: client exited $?: $(tail -3 "cli-$pair.err")"
        fi
        fid_stop "$srv"
        pairs+=("$pair $port")
    done
done

pylogs "${pairs[@]}" <<'PY'
import collections
from fidelity import *
soft_mode()
for arg in sys.argv[1:]:
    pair, port = arg.split()
    server, client = pair.split("-")
    what = f"{server} server <- {client} client"
    cl = curl_lines(f"cli-{pair}.txt") if client == "curl" else client_lines(f"cli-{pair}.txt")
    if not expect_eq(len(cl), int(os.environ.get("WJ_FID_N", "20")), f"{what}: requests the client reports"):
        continue
    counted = server_counts(f"srv-{pair}.out")
    if not expect(counted is not None, f"{what}: the server printed no counts: {open(f'srv-{pair}.out').read()[-300:]}"):
        continue
    want = collections.Counter(str(r["status"]) for r in cl)
    expect_eq(dict(sorted(counted["statuses"].items())), dict(sorted(want.items())), f"{what}: server's and client's own counts")
    clogs, slogs = load_dir(f"logs/{pair}/client"), load_dir(f"logs/{pair}/server")
    ch = check_exchanges(what, clogs, "client", want, peer_port=port)
    sh = check_exchanges(what, slogs, "server", collections.Counter(counted["statuses"]))
    if len(ch) == len(cl):
        check_timers(f"{what}: client exchange durations vs the client's timer",
                     [(f"#{r['i']} {r['path']}", h["duration_us"], r.get("io_us", r["us"]), r["us"]) for r, h in zip(cl, ch)])
        expect_eq([h["status"] for h in ch], [r["status"] for r in cl], f"{what}: client statuses in order")
PY
