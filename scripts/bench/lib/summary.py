"""The closing table and ratios of a server benchmark (nginx.sh, redis.sh).

  summary.py RESULTS TARGET MAX_FOREIGN SERVER UNIT METRIC...

RESULTS has a line a run: "MODE N ATTEMPT CPU_US FOREIGN RECORDS DROPS UNENDED AGENT_US"
followed by one req/s value per METRIC (nginx: one, unnamed; redis: SET and GET). MODE is
without, with or strace; RECORDS, DROPS, UNENDED and AGENT_US are "-" but with wedjat.
Exit status 1 when a metric's median req/s with wedjat / without is below TARGET.
"""
import statistics, sys

path, target, max_foreign, server, unit = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
metrics = sys.argv[6:]
rows = [l.split() for l in open(path)]
MODE, N, ATTEMPT, CPU, FOREIGN, RECORDS, DROPS, UNENDED, AGENT, FIRST_METRIC = range(10)
modes = [m for m in ("without", "with", "strace") if any(r[MODE] == m for r in rows)]
names = {"without": "without", "with": "with wedjat", "strace": "strace -f"}
by = {(r[MODE], r[N]): r for r in rows}
rounds = sorted({r[N] for r in rows}, key=int)


def median(mode, column):
    return statistics.median(float(r[column]) for r in rows if r[MODE] == mode)


def disturbed(r):
    return r[ATTEMPT] == "3" and float(r[FOREIGN]) > max_foreign


def label(i):
    return f"{server} {metrics[i]} req/s".replace("  ", " ")


columns = [(FIRST_METRIC + i, f"{metrics[i]} {names[m]} (req/s)".strip(), m) for i in range(len(metrics)) for m in modes]
columns += [(CPU, f"{names[m]} (CPU us/{unit})", m) for m in modes]
print()
print("| run | " + " | ".join(title for _, title, _ in columns) + " |")
print("|---" * (1 + len(columns)) + "|")
for n in rounds:
    cells = []
    for column, _, m in columns:
        r = by.get((m, n))
        if r is None:
            cells.append("-")
        elif column == CPU:
            cells.append(f"{float(r[CPU]):.2f}")
        else:
            cells.append(f"{float(r[column]):.0f}" + ("*" if disturbed(r) else ""))
    print(f"| {n} | " + " | ".join(cells) + " |")
print("| median | " + " | ".join(f"{median(m, c):.2f}" if c == CPU else f"{median(m, c):.0f}" for c, _, m in columns) + " |")
print()

ok = True
for i in range(len(metrics)):
    column = FIRST_METRIC + i
    ratio = median("with", column) / median("without", column)
    ok = ok and ratio >= target
    line = f"{label(i)} with/without: {ratio:.3f} (target >= {target}): {'OK' if ratio >= target else 'BELOW TARGET'}"
    if "strace" in modes:
        line += f"; strace -f/without: {median('strace', column) / median('without', column):.3f}"
    print(line)
    # The same per round (the two runs of a round are back to back): how far the noise reaches.
    paired = sorted(float(by[("with", n)][column]) / float(by[("without", n)][column])
                    for n in rounds if ("with", n) in by and ("without", n) in by)
    print("  per round: " + ", ".join(f"{x:.3f}" for x in paired) + f" (median {statistics.median(paired):.3f})")
cpu = {m: median(m, CPU) for m in modes}
print(f"{server} CPU per {unit} with/without: {cpu['with'] / cpu['without']:.3f}"
      + (f"; strace -f/without: {cpu['strace'] / cpu['without']:.2f}x" if "strace" in cpu else "")
      + f"; of it wedjat's thread: {median('with', AGENT):.3f} us per {unit} (median)")
with_rows = [r for r in rows if r[MODE] == "with"]
records = [int(r[RECORDS]) for r in with_rows]
print(f"wedjat logs: {min(records)}..{max(records)} connection records per run; lost (events, records, captured bytes,"
      f" untracked connections) in all runs: {sum(int(r[DROPS]) for r in with_rows)};"
      f" logs without process_end: {sum(int(r[UNENDED]) for r in with_rows)}")
still = [f"{r[MODE]} {r[N]}" for r in rows if disturbed(r)]
print(f"runs repeated because other programs used more than {max_foreign:.0f}% of a CPU meanwhile:"
      f" {sum(int(r[ATTEMPT]) - 1 for r in rows)}" + (f"; still disturbed after 3 attempts: {', '.join(still)}" if still else ""))
sys.exit(0 if ok else 1)
