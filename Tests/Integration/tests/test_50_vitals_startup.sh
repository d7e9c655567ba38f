# Vitals, the rest: the startup record (exec -> constructor -> main -> ready, ordered and
# consistent with process_start), the exit sample of short-lived processes, sampling in a
# forked child (no startup record there), WEDJAT_SAMPLE_MS (0 = off, bad values warned),
# frequency and energy either numbers or "unavailable" with the reason this machine gives,
# and unshare(CLONE_NEWUSER) still working although wedjat has a thread.
. "$WJ_LIB/common.sh"

# 1. ready after 300 ms in main; started by a watched shell's exec (exact exec time) and
#    directly (exec time = the kernel's process start, in clock ticks).
wj logs_exec /bin/sh -c "exec '$FIXTURES/vitals_startup' ready 300" || fail "vitals_startup (via sh) failed"
wj logs_direct "$FIXTURES/vitals_startup" ready 300 || fail "vitals_startup failed"
# 2. short-lived: one exit sample, a startup with no ready.
wj logs_true /bin/true || fail "/bin/true failed"
# 3. a forked child living 1.5 s samples on its own.
out=$(wj logs_fork "$FIXTURES/vitals_startup" fork 1500) || fail "vitals_startup fork failed"
# 4. settings
WEDJAT_SAMPLE_MS=0 wj logs_off "$FIXTURES/vitals_startup" ready 1200 || fail "sampling off: failed"
WEDJAT_SAMPLE_MS=50 wj logs_bad "$FIXTURES/vitals_startup" ready 10 || fail "WEDJAT_SAMPLE_MS=50 failed"
WEDJAT_SAMPLE_MS=300 wj logs_300 "$FIXTURES/vitals_startup" ready 1000 || fail "WEDJAT_SAMPLE_MS=300 failed"

hz=$(getconf CLK_TCK)
pylogs "$hz" <<'PY' || soft_fail "startup records"
hz = int(sys.argv[1])
soft_mode()
def startup_of(d, exe="vitals_startup"):
    log = one(by_exe(load_dir(d), exe), f"{exe} log in {d}")
    return log, one(log.records("startup"), f"startup record in {d}")

for d, source in (("logs_exec", "exec"), ("logs_direct", "process_start")):
    log, st = startup_of(d)
    ps = log.start
    print(f"# {d}: {st}")
    expect_eq(st["exec_source"], source, f"{d}: exec_source")
    expect_eq(st["tid"], st["pid"], f"{d}: tid")
    c, m, r = st["constructor_us"], st["main_us"], st["ready_us"]
    expect(0 <= c <= m <= r, f"{d}: constructor {c} <= main {m} <= ready {r}")
    expect_eq(st["ready_call"], "poll", f"{d}: ready_call")
    expect(300_000 <= r - m <= 450_000, f"{d}: main to ready {r - m} us, the fixture sleeps 300 ms")
    expect(m - c <= 20_000, f"{d}: constructor to main {m - c} us")
    # consistent with process_start: its ts is the constructor, main_ts is main
    expect(abs(st["exec_ts"] + c - ps["ts"]) <= 2, f"{d}: exec_ts + constructor_us != process_start.ts")
    expect(abs(st["exec_ts"] + m - ps["main_ts"]) <= 2, f"{d}: exec_ts + main_us != process_start.main_ts")
    expect(abs(st["exec_ts"] + r - st["ts"]) <= 2, f"{d}: startup ts is the ready moment")
    if source == "exec":
        expect_eq(st["exec_resolution_us"], 1, f"{d}: resolution")
        expect(c <= 50_000, f"{d}: exec to constructor {c} us (dynamic loading)")
        sh = one(by_exe(load_dir(d), "dash") + by_exe(load_dir(d), "bash") + by_exe(load_dir(d), "sh"), "the shell's log")
        expect_eq(sh.end["reason"], "exec", f"{d}: the shell's image ended by exec")
        expect(sh.end["ts"] <= st["exec_ts"] <= ps["ts"], f"{d}: exec between the shell's process_end and the new image")
    else:
        expect_eq(st["exec_resolution_us"], 1_000_000 // hz, f"{d}: resolution of the kernel's start time")
        expect(abs(st["exec_ts"] - ps["process_start_ts"]) <= 1, f"{d}: exec_ts is process_start_ts")
        expect(c <= 50_000 + st["exec_resolution_us"], f"{d}: exec to constructor {c} us")

log, st = startup_of("logs_true", "true")
expect(st["ready_us"] is None and st["ready_call"] is None, f"/bin/true is never ready: {st}")
expect(st["constructor_us"] <= st["main_us"], "/bin/true: constructor <= main")
samples = log.records("sample")
expect_eq(len(samples), 1, "/bin/true: one sample, at exit")
if samples:
    s = samples[0]
    expect(s["at_exit"] is True and s["seq"] == 0, "/bin/true: the exit sample")
    expect(0 < s["interval_us"] < 1_000_000, f"/bin/true: interval_us {s['interval_us']}")
    expect(s["memory"]["rss_bytes"] > 0 and s["threads"] >= 1 and s["fds"] >= 0, "/bin/true: memory, threads, fds")
    expect(log.records_all[-2] is s, "/bin/true: the exit sample is just before process_end")
expect_eq(log.end["records"].get("sample"), 1, "process_end counts the sample")
expect_eq(log.end["records"].get("startup"), 1, "process_end counts the startup record")
print("startup: ok")
PY

child=${out#child }
pylogs "$child" <<'PY' || soft_fail "fork child"
soft_mode()
child = int(sys.argv[1])
logs = load_dir("logs_fork")
c = one([l for l in logs if l.pid == child], "child log")
p = one([l for l in logs if l.pid != child], "parent log")
expect_eq(len(c.records("startup")), 0, "a forked child writes no startup record")
expect_eq(len(p.records("startup")), 1, "the parent writes one")
cs = c.records("sample")
periodic = [s for s in cs if not s["at_exit"]]
expect(len(periodic) >= 1, f"the child (1.5 s) has a periodic sample: {len(cs)} samples")
expect(cs and cs[-1]["at_exit"], "and an exit one")
expect_eq([s["seq"] for s in cs], list(range(len(cs))), "the child's seq starts at 0")
if cs:
    expect(cs[0]["interval_start_ts"] >= c.start["ts"] - 1, "the child's first interval starts at the fork")
    expect(cs[0]["cpu"]["user_us"] + cs[0]["cpu"]["system_us"] < 200_000, "the child's CPU counts from zero")
print("fork: ok")
PY

pylogs <<'PY' || soft_fail "settings"
soft_mode()
off = one(load_dir("logs_off"), "log")
expect_eq(off.start["config"]["sample_ms"], 0, "WEDJAT_SAMPLE_MS=0 in config")
expect_eq(len(off.records("sample")), 0, "no samples when sampling is off")
expect_eq(len(off.records("startup")), 1, "the startup record is written anyway")
bad = one(load_dir("logs_bad"), "log")
expect_eq(bad.start["config"]["sample_ms"], 1000, "WEDJAT_SAMPLE_MS=50 falls back to 1000")
expect(any("WEDJAT_SAMPLE_MS=50" in w for w in bad.start["config_warnings"]), f"warning: {bad.start['config_warnings']}")
l300 = one(load_dir("logs_300"), "log")
expect_eq(l300.start["config"]["sample_ms"], 300, "WEDJAT_SAMPLE_MS=300")
per = [s for s in l300.records("sample") if not s["at_exit"]]
expect(len(per) >= 3, f"1 s at 300 ms: {len(per)} periodic samples")
for k, s in enumerate(per):
    due = l300.start["main_ts"] + (k + 1) * 300_000
    expect(due <= s["ts"] <= due + 250_000, f"sample {k} at {s['ts'] - due} us from its due time (300 ms)")
print("settings: ok")
PY

# Frequency and energy: numbers, or "unavailable" with the reason this machine gives.
pylogs <<'PY' || soft_fail "frequency and energy"
import glob
soft_mode()
samples = [s for l in load_dir("logs_300") for s in l.records("sample")]
def unavailable(obj, what):
    return isinstance(obj, dict) and isinstance(obj.get("unavailable"), str) and obj["unavailable"] != ""
for s in samples:
    f, e = s["cpu_freq"], s["energy"]
    if os.path.isdir("/sys/devices/system/cpu/cpu0/cpufreq"):
        cores = f.get("cores")
        expect(isinstance(cores, list) and cores, f"cpufreq exists here, cpu_freq {f}")
        for c in cores or []:
            expect(isinstance(c["cur_khz"], int) and c["cur_khz"] > 0, f"cur_khz {c}")
            if c["min_khz"] and c["max_khz"]:
                expect(c["min_khz"] <= c["max_khz"], f"min <= max {c}")
    else:
        expect(unavailable(f, "cpu_freq") and "cpufreq" in f["unavailable"], f"no cpufreq here: {f}")
    rapl = e["rapl"]
    zone = "/sys/class/powercap/intel-rapl:0/energy_uj"
    if not os.path.isdir("/sys/class/powercap"):
        expect(unavailable(rapl, "rapl") and "/sys/class/powercap" in rapl["unavailable"], f"no powercap here: {rapl}")
    elif not os.path.exists(zone):
        expect(unavailable(rapl, "rapl") and "RAPL" in rapl["unavailable"], f"no RAPL zone here: {rapl}")
    elif not os.access(zone, os.R_OK):
        expect(unavailable(rapl, "rapl") and "permission denied" in rapl["unavailable"], f"RAPL unreadable here: {rapl}")
    elif "unavailable" in rapl:
        expect("no earlier reading" in rapl["unavailable"], f"RAPL readable here: {rapl}")
    else:
        expect(isinstance(rapl["watts"], (int, float)) and rapl["watts"] >= 0 and rapl["energy_j"] >= 0, f"rapl {rapl}")
    bats = [d for d in glob.glob("/sys/class/power_supply/*") if open(d + "/type").read().strip() == "Battery"] \
        if os.path.isdir("/sys/class/power_supply") else []
    b = e["battery"]
    if not bats:
        expect(unavailable(b, "battery") and "power_supply" in b["unavailable"], f"no battery here: {b}")
    else:
        expect(isinstance(b, list) and len(b) == len(bats[:4]), f"batteries {b}")
        for x in b if isinstance(b, list) else []:
            expect(x["capacity_pct"] is None or 0 <= x["capacity_pct"] <= 100, f"capacity {x}")
    sc = s["system_cpu"]
    if "busy_pct" in sc:
        expect(0 <= sc["busy_pct"] <= 100, f"system busy_pct {sc}")
    else:
        expect(unavailable(sc, "system_cpu"), f"system_cpu {sc}")
print(f"# cpu_freq: {samples[-1]['cpu_freq']}; energy: {samples[-1]['energy']}")
print("energy: ok")
PY

# unshare(CLONE_NEWUSER) needs a single-threaded process: the sampler steps aside for it.
plain_out=$(plain "$FIXTURES/vitals_startup" unshare 1200)
watched_out=$(wj logs_unshare "$FIXTURES/vitals_startup" unshare 1200)
[ "$watched_out" = "$plain_out" ] || soft_fail "unshare: '$watched_out' watched, '$plain_out' without wedjat"
note "unshare(CLONE_NEWUSER): $plain_out without wedjat, $watched_out with"
pylogs <<'PY' || soft_fail "sampling after unshare"
log = one(load_dir("logs_unshare"), "log")
per = [s for s in log.records("sample") if not s["at_exit"]]
expect(len(per) >= 2, f"samples before and after the unshare (2.4 s): {len(per)}")
expect(log.end is not None and log.end["reason"] == "exit", "process_end after the unshare")
PY
finish
