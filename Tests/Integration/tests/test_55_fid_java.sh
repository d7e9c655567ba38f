# Fidelity matrix, Java 17 (fixtures compiled with javac here):
#   a. java.net.http.HttpClient (fid_java_client.java: writes each request on the calling
#      thread, reads the response on its selector thread) <- python threading server, both
#      watched: 30 requests one after the other, then 20 at once. Exchanges == the client's
#      requests and the server's count, statuses; durations of the sequential ones within
#      max(1 ms, 5%) of the JVM's own timing of them (median, and 90% of them): its Flight
#      Recorder socket events (jdk.SocketWrite/jdk.SocketRead, threshold 0), from the end of
#      the request's write on the caller's thread to the end of the response's last read on the
#      selector thread. (The client's timer around send() is 1-30 ms longer on this machine:
#      the hand-offs between the caller, selector and executor threads.)
#   b. com.sun.net.httpserver (fid_java_server.java: the dispatcher thread reads requests, a
#      pool thread writes the response) <- 30 curl processes and the Java client: the server's
#      exchanges == its own count, statuses; curl's exchanges and timers.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/fidelity.sh"
command -v javac >/dev/null && command -v java >/dev/null && command -v jfr >/dev/null || skip "no JDK (scripts/deps.sh installs default-jdk-headless)"
command -v curl >/dev/null || skip "curl is not installed"
F=$WJ_LIB/../fixtures
N=${WJ_FID_N:-30}
NC=20
PATHS=(/status/200 /status/404 /delay/20 /bytes/100000 /status/500 /delay/5)
mkdir -p classes
javac -d classes "$F/fid_java_client.java" "$F/fid_java_server.java" > javac.out 2>&1 || fail "javac: $(tail -5 javac.out)"
# C1 only: a shorter start-up; the exchanges are what is measured, not the JIT.
JAVA=(java -XX:TieredStopAtLevel=1 -cp classes)
# Flight Recorder settings: every socket read and write, no stack traces, nothing else.
cat > sockets.jfc <<'JFC'
<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="sockets">
  <event name="jdk.SocketRead"><setting name="enabled">true</setting><setting name="stackTrace">false</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.SocketWrite"><setting name="enabled">true</setting><setting name="stackTrace">false</setting><setting name="threshold">0 ms</setting></event>
</configuration>
JFC
# java_client NAME LOGDIR URL: the watched client with a recording, printed as JSON to NAME.jfr.json
java_client() {
    local name=$1 dir=$2 url=$3
    wj "$dir" "${JAVA[@]}" -XX:StartFlightRecording=dumponexit=true,filename="$TEST_TMP/$name.jfr",settings="$TEST_TMP/sockets.jfc" \
        -Xlog:jfr+startup=warning fid_java_client "$url" "$N" "$NC" "${PATHS[@]}" > "$name.txt" 2> "$name.err" \
        || soft_fail "$name: java client exited $?: $(tail -3 "$name.err")"
    jfr print --json --events jdk.SocketRead,jdk.SocketWrite "$name.jfr" > "$name.jfr.json" 2> "$name.jfr.err" \
        || soft_fail "$name: jfr print: $(tail -3 "$name.jfr.err")"
}

# a. Java client, python server
fid_server srv-a logs/a/server "$PYTHON" "$F/fid_py_server.py" threading
port_a=$port
java_client cli-a logs/a/client "http://127.0.0.1:$port"
fid_stop "$srv"

# b. Java server: curl clients, then the Java client
fid_server srv-b logs/b/server "${JAVA[@]}" fid_java_server
port_b=$port
mapfile -t paths < <(fid_paths "$N" "${PATHS[@]}")
fid_curl logs/b/curl cli-b-curl.txt "${paths[@]/#/http://127.0.0.1:$port}"
java_client cli-b-java logs/b/java "http://127.0.0.1:$port"
fid_stop "$srv"

pylogs "$N" "$NC" "$port_a" "$port_b" <<'PY'
import collections
from fidelity import *
soft_mode()
n, nc, port_a, port_b = map(int, sys.argv[1:])

def statuses(lines):
    return collections.Counter(str(r["status"]) for r in lines)

def served(name):
    c = server_counts(f"{name}.out")
    expect(c is not None, f"{name}: the server printed no counts")
    return collections.Counter((c or {}).get("statuses", {}))

def client_side(what, lines, logs, port, total, jfr=None):
    expect_eq(len(lines), total, f"{what}: requests the client reports")
    ch = check_exchanges(what, logs, "client", statuses(lines), peer_port=port)
    timed = [r for r in lines if r["us"] is not None]
    if len(ch) == len(lines):
        # the sequential requests came first, one at a time: their records are the first ones
        expect_eq([h["status"] for h in ch[:len(timed)]], [r["status"] for r in timed], f"{what}: statuses in order")
        if jfr is None:   # curl: its -w timers
            check_timers(f"{what}: client exchange durations vs the client's timer",
                         [(f"#{r['i']} {r['path']}", h["duration_us"], r["us"]) for r, h in zip(timed, ch)])
        else:
            jvm = jfr_exchanges(jfr, port, len(timed))
            expect_eq(len(jvm), len(timed), f"{what}: exchanges in the JVM's socket events")
            check_timers(f"{what}: client exchange durations vs the JVM's socket events",
                         [(f"#{r['i']} {r['path']}", h["duration_us"], us) for r, h, us in zip(timed, ch, jvm)])

# a
a_lines = client_lines("cli-a.txt")
a_srv = served("srv-a")
expect_eq(a_srv, statuses(a_lines), "a: the python server's and the java client's own counts")
client_side("a: java HttpClient -> python server", a_lines, load_dir("logs/a/client"), port_a, n + nc, "cli-a.jfr.json")
check_exchanges("a: python server <- java HttpClient", load_dir("logs/a/server"), "server", a_srv)

# b
curl = curl_lines("cli-b-curl.txt")
b_java = client_lines("cli-b-java.txt")
b_srv = served("srv-b")
expect_eq(b_srv, statuses(curl) + statuses(b_java), "b: the java server's and its clients' own counts")
check_exchanges("b: java server <- curl and java HttpClient", load_dir("logs/b/server"), "server", b_srv)
client_side("b: curl -> java server", curl, load_dir("logs/b/curl"), port_b, n)
client_side("b: java HttpClient -> java server", b_java, load_dir("logs/b/java"), port_b, n + nc, "cli-b-java.jfr.json")
PY
