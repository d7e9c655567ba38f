# `wedjat report --html`, rendered by headless Chromium. Two curls (several requests, one of
# them slow, two host names, a path with a <script> in it) against a python server, all
# watched. The page's DOM must have one waterfall row per `http` record in the logs, the
# hosts, the latency and CPU/memory charts, what its script fills in, no element of the log's
# making and no request of its own (Chromium goes through a recording proxy); the screenshot
# must be the window's size and show the waterfall's bars.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
command -v chromium >/dev/null || skip "chromium is not installed (scripts/deps.sh installs it)"
command -v curl >/dev/null || skip "curl is not installed"
logs=$TEST_TMP/logs

delay_server_watched "$logs" WEDJAT_SAMPLE_MS=100

curl_watched() { timeout -k 5 60 env WEDJAT_DIR="$logs" LD_PRELOAD="$WEDJAT_PRELOAD" curl -s "$@"; }
# One curl, sequential, a connection per host name; the 400 ms request is the slow one.
curl_watched -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
    "http://localhost:$port/delay/5" "http://localhost:$port/delay/400" "http://localhost:$port/bytes/200000" \
    "http://127.0.0.1:$port/delay/0" "http://127.0.0.1:$port/missing" \
    "http://127.0.0.1:$port/<script>alert(1)</script>" || fail "curl 1 failed"
curl_watched -o /dev/null -o /dev/null "http://127.0.0.1:$port/delay/50" "http://127.0.0.1:$port/delay/20" \
    || fail "curl 2 failed"
kill -0 "$srv" || fail "the server died: $(tail -5 server.out)"
bg_stop "$srv"

timeout -k 5 60 "$WEDJAT_CLI" report --html report.html "$logs" > report.out 2> report.err
rc=$?
[ $rc = 0 ] || fail "wedjat report --html exited $rc: $(cat report.err)"
[ ! -s report.out ] || fail "report --html printed on stdout: $(head -3 report.out)"
[ -s report.html ] || fail "no report.html"
note "report.html: $(wc -c < report.html) bytes"
# `-` is standard output (no file named "-").
timeout -k 5 60 "$WEDJAT_CLI" report --html - "$logs" > stdout.html 2> stdout.err || fail "report --html - exited $?"
[ ! -e ./- ] || fail "report --html - wrote a file named -"
cmp -s stdout.html report.html || fail "report --html - differs from report --html report.html"

# A proxy that records every request line it gets. Chromium's own services (component
# updates, time) are told apart by host; a page that loads something is caught (the control
# below proves it in this environment).
cat > proxy.py <<'PY'
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
open("proxy.port", "w").write(str(s.getsockname()[1]))
with open(sys.argv[1], "a") as log:
    while True:
        c, _ = s.accept()
        c.settimeout(2)
        try:
            line = c.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
        except OSError:
            line = "(nothing)"
        log.write(line + "\n")
        log.flush()
        c.close()
PY
: > proxy.log
bg_start proxy "$PYTHON" proxy.py proxy.log
proxy=$BG_PID
wait_file proxy.port || fail "the recording proxy did not start"
W=1400
H=2200
# HOME too: Chromium keeps caches and GTK settings there even with its own profile directory.
chrome() {
    timeout -k 5 60 env HOME="$TEST_TMP/home" chromium --headless --no-sandbox --disable-gpu --user-data-dir="$TEST_TMP/chrome" \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --proxy-server="http://127.0.0.1:$(cat proxy.port)" --proxy-bypass-list='<-loopback>' \
        --virtual-time-budget=2000 "$@" 2> chrome.err
}
page_requests() { grep -vE '(google\.com|googleapis\.com|gvt1\.com)(:443)?[/ ]' proxy.log; }
printf '<!DOCTYPE html><img src="http://127.0.0.1:%s/leak.png">' "$(free_port)" > leak.html
chrome --dump-dom "file://$TEST_TMP/leak.html" > /dev/null
page_requests | grep -q 'leak.png' || fail "control: the proxy did not see the control page's request: $(cat proxy.log)"
: > proxy.log
chrome --dump-dom "file://$TEST_TMP/report.html" > dom.html || fail "chromium --dump-dom failed: $(tail -3 chrome.err)"
chrome --screenshot="$TEST_TMP/shot.png" --window-size=$W,$H --hide-scrollbars "file://$TEST_TMP/report.html" > /dev/null \
    || fail "chromium --screenshot failed: $(tail -3 chrome.err)"
sleep 0.2
bg_stop "$proxy"
if page_requests | grep -q .; then fail "the page made requests: $(page_requests | head -5)"; fi

pylogs "$logs" "$port" "$W" "$H" <<'PY'
import collections, html.parser, struct, zlib
logs = load_dir(sys.argv[1])
port, W, H = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
https = [r for l in logs for r in l.records("http")]
expect(len(https) == 16, f"want 8 client + 8 server http records, got {len(https)}")
hosts = {(r["role"], r["host"]) for r in https}
expect(hosts == {(role, f"{h}:{port}") for role in ("client", "server") for h in ("localhost", "127.0.0.1")},
       f"hosts: {hosts}")
sampled = [l for l in logs if l.records("sample")]
# A process sampled fewer than 3 times (a short curl: its exit sample) is a table row, not a
# chart of one dot.
charted = [l for l in sampled if len(l.records("sample")) >= 3]

class Page(html.parser.HTMLParser):
    """Elements by class, texts of the waterfall rows and of #wf-count, every tag and attribute."""
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.classes = collections.Counter(), set(), collections.Counter()
        self.body, self.count_text, self.row_texts, self.few_rows = {}, "", [], 0
        self.stack = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] += 1
        if tag == "tr" and any(x.get("id") == "few-samples" for _, x in self.stack):
            self.few_rows += 1
        self.attrs |= set(a)
        for c in (a.get("class") or "").split():
            self.classes[c] += 1
        if tag == "body":
            self.body = a
        if tag not in ("br", "meta", "input", "line", "rect", "polyline", "circle", "i"):
            self.stack.append((tag, a))
            if "wf-row" in (a.get("class") or "").split():
                self.row_texts.append("")
    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass
    def handle_data(self, data):
        ids = [a.get("id") for _, a in self.stack]
        if "wf-count" in ids:
            self.count_text += data
        if any("wf-row" in (a.get("class") or "").split() for _, a in self.stack):
            self.row_texts[-1] += data

p = Page()
p.feed(open("dom.html", encoding="utf-8").read())
expect(p.body.get("data-js") == "ready", f"the script did not run: body {p.body}")
expect(p.classes["wf-row"] == len(https), f"{p.classes['wf-row']} waterfall rows, {len(https)} http records")
expect(p.count_text == f"{len(https)} of {len(https)} rows shown", f"#wf-count: {p.count_text!r}")
expect(p.classes["wf-proc"] == 3, f"want 3 process groups (2 curls, the server), got {p.classes['wf-proc']}")
for role, host in sorted(hosts):
    expect(any(host in t for t in p.row_texts), f"no row names {host}")
expect(p.classes["cdf-chart"] == len(hosts), f"{p.classes['cdf-chart']} latency charts for {len(hosts)} hosts")
expect(p.classes["timeline"] == 2 * len(charted), f"{p.classes['timeline']} timelines for {len(charted)} processes with 3+ samples")
expect(p.few_rows == (len(sampled) - len(charted) + 1 if len(sampled) > len(charted) else 0),
       f"{p.few_rows} table rows for {len(sampled) - len(charted)} processes with fewer samples")
expect(p.classes["ph"] >= 3 * len(https), f"only {p.classes['ph']} phase bars")
expect('id="coverage-card"' in open("dom.html", encoding="utf-8").read(), "no coverage card")
expect(p.classes["fg"] + p.classes["empty"] >= 1, "no stall section")
# The path with a <script> is a row's text, not an element.
expect(p.tags["script"] == 1, f"{p.tags['script']} script elements")
expect(sum("<script>alert(1)</script>" in t for t in p.row_texts) == 2, "the <script> path is not shown as text")
loaders = p.attrs & {"src", "href", "srcset", "action", "formaction", "poster", "xlink:href", "background"}
expect(not loaders, f"attributes that load: {loaders}")
expect(not {"img", "link", "iframe", "object", "embed", "a"} & set(p.tags), f"tags: {sorted(p.tags)}")

def decode_png(path):
    data = open(path, "rb").read()
    expect(data[:8] == b"\x89PNG\r\n\x1a\n", "the screenshot is not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise CheckFailed(f"unexpected PNG format: depth {depth}, colour type {ctype}")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows

w, h, bpp, rows = decode_png("shot.png")
expect((w, h) == (W, H), f"screenshot is {w}x{h}, want {W}x{H}")
colours = collections.Counter(r[x:x + 3] for r in rows[:900] for x in range(0, len(r), bpp))
wait, receive = bytes((0x00, 0xA8, 0x46)), bytes((0x21, 0x96, 0xF3))
print(f"# screenshot {w}x{h}: {len(colours)} colours in the top 900 rows, {colours[wait]} wait-bar pixels, {colours[receive]} receive")
expect(len(colours) > 50, f"the page looks blank: {len(colours)} colours")
# Two rows (client and server) of the 400 ms exchange are mostly wait: hundreds of pixels wide, 10 high.
expect(colours[wait] > 4000, f"only {colours[wait]} pixels of the wait bars' colour")
expect(colours[receive] > 0, "no receive bar")
PY
rc=$?
[ $rc = 0 ] || exit $rc
echo ok
