# `wedjat report` on a terminal and off it (util-linux `script` gives it a pseudo-terminal):
# - a long read shows a progress bar on stderr when stderr is a terminal ("reading logs [###…]
#   NN%  X MiB / Y MiB  Z MiB/s"), erased at the end, and the report on stdout (a file) is
#   whole and right: the requests of scripts/bench/report_gen.py's log, to the request;
# - off a terminal, nothing at all on stderr;
# - colour only when stdout is a terminal, never with NO_COLOR or --color never; --color always
#   colours a file.
# The log is sized from the CLI's speed on a small one (a debug build reads about 13 MB/s, a
# release build over 100) so that reading takes a second or more: the bar shows after half a
# second.
. "$WJ_LIB/common.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
command -v script >/dev/null || skip "script (util-linux) is not installed"
gen=$WJ_LIB/../../../scripts/bench/report_gen.py
[ -f "$gen" ] || fail "no $gen"
cli() { timeout -k 5 90 "$WEDJAT_CLI" "$@"; }
# tty OUT CMD: runs CMD (a shell command line) on a pseudo-terminal, what it wrote to the
# terminal in OUT.
tty() { local out=$1; shift; script -qefc "$*" "$out" < /dev/null > /dev/null; }
requests() { awk '{ n += $3 } END { print n }' "$1"; }

# Off a terminal: nothing on stderr, however long; and the speed, to size the long read.
mkdir -p probe big
"$PYTHON" "$gen" probe/gw.4242.1763782510000000.ndjson 20 > probe.counts || fail "report_gen.py failed"
t0=${EPOCHREALTIME/[.,]/}
cli report --format json probe > probe.json 2> probe.err || fail "report exited $?: $(head -3 probe.err)"
t1=${EPOCHREALTIME/[.,]/}
[ ! -s probe.err ] || fail "stderr is not a terminal, yet report wrote on it: $(head -c 300 probe.err | cat -v)"
size=$("$PYTHON" -c "import sys; mbps = 20 / max(1e-3, ($t1 - $t0) / 1e6); print(min(400, max(20, int(mbps * 4) + 1)))")
note "report reads $(( 20 * 1000000 / (t1 - t0) )) MB/s off a terminal: a log of $size MB for the progress bar"
"$PYTHON" "$gen" big/gw.4242.1763782510000000.ndjson "$size" > big.counts || fail "report_gen.py failed"

# On a terminal (stderr; stdout is a file): the bar while reading, erased at the end.
tty bar.txt "'$WEDJAT_CLI' report --format json big > big.json" || fail "report on a terminal exited $?"
"$PYTHON" - bar.txt big.json "$(requests big.counts)" <<'EOF' || fail "progress bar or report not right"
import json, re, sys
tty = open(sys.argv[1], "rb").read()
bars = re.findall(rb"\r\x1b\[Kreading logs  \[([#\xc2\xb7]+)\]  (\d+)%  ([\d.]+ [KMG]?i?B) / ([\d.]+ [KMG]?i?B)  ([\d.]+ [KMG]?i?B)/s", tty)
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL:", what)
        ok = False
check(len(bars) >= 2, f"{len(bars)} progress bar frames on the terminal: {tty[:400]!r}")
if bars:
    percents = [int(b[1]) for b in bars]
    check(percents == sorted(percents) and 0 <= percents[0] and percents[-1] <= 100, f"percentages {percents}")
    check(all(b[3] == bars[0][3] for b in bars), "the total changes between frames")
    check(all(len(b[0].decode().replace("·", "#")) == 30 for b in bars), "bar width is not 30")
    last = tty.rindex(b"reading logs")
    rest = tty[last:]
    end = rest.find(b"\r\x1b[K")
    check(end > 0 and not rest[end + 4:].split(b"Script done")[0].strip(),
          f"the bar is not erased at the end: {rest[-200:]!r}")
    print(f"# {len(bars)} frames, {percents[0]}% .. {percents[-1]}% of {bars[0][3].decode()}, last rate {bars[-1][4].decode()}/s")
raw = open(sys.argv[2], "rb").read()
check(b"\x1b" not in raw and b"\r" not in raw, "terminal control bytes in the report on stdout")
r = json.loads(raw)
check(r["headline"]["http_requests"] == int(sys.argv[3]),
      f"requests {r['headline']['http_requests']}, the generator wrote {sys.argv[3]}")
sys.exit(0 if ok else 1)
EOF

# Colour: on a terminal yes; into a file, with NO_COLOR or --color never no; --color always yes.
# On the first 5,000 lines of the small log (whole lines).
esc=$'\e['
mkdir -p small
head -n 5000 probe/gw.4242.1763782510000000.ndjson > small/gw.4242.1763782510000000.ndjson
cli report small > plain.txt 2> plain.err || fail "report exited $?"
grep -q "^wedjat report: 1 process" plain.txt || fail "unexpected text report: $(head -2 plain.txt)"
! grep -qF "$esc" plain.txt || fail "colour in a report written to a file"
# (stderr away from the terminal: a slow build's progress bar is not colour)
tty color.txt "'$WEDJAT_CLI' report small 2>/dev/null" || fail "report on a terminal exited $?"
grep -qF "${esc}1m" color.txt || fail "no colour on a terminal: $(head -c 300 color.txt | cat -v)"
tty nocolor.txt "NO_COLOR=1 '$WEDJAT_CLI' report small 2>/dev/null" || fail "report with NO_COLOR exited $?"
grep -q "wedjat report: 1 process" nocolor.txt || fail "no report with NO_COLOR: $(head -c 300 nocolor.txt | cat -v)"
! grep -qF "$esc" nocolor.txt || fail "colour on a terminal with NO_COLOR set: $(grep -m1 -F "$esc" nocolor.txt | cat -v | head -c 200)"
tty never.txt "'$WEDJAT_CLI' report --color never small 2>/dev/null" || fail "report --color never exited $?"
! grep -qF "$esc" never.txt || fail "colour with --color never"
cli report --color always small > always.txt || fail "report --color always exited $?"
grep -qF "${esc}1m" always.txt || fail "no colour with --color always"
# The same text apart from the colour.
sed $'s/\e\\[[0-9;]*m//g' always.txt | cmp -s - plain.txt || fail "--color always differs from the plain text beyond colour"
echo ok
