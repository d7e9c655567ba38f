#!/usr/bin/env bash
# CPU cost of wedjat's vitals sampler at the default interval (WEDJAT_SAMPLE_MS=1000), as a
# share of one core. Three idle processes run SECONDS (default 30) side by side:
#   1. `sleep SECONDS` without wedjat
#   2. `sleep SECONDS` watched: the agent thread (named "wedjat") only samples
#   3. a watched process with THREADS (default 100) idle threads: every sample reads each
#      thread's /proc/self/task/TID/schedstat to find the busiest
# and the script reports:
#   - the agent thread's own CPU time (its /proc/PID/task/TID/schedstat, in ns), read at the
#     first sample and at the end: the sampler's steady cost, per second of run time
#   - the whole process's CPU time with wedjat minus without (wait4 rusage): what wedjat adds
#     to an idle program over its life, start-up and exit included
#   - the time one sample takes (the `wedjat.sample_us` field of the sample records)
#   scripts/bench/sampler.sh LIBDIR [SECONDS] [THREADS]
# Target: <= 0.5% of one core.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 LIBDIR [SECONDS] [THREADS]" >&2; exit 2; }
lib=$(cd "$1" && pwd)/libwedjat.so
secs=${2:-30}
threads=${3:-100}
[ -f "$lib" ] || { echo "no $lib" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/wedjat-bench-sampler.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat > "$work/idle_threads.c" <<'C'
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static void *idle(void *a) { (void)a; pause(); return 0; }
int main(int argc, char **argv) {  // idle_threads N SECONDS
    for (int i = 0; i < atoi(argv[1]); i++) { pthread_t t; pthread_create(&t, 0, idle, 0); }
    sleep((unsigned)atoi(argv[2]));
    return 0;
}
C
gcc -O2 -pthread -o "$work/idle_threads" "$work/idle_threads.c"

python3 - "$lib" "$secs" "$threads" "$work" <<'PY'
import glob, json, os, statistics, subprocess, sys, time
lib, secs, nthreads, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
env = {k: v for k, v in os.environ.items() if not k.startswith("WEDJAT_") and k != "LD_PRELOAD"}

def start(name, argv, watched):
    e = dict(env)
    if watched:
        e.update(LD_PRELOAD=lib, WEDJAT_DIR=f"{work}/logs-{name}")
    return subprocess.Popen(argv, env=e)

def agent_tid(pid):
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            if open(f"/proc/{pid}/task/{t}/comm").read().strip() == "wedjat":
                return t
        except OSError:
            pass
    return None

def schedstat_ns(pid, tid):
    return int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])

procs = {
    "plain": start("plain", ["sleep", str(secs)], False),
    "sleep": start("sleep", ["sleep", str(secs)], True),
    "threads": start("threads", [f"{work}/idle_threads", str(nthreads), str(secs)], True),
}
# The first sample comes 1 s after main: read the agent thread just after it (one sample is
# then in both readings' difference... no: the difference covers the samples after it only).
time.sleep(1.5)
first = {}
for name in ("sleep", "threads"):
    pid = procs[name].pid
    tid = agent_tid(pid)
    first[name] = (tid, schedstat_ns(pid, tid), time.monotonic()) if tid else None
# The last reading shortly before the processes end.
time.sleep(max(1, secs - 2.5))
last = {}
for name in ("sleep", "threads"):
    pid, f = procs[name].pid, first[name]
    last[name] = (schedstat_ns(pid, f[0]), time.monotonic()) if f else None
usage = {}
for name, p in procs.items():
    _, status, ru = os.wait4(p.pid, 0)
    usage[name] = ru.ru_utime + ru.ru_stime

def samples(name):
    out = []
    for path in glob.glob(f"{work}/logs-{name}/*.ndjson"):
        for line in open(path):
            r = json.loads(line)
            if r["type"] == "sample":
                out.append(r)
    return out

print(f"# {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())} {os.cpu_count()} CPUs, {os.uname().release}; "
      f"{secs} s runs, WEDJAT_SAMPLE_MS default (1000)")
worst = 0.0
for name, label in (("sleep", "idle `sleep`"), (f"threads", f"idle, {nthreads} threads")):
    f, l = first[name], last[name]
    s = samples(name)
    periodic = [r for r in s if not r["at_exit"]]
    sample_us = [r["wedjat"]["sample_us"] for r in periodic]
    if not f or not l:
        print(f"{label}: no agent thread found"); continue
    ns, dt = l[0] - f[1], l[1] - f[2]
    pct = ns / 1e9 / dt * 100
    worst = max(worst, pct)
    print(f"{label}: agent thread {ns / 1e6:.2f} ms CPU over {dt:.1f} s = {pct:.4f}% of one core; "
          f"{len(periodic)} periodic samples, one takes {statistics.median(sample_us) if sample_us else 0:.0f} us (median), "
          f"max {max(sample_us) if sample_us else 0} us")
added = usage["sleep"] - usage["plain"]
print(f"idle `sleep`, whole process: {usage['plain'] * 1e3:.2f} ms CPU without wedjat, {usage['sleep'] * 1e3:.2f} ms with: "
      f"+{added * 1e3:.2f} ms over {secs} s = {added / secs * 100:.4f}% of one core (start-up and exit included)")
print(f"idle, {nthreads} threads, whole process with wedjat: {usage['threads'] * 1e3:.2f} ms CPU over {secs} s")
worst = max(worst, added / secs * 100)
print(f"sampler cost: {worst:.4f}% of one core at most (target <= 0.5%): {'OK' if worst <= 0.5 else 'OVER TARGET'}")
PY
