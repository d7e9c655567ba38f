#!/usr/bin/env python3
"""Exclusive instructions per unit, by function, from callgrind files written with
--separate-threads=yes --dump-instr=yes (agent_profile.sh).

valgrind 3.19 names no function of libwedjat-agent.so: the agent is loaded from a path valgrind
resolves wrongly and is stripped. Its load address is where `ensure_agent_library` calls
`wedjat_agent_init`; every instruction in the agent's range is named from `nm` of the unstripped
agent (whose GNU build id the caller checked), demangled by swift-demangle. Other code keeps
valgrind's names. A call's inclusive cost lines are skipped: what is left is exclusive.

  callgrind_symbols.py UNITS AGENT_UNSTRIPPED INIT_OFFSET TOP FILE...
Prints, for each file (thread): its total per unit, then its TOP functions per unit; for the
thread that is not the agent's, the functions of libwedjat.so and the agent only.
"""
import bisect
import re
import subprocess
import sys

units, agent, init_offset, top = float(sys.argv[1]), sys.argv[2], int(sys.argv[3], 16), int(sys.argv[4])
files = sys.argv[5:]

syms = []
for line in subprocess.run(["nm", "--defined-only", agent], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwW":
        syms.append((int(parts[0], 16), parts[2]))
syms.sort()
addrs = [a for a, _ in syms]
text = [l for l in subprocess.run(["readelf", "-SW", agent], capture_output=True, text=True).stdout.splitlines() if " .text " in l]
text_end = int(text[0].split()[text[0].split().index(".text") + 2], 16) + int(text[0].split()[text[0].split().index(".text") + 4], 16) if text else 1 << 40

name_re = re.compile(r"^(c?fn|ob|c?ob|fl|fi|fe|cfi|cfl)=\((\d+)\)(?: (.*))?$")
pos_re = re.compile(r"^(0x[0-9a-f]+|\+\d+|-\d+|\*)\s+\S+\s+(\d+)")


def agent_base(lines):
    """The agent's load address: the call from ensure_agent_library to wedjat_agent_init."""
    names, fn = {}, None
    for l in lines:
        m = name_re.match(l)
        if not m:
            continue
        kind, ident, name = m.groups()
        key = ("fn" if kind.endswith("fn") else kind, ident)
        if name:
            names[key] = name
        if kind == "fn":
            fn = names.get(key, "")
        elif kind == "cfn" and fn.startswith("ensure_agent_library") and names.get(key, "").startswith("0x"):
            return int(names[key].split("'")[0], 16) - init_offset
    return None


def profile(path, base):
    lines = open(path).read().splitlines()
    names, cost, fn, ob, pos, after_call, total = {}, {}, "?", "", 0, False, 0
    for l in lines:
        m = name_re.match(l)
        if m:
            kind, ident, name = m.groups()
            family = "fn" if kind.endswith("fn") else ("ob" if kind.endswith("ob") else kind)
            if name:
                names[(family, ident)] = name
            if kind == "fn":
                fn = names.get(("fn", ident), "?")
            elif kind == "ob":
                ob = names.get(("ob", ident), "")
            continue
        if l.startswith("calls="):
            after_call = True
            continue
        p = pos_re.match(l)
        if not p:
            continue
        t = p.group(1)
        if t.startswith("0x"):
            pos = int(t, 16)
        elif t[0] == "+":
            pos += int(t[1:])
        elif t[0] == "-":
            pos -= int(t[1:])
        if after_call:
            after_call = False
            continue
        v = int(p.group(2))
        total += v
        if base is not None and 0 <= pos - base < text_end:
            i = bisect.bisect_right(addrs, pos - base) - 1
            key = ("agent", syms[i][1] if i >= 0 else "?")
        else:
            key = (ob.rsplit("/", 1)[-1], fn)
        cost[key] = cost.get(key, 0) + v
    return total, cost


def demangle(names):
    out = subprocess.run(["swift-demangle", "--simplified", "--compact"], input="\n".join(names), capture_output=True, text=True)
    got = out.stdout.split("\n") if out.returncode == 0 else list(names)
    return [g if g else n for g, n in zip(got, names)]


bases = {}
for f in files:
    bases[f] = agent_base(open(f).read().splitlines())
base = next((b for b in bases.values() if b is not None), None)
if base is None:
    sys.exit("no call from ensure_agent_library to the agent found: was the agent loaded?")
for f in files:
    total, cost = profile(f, base)
    is_agent = bases[f] is not None
    rows = sorted(cost.items(), key=lambda kv: -kv[1])
    if not is_agent:
        rows = [r for r in rows if r[0][0] in ("agent", "libwedjat.so")]
    shown = rows[:top]
    ours = sum(v for (o, _), v in cost.items() if o in ("agent", "libwedjat.so"))
    label = "agent thread" if is_agent else "app thread"
    print(f"{f.rsplit('/', 1)[-1]} ({label}): {total / units:.0f} instructions per unit, wedjat's own code {ours / units:.0f}")
    for ((o, n), v), d in zip(shown, demangle([n for (_, n), _ in shown])):
        print(f"  {v / units:8.1f}  {d[:110]}  [{o}]")
