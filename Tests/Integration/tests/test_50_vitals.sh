# Vitals accuracy. The `sample` records of fixtures that burn a known share of CPU (50% duty
# cycle on one thread; 100% on two threads) and touch a known amount of memory (200 MiB) are
# compared with what /proc says at the same moments: a watcher reads /proc/PID/... as soon as
# each sample line lands in the log; and ps at those moments (its %CPU is CPU time over the
# process's life: compared with the samples' cumulative CPU over the same time; its RSS).
# top is run alongside, its readings printed: its intervals cannot be aligned with the samples.
#   CPU %: process and busiest threads within 5 points of /proc; system CPU within 5 points
#   memory: RSS within 5% of VmRSS (and of 200 MiB), peak and virtual size; system memory
#   threads and fds exactly /proc's (wedjat's log fd excluded); faults and context switches
. "$WJ_LIB/common.sh"

cat > watch.py <<'PY'
# watch.py PID LOGDIR OUT SECONDS: each time a sample line of PID's log appears, read /proc
# at once; one JSON line {"sample": ..., "proc": ...} per sample in OUT.
import glob, json, os, subprocess, sys, time
pid, logdir, out, limit = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])

def fields(path):
    s = open(path).read()
    return s[s.index("(") + 1:s.rindex(")")], s[s.rindex(")") + 2:].split()  # comm, fields 3..

def kv(path):
    d = {}
    for line in open(path):
        k, _, v = line.partition(":")
        d[k] = v.split()[0] if v.split() else ""
    return d

def proc(logpath):
    r = {"mono": time.monotonic()}
    _, f = fields(f"/proc/{pid}/stat")
    r["ticks"] = int(f[11]) + int(f[12])           # utime + stime (fields 14, 15)
    r["minflt"], r["majflt"] = int(f[7]), int(f[9])  # fields 10, 12
    tasks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            comm, g = fields(f"/proc/{pid}/task/{tid}/stat")
            st = kv(f"/proc/{pid}/task/{tid}/status")
        except OSError:
            continue
        tasks[tid] = {"ticks": int(g[11]) + int(g[12]), "comm": comm,
                      "vcsw": int(st["voluntary_ctxt_switches"]), "ivcsw": int(st["nonvoluntary_ctxt_switches"])}
    r["tasks"] = tasks
    st = kv(f"/proc/{pid}/status")
    r["rss_kb"], r["hwm_kb"], r["size_kb"], r["threads"] = (int(st[k]) for k in ("VmRSS", "VmHWM", "VmSize", "Threads"))
    fds = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != logpath:
                fds += 1
        except OSError:
            pass
    r["fds"] = fds
    cpu = open("/proc/stat").readline().split()[1:]
    v = [int(x) for x in cpu]
    r["sys_total"] = sum(v[:8])
    r["sys_idle"] = v[3] + v[4]
    mi = kv("/proc/meminfo")
    r["mem_total_kb"], r["mem_avail_kb"] = int(mi["MemTotal"]), int(mi["MemAvailable"])
    try:
        pcpu, rss = subprocess.run(["ps", "-o", "%cpu=,rss=", "-p", str(pid)], capture_output=True, text=True).stdout.split()
        r["ps_pcpu"], r["ps_rss_kb"] = float(pcpu.replace(",", ".")), int(rss)
    except (OSError, ValueError):
        r["ps_pcpu"] = r["ps_rss_kb"] = None
    return r

deadline = time.monotonic() + limit
path, offset, buf = None, 0, b""
with open(out, "w") as o:
    while time.monotonic() < deadline:
        try:
            state = fields(f"/proc/{pid}/stat")[1][0]
        except OSError:
            break
        if state in "ZX":
            break
        if path is None:
            found = glob.glob(f"{logdir}/*.{pid}.*.ndjson")
            path = found[0] if found else None
        if path:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read()
            offset += len(data)
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                rec = json.loads(line)
                if rec["type"] == "sample" and not rec["at_exit"]:
                    try:
                        o.write(json.dumps({"sample": rec, "proc": proc(os.path.abspath(path))}) + "\n")
                        o.flush()
                    except OSError:
                        pass
        time.sleep(0.002)
PY

hz=$(getconf CLK_TCK)
have_top=0
command -v top >/dev/null && have_top=1

# burn NAME THREADS DUTY SECONDS: run the fixture watched, with the watcher and top.
burn() {
    local name=$1
    wj_bg "$name" "logs_$name" "$FIXTURES/vitals_burn" "$2" "$3" "$4"
    local pid=$BG_PID
    [ $have_top = 1 ] && top -b -d 1 -n $(( ${4%.*} + 1 )) -p "$pid" > "top_$name.txt" 2>&1 &
    local toppid=$!
    "$PYTHON" watch.py "$pid" "logs_$name" "watch_$name.jsonl" $(( ${4%.*} + 10 ))
    bg_stop "$pid"
    [ $have_top = 1 ] && wait "$toppid"
}
burn duty50 1 50 4.6
burn full2 2 100 4.6

check_cpu() {  # NAME THREADS NOMINAL_PCT_PER_THREAD
    pylogs "$1" "$2" "$3" "$hz" <<'PY'
name, nthreads, nominal, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
soft_mode()
log = one(load_dir(f"logs_{name}"), "log")
samples = log.records("sample")
periodic = [s for s in samples if not s["at_exit"]]
expect(len(periodic) >= 4, f"{name}: {len(periodic)} periodic samples in 4.6 s at 1000 ms, want >= 4")
expect(samples[-1]["at_exit"] and samples.index(samples[-1]) == len(samples) - 1, f"{name}: the last sample is the exit one")
expect_eq([s["seq"] for s in samples], list(range(len(samples))), f"{name}: seq")
for a, b in zip(samples, samples[1:]):
    expect_eq(b["interval_start_ts"], a["ts"], f"{name}: each interval starts at the previous sample")
# sample k is due 1 s after main, then every second: never early, and on time unless the
# machine is so loaded that the thread waits for a CPU (then the next interval is shorter)
for k, s in enumerate(periodic):
    due = log.start["main_ts"] + (k + 1) * 1_000_000
    expect(due <= s["ts"] <= due + 600_000, f"{name}: sample {k} at {s['ts'] - due} us from its due time")

rows = [json.loads(l) for l in open(f"watch_{name}.jsonl")]
expect(len(rows) >= 3, f"{name}: the watcher saw {len(rows)} samples")
compared = 0
for prev, cur in zip(rows, rows[1:]):
    s, p0, p1 = cur["sample"], prev["proc"], cur["proc"]
    if s["seq"] != prev["sample"]["seq"] + 1:
        continue
    dt = p1["mono"] - p0["mono"]
    truth = (p1["ticks"] - p0["ticks"]) / hz / dt * 100
    got = s["cpu"]["total_pct"]
    print(f"# {name} sample {s['seq']}: cpu {got}% (user {s['cpu']['user_pct']}, system {s['cpu']['system_pct']}); "
          f"/proc at the same moments {truth:.1f}%; nominal {nominal * nthreads}%")
    expect(abs(got - truth) <= 5, f"{name} sample {s['seq']}: cpu total_pct {got}, /proc says {truth:.1f}")
    expect(abs(s["cpu"]["user_pct"] + s["cpu"]["system_pct"] - got) <= 0.2, f"{name}: user + system = total")
    # busiest threads: the burners, by name, each within 5 points of its /proc/PID/task/TID/stat
    burners = {tid: t for tid, t in p1["tasks"].items() if t["comm"].startswith("burn")}
    expect_eq(len(burners), nthreads, f"{name}: burner threads in /proc")
    top = {str(t["tid"]): t for t in s["top_threads"]}
    expect(len(s["top_threads"]) <= 3, f"{name}: at most 3 top threads")
    expect(all(t["name"] != "wedjat" for t in s["top_threads"]), f"{name}: wedjat's own thread is not among the top")
    for tid, t in burners.items():
        if tid not in p0["tasks"]:
            continue
        ttruth = (t["ticks"] - p0["tasks"][tid]["ticks"]) / hz / dt * 100
        if expect(tid in top, f"{name} sample {s['seq']}: burner {tid} ({ttruth:.1f}%) not in top_threads {s['top_threads']}"):
            expect_eq(top[tid]["name"], t["comm"], f"{name}: thread name")
            expect(abs(top[tid]["cpu_pct"] - ttruth) <= 5,
                   f"{name} sample {s['seq']}: thread {tid} cpu_pct {top[tid]['cpu_pct']}, /proc says {ttruth:.1f}")
    # system CPU over all cores, from /proc/stat at the same moments
    sc = s["system_cpu"]
    if expect("busy_pct" in sc, f"{name}: system_cpu {sc}"):
        dtot = p1["sys_total"] - p0["sys_total"]
        struth = 100 * (dtot - (p1["sys_idle"] - p0["sys_idle"])) / dtot
        expect(abs(sc["busy_pct"] - struth) <= 5, f"{name}: system busy_pct {sc['busy_pct']}, /proc/stat says {struth:.1f}")
    # ps at the same moment: CPU time over the process's life
    if p1["ps_pcpu"] is not None:
        life = (s["ts"] - log.start["process_start_ts"]) / 1e6
        ours = (s["cpu"]["user_us"] + s["cpu"]["system_us"]) / 1e6 / life * 100
        print(f"# {name} sample {s['seq']}: ps %CPU {p1['ps_pcpu']}, the sample's CPU time over the life {ours:.1f}")
        expect(abs(ours - p1["ps_pcpu"]) <= 5, f"{name}: ps says {p1['ps_pcpu']}% over the life, samples {ours:.1f}")
    compared += 1
expect(compared >= 2, f"{name}: only {compared} intervals compared with /proc")

# top, over its own 1 s intervals: printed next to the samples (on a loaded machine the two
# series cover different seconds, so they are not compared)
try:
    lines = open(f"top_{name}.txt").read().splitlines()
except OSError:
    lines = []
vals = []
for i, l in enumerate(lines):
    if l.split()[:1] == ["PID"]:
        col = l.split().index("%CPU")
        row = lines[i + 1].split() if i + 1 < len(lines) else []
        if len(row) > col:
            vals.append(float(row[col].replace(",", ".")))
if len(vals) >= 3:
    top_mean = sum(vals[1:-1]) / len(vals[1:-1]) if len(vals) > 3 else vals[1]
    ours = [s["cpu"]["total_pct"] for s in periodic[1:]]
    mean = sum(ours) / len(ours)
    print(f"# {name}: top says {vals[1:]} (mean {top_mean:.1f}), wedjat's samples mean {mean:.1f}")
else:
    print(f"# {name}: no top readings ({len(vals)})")
PY
}
check_cpu duty50 1 50 || soft_fail "CPU accuracy, 50% duty cycle on one thread"
check_cpu full2 2 100 || soft_fail "CPU accuracy, 100% on two threads"

# 200 MiB touched, 7 extra fds, held 3.6 s.
wj_bg mem logs_mem "$FIXTURES/vitals_mem" 200 3.6 7
pid=$BG_PID
"$PYTHON" watch.py "$pid" logs_mem watch_mem.jsonl 15
bg_stop "$pid"
grep -q touched "$TEST_TMP/mem.out" || fail "vitals_mem did not run: $(cat "$TEST_TMP/mem.out")"
pylogs <<'PY' || soft_fail "memory, fds, threads, faults"
soft_mode()
log = one(load_dir("logs_mem"), "log")
rows = [json.loads(l) for l in open("watch_mem.jsonl")]
expect(len(rows) >= 2, f"the watcher saw {len(rows)} samples")
mib200 = 200 << 20
for r in rows[1:]:  # after the first second the memory is touched
    s, p = r["sample"], r["proc"]
    m, sm = s["memory"], s["system_memory"]
    print(f"# mem sample {s['seq']}: rss {m['rss_bytes'] >> 10} KiB, /proc VmRSS {p['rss_kb']} KiB, ps {p['ps_rss_kb']} KiB; "
          f"peak {m['peak_rss_bytes'] >> 10} (VmHWM {p['hwm_kb']}); virtual {m['virtual_bytes'] >> 10} (VmSize {p['size_kb']}); "
          f"fds {s['fds']} (/proc {p['fds']}); threads {s['threads']} (/proc {p['threads']})")
    expect(abs(m["rss_bytes"] - p["rss_kb"] * 1024) <= 0.05 * p["rss_kb"] * 1024, f"rss {m['rss_bytes']} vs VmRSS {p['rss_kb']} kB")
    if p["ps_rss_kb"]:
        expect(abs(m["rss_bytes"] - p["ps_rss_kb"] * 1024) <= 0.05 * p["ps_rss_kb"] * 1024, f"rss {m['rss_bytes']} vs ps {p['ps_rss_kb']} kB")
    expect(abs(m["rss_bytes"] - mib200) <= 0.05 * mib200, f"rss {m['rss_bytes']} not within 5% of 200 MiB")
    expect(abs(m["peak_rss_bytes"] - p["hwm_kb"] * 1024) <= 0.05 * p["hwm_kb"] * 1024, f"peak_rss {m['peak_rss_bytes']} vs VmHWM {p['hwm_kb']} kB")
    expect(m["peak_rss_bytes"] >= m["rss_bytes"], "peak_rss >= rss")
    expect(abs(m["virtual_bytes"] - p["size_kb"] * 1024) <= 0.01 * p["size_kb"] * 1024, f"virtual {m['virtual_bytes']} vs VmSize {p['size_kb']} kB")
    expect_eq(s["fds"], p["fds"], "fds (the app's: /proc/PID/fd without wedjat's log)")
    expect(s["fds"] >= 3 + 7, f"fds {s['fds']}: at least stdin/out/err and the fixture's 7")
    expect_eq(s["threads"], p["threads"], "threads")
    expect(abs(sm["total_bytes"] - p["mem_total_kb"] * 1024) == 0, "system total")
    expect(abs(sm["available_bytes"] - p["mem_avail_kb"] * 1024) <= 0.02 * p["mem_total_kb"] * 1024, "system available")
    expect_eq(sm["used_bytes"], sm["total_bytes"] - sm["available_bytes"], "system used = total - available")
    pf, cs = s["page_faults"], s["ctx_switches"]
    expect(abs(pf["minor"] - p["minflt"]) <= max(64, p["minflt"] // 50), f"minor faults {pf['minor']} vs /proc {p['minflt']}")
    expect(pf["major"] <= p["majflt"], f"major faults {pf['major']} vs /proc {p['majflt']}")
    vcsw = sum(t["vcsw"] for t in p["tasks"].values())
    ivcsw = sum(t["ivcsw"] for t in p["tasks"].values())
    expect(abs(cs["voluntary"] - vcsw) <= 20, f"voluntary switches {cs['voluntary']} vs /proc {vcsw}")
    expect(abs(cs["involuntary"] - ivcsw) <= 20, f"involuntary switches {cs['involuntary']} vs /proc {ivcsw}")
samples = log.records("sample")
for a, b in zip(samples, samples[1:]):
    for k in ("minor", "major"):
        expect(b["page_faults"][k] >= a["page_faults"][k], f"page_faults.{k} goes down")
    for k in ("voluntary", "involuntary"):
        expect(b["ctx_switches"][k] >= a["ctx_switches"][k], f"ctx_switches.{k} goes down")
    expect(b["cpu"]["user_us"] >= a["cpu"]["user_us"], "cpu.user_us goes down")
print("memory: ok")
PY
finish
