"""Checks on the STALLS part of `wedjat report --format json` (docs/REPORT_JSON.md, `stalls`),
for the integration tests: what a user reads, symbolized, rather than the raw records.

In a test (the CLI path is a shell variable only, so pass it):
    "$WEDJAT_CLI" report --format json logs > report.json || fail "report"
    pylogs <<'PY'
    from stalls import *
    rep = load_report("report.json")
    spin = one(find_stalls(rep, kind="loop", function="busy_spin_in_handler"))
    expect_stall(spin, min_ms=360, max_ms=440, on_cpu=True, file="stall_server.c")
    expect_no_symbol_warnings(rep, module="stall_server")
    PY
"""
import json
import os

from logs import expect, expect_eq, fail


def load_report(path):
    with open(path) as f:
        return json.load(f)


def section(rep):
    """The report's `stalls` object; absent means no log had stall detection on."""
    s = rep.get("stalls")
    if s is None:
        fail("the report has no stalls section (no log with config.stall_ms > 0, and no stall)")
    return s


def functions(stall):
    """The first sample's frames, innermost first: function names, else `module+0xoff` text."""
    return [f.get("function") or f["text"] for f in stall["stack"]]


def find_stalls(rep, kind=None, call=None, function=None, thread=None):
    """Kept stalls (longest first) matching all that is given; `function`: a substring of one
    frame's function name in the first sample."""
    out = []
    for s in section(rep)["stalls"]:
        if kind is not None and s["kind"] != kind:
            continue
        if call is not None and s.get("call") != call:
            continue
        if thread is not None and s.get("thread") != thread:
            continue
        if function is not None and not any(function in (f.get("function") or "") for f in s["stack"]):
            continue
        out.append(s)
    return out


def expect_stall(s, min_ms=None, max_ms=None, on_cpu=None, file=None, peer=None, host=None, result=None):
    """on_cpu: True for a thread that computed (at least half the stall on CPU), False for one
    that waited (under a tenth); file: the base name of a frame's source file."""
    what = f"stall {s['kind']} {s.get('call') or s.get('after')} of {s['duration_us']} us ({functions(s)[:4]})"
    if min_ms is not None:
        expect(s["duration_us"] >= min_ms * 1000, f"{what}: shorter than {min_ms} ms")
    if max_ms is not None:
        expect(s["duration_us"] <= max_ms * 1000, f"{what}: longer than {max_ms} ms")
    if on_cpu is not None:
        pct = s.get("on_cpu_pct")
        expect(pct is not None, f"{what}: no on_cpu_pct")
        if pct is not None:
            expect(pct >= 50 if on_cpu else pct < 10, f"{what}: {pct}% on CPU")
    if file is not None:
        files = [os.path.basename(f["file"]) for f in s["stack"] if f.get("file")]
        expect(file in files, f"{what}: no frame in {file} (files: {files})")
    for key, want in (("peer", peer), ("host", host), ("result", result)):
        if want is not None:
            expect_eq(s.get(key), want, f"{what}: {key}")


def expect_no_symbol_warnings(rep, module=None):
    """No symbolization problem at all, or none for the module whose path ends with `module`."""
    warnings = [w for w in section(rep)["symbol_warnings"]
                if module is None or (w.get("module") or "").endswith("/" + module)]
    expect(not warnings, f"symbol warnings: {[w['text'] for w in warnings]}")
