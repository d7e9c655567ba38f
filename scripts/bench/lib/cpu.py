"""CPU accounting for the server benchmarks (nginx.sh, redis.sh).

  cpu.py quiet SECS   wait (at most SECS) until one second passes with the machine < 15% of
                      a CPU busy; prints the seconds waited
  cpu.py snap PID     "BUSY U S AGENT_NS MONOTONIC": the machine's busy time (user, nice,
                      system, irq, softirq: a task's utime+stime includes the softirq work
                      done while it ran) and utime and stime summed over PID and its
                      descendants, in clock ticks; the CPU time of wedjat's own threads
                      (named "wedjat") in ns, from schedstat; time.monotonic()
  cpu.py logs DIR     "RECORDS DROPS UNENDED" of a wedjat log directory: connection records,
                      everything process_end says was lost (events, records, captured
                      bytes, untracked connections), logs without process_end
"""
import json, os, sys, time


def children(p):
    out = []
    try:
        for t in os.listdir(f"/proc/{p}/task"):
            try:
                out += [int(x) for x in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def times(p):
    try:
        s = open(f"/proc/{p}/stat").read()
        f = s[s.rindex(")") + 2:].split()
        return int(f[11]), int(f[12])
    except (OSError, ValueError):
        return 0, 0


def busy():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:8]]
    return f[0] + f[1] + f[2] + f[5] + f[6]


def agent_ns(p):
    total = 0
    try:
        for t in os.listdir(f"/proc/{p}/task"):
            if open(f"/proc/{p}/task/{t}/comm").read().strip() == "wedjat":
                total += int(open(f"/proc/{p}/task/{t}/schedstat").read().split()[0])
    except (OSError, ValueError):
        pass
    return total


def quiet(limit):
    deadline, waited = time.monotonic() + limit, 0
    while True:
        b0, t0 = busy(), time.monotonic()
        time.sleep(1)
        if (busy() - b0) / (time.monotonic() - t0) < 15 or time.monotonic() > deadline:
            return waited
        waited += 1


def snap(pid):
    tree, i = [pid], 0
    while i < len(tree):
        tree += [c for c in children(tree[i]) if c not in tree]
        i += 1
    u = sum(times(p)[0] for p in tree)
    s = sum(times(p)[1] for p in tree)
    return busy(), u, s, sum(agent_ns(p) for p in tree), time.monotonic()


def logs(d):
    records = drops = ends = files = 0
    for name in os.listdir(d):
        files += 1
        for line in open(os.path.join(d, name)):
            r = json.loads(line)
            if r["type"] == "connection":
                records += 1
            elif r["type"] == "process_end":
                ends += 1
                drops += sum(r.get(k, 0) for k in
                             ("dropped_events", "dropped_records", "capture_dropped", "untracked_connections"))
    return records, drops, files - ends


if __name__ == "__main__":
    if sys.argv[1] == "quiet":
        print(quiet(float(sys.argv[2])))
    elif sys.argv[1] == "snap":
        print(*snap(int(sys.argv[2])))
    else:
        print(*logs(sys.argv[2]))
