"""Strict reader of wedjat NDJSON logs, for the integration tests.

Every *.ndjson file in a directory is loaded; a file is rejected (LogError with file:line)
when a line does not parse as a JSON object, when it does not end with a newline (a half
line), when a record lacks type/ts/pid, or when its first record is not process_start.

Use from a test:
    pylogs DIR <<'EOF'
    logs = load_dir(sys.argv[1])
    curl = one(by_exe(logs, "curl"))
    conns = curl.records("connection")
    expect(len(conns) == 1, f"want 1 connection, got {len(conns)}")
    EOF
or from the shell:  python3 logs.py check DIR [--count N] [--exe NAME]
                    python3 logs.py dump DIR      (one line per record, for debugging)
"""
import json
import os
import sys


class LogError(Exception):
    pass


class CheckFailed(Exception):
    pass


class Log:
    def __init__(self, path, records):
        self.path = path
        self.records_all = records

    @property
    def start(self):
        return self.records_all[0]

    @property
    def end(self):
        """The process_end record, or None (killed processes have none)."""
        ends = self.records("process_end")
        if len(ends) > 1:
            raise LogError(f"{self.path}: {len(ends)} process_end records")
        return ends[0] if ends else None

    @property
    def exe(self):
        return os.path.basename(self.start.get("exe") or "")

    @property
    def pid(self):
        return self.start["pid"]

    def records(self, type_=None, **match):
        out = []
        for r in self.records_all:
            if type_ is not None and r.get("type") != type_:
                continue
            if all(r.get(k) == v for k, v in match.items()):
                out.append(r)
        return out

    def __repr__(self):
        return f"Log({os.path.basename(self.path)}, {len(self.records_all)} records)"


_soft = False
_failures = []


def soft_mode():
    """From now on expect()/expect_eq() failures are collected, not fatal: run_checks reports
    them all at the end. Use it where one bug would otherwise hide the next."""
    global _soft
    _soft = True


def load_file(path):
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise LogError(f"{path}: empty file")
    if not data.endswith(b"\n"):
        nlines = data.count(b"\n") + 1
        raise LogError(f"{path}:{nlines}: last line is not terminated (half a line)")
    records = []
    for lineno, raw in enumerate(data.split(b"\n")[:-1], 1):
        try:
            text = raw.decode("utf-8")
            rec = json.loads(text)
        except (UnicodeDecodeError, ValueError) as e:
            raise LogError(f"{path}:{lineno}: not JSON ({e}): {raw[:200]!r}")
        if not isinstance(rec, dict):
            raise LogError(f"{path}:{lineno}: not a JSON object: {raw[:200]!r}")
        for key in ("type", "ts", "pid"):
            if key not in rec:
                raise LogError(f"{path}:{lineno}: record without {key!r}: {raw[:200]!r}")
        if not isinstance(rec["ts"], int):
            raise LogError(f"{path}:{lineno}: ts is not an integer: {raw[:200]!r}")
        records.append(rec)
    starts = [i for i, r in enumerate(records) if r["type"] == "process_start"]
    if len(starts) > 1:
        raise LogError(f"{path}:{starts[1] + 1}: second process_start")
    if starts != [0]:
        msg = (f"{path}:1: first record is {records[0]['type']!r}, not process_start"
               + (f" (process_start is line {starts[0] + 1})" if starts else " (no process_start at all)"))
        if not (_soft and starts):
            raise LogError(msg)
        # soft mode: note it and read on, with process_start moved to the front
        _failures.append(msg)
        records.insert(0, records.pop(starts[0]))
    ends = [i for i, r in enumerate(records) if r["type"] == "process_end"]
    if ends and ends[-1] != len(records) - 1:
        raise LogError(f"{path}:{ends[-1] + 1}: records after process_end")
    return Log(path, records)


def load_dir(d, recursive=False):
    """All logs in d (sorted by path). Missing directory = no logs."""
    paths = []
    if os.path.isdir(d):
        if recursive:
            for root, _, files in os.walk(d):
                paths += [os.path.join(root, f) for f in files if f.endswith(".ndjson")]
        else:
            paths = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".ndjson")]
    return [load_file(os.path.abspath(p)) for p in sorted(paths)]


def by_exe(logs, name):
    return [l for l in logs if l.exe == name]


def by_path(logs, path):
    for l in logs:
        if l.path == path or l.start.get("log") == path:
            return l
    return None


def records(logs, type_=None, **match):
    out = []
    for l in logs:
        out += l.records(type_, **match)
    return out


def one(items, what="item"):
    if len(items) != 1:
        raise CheckFailed(f"expected exactly one {what}, got {len(items)}: {items!r}")
    return items[0]


def expect(cond, msg):
    if not cond:
        if _soft:
            _failures.append(msg)
        else:
            raise CheckFailed(msg)
    return bool(cond)


def expect_eq(actual, expected, what):
    return expect(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")


def fail(msg):
    raise CheckFailed(msg)


def port_of(addr):
    return int(addr.rsplit(":", 1)[1])


def run_checks(fn):
    """Runs fn; a failed check or bad log prints 'FAIL: ...' and exits 1."""
    try:
        fn()
    except (CheckFailed, LogError) as e:
        _failures.append(str(e))
    if _failures:
        for f in _failures:
            print(f"FAIL: {f}")
        sys.exit(1)


def load_lines(path):
    """Every record of one file, checked line by line only: each line a JSON object with
    type, ts (integer) and pid, the file ending in a newline. No rule about which record
    comes first or last (for files wedjat reopened after they were moved or truncated, and
    for exec_failed images that go on after a process_end). Returns a list of dicts."""
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        nlines = data.count(b"\n") + 1
        raise LogError(f"{path}:{nlines}: last line is not terminated (half a line)")
    out = []
    for lineno, raw in enumerate(data.split(b"\n")[:-1], 1):
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise LogError(f"{path}:{lineno}: not JSON ({e}): {raw[:200]!r}")
        if not isinstance(rec, dict) or any(k not in rec for k in ("type", "ts", "pid")) \
                or not isinstance(rec["ts"], int):
            raise LogError(f"{path}:{lineno}: not a record with type/ts/pid: {raw[:200]!r}")
        out.append(rec)
    return out


def load_dir_lines(d):
    """{path: load_lines(path)} for every *.ndjson file of d (any name: also wedjat's
    `.rN` files); a missing directory gives {}."""
    if not os.path.isdir(d):
        return {}
    return {os.path.join(d, f): load_lines(os.path.join(d, f))
            for f in sorted(os.listdir(d)) if ".ndjson" in f}


def _main(argv):
    if len(argv) < 3 or argv[1] not in ("check", "dump"):
        print(__doc__)
        return 2
    d = argv[2]

    def check():
        logs = load_dir(d)
        opts = argv[3:]
        if "--exe" in opts:
            logs = by_exe(logs, opts[opts.index("--exe") + 1])
        if "--count" in opts:
            expect_eq(len(logs), int(opts[opts.index("--count") + 1]), f"number of logs in {d}")
        if argv[1] == "dump":
            for l in logs:
                for r in l.records_all:
                    print(os.path.basename(l.path), json.dumps(r, sort_keys=True))
        else:
            print(f"ok: {len(logs)} logs, {sum(len(l.records_all) for l in logs)} records")

    run_checks(check)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
