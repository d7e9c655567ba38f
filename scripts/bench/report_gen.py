#!/usr/bin/env python3
"""Writes a realistic wedjat log of about SIZE bytes, for scripts/bench/report.sh.

    report_gen.py OUT.ndjson [SIZE_MB] [--hosts N] [--seed S]

One process image (a busy HTTP client, e.g. a crawler or an API gateway): process_start and
startup first, then connections to --hosts hosts (default 200), each with an optional dns
lookup, one to several keep-alive `http` exchanges (statuses mostly 2xx, some 3xx/4xx/5xx,
a few cut short) and its `connection` record (TLS for https hosts, a few refused connects),
a `sample` every 2,000 records and an `http_summary` now and then; process_end last. The
records have the fields and the sizes the library writes (docs/LOG_FORMAT.md). Deterministic
for a given seed.

On stdout at the end: the requests per host as `role host count` lines (http records plus
http_summary counts), which is what the benchmark checks `wedjat report` and jq against.
"""
import argparse
import random
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("size_mb", nargs="?", type=float, default=1024)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    target = int(a.size_mb * 1024 * 1024)
    pid = 4242
    ts = 1763782510000000
    hosts = []
    for i in range(a.hosts):
        https = i % 3 != 0
        port = 443 if https and i % 2 else 8000 + i % 7 if not https else 8443
        name = f"api-{i}.example.com"
        authority = name if (https and port == 443) or (not https and port == 80) else f"{name}:{port}"
        hosts.append({
            "name": name, "authority": authority, "https": https, "port": port,
            "ip": f"10.{i // 250}.{i % 250}.{1 + i % 200}",
            # Per-host latency scale: a few slow hosts make the percentiles interesting.
            "scale": rng.choice([0.3, 0.5, 1, 1, 1, 2, 5, 20]),
            "fail": rng.choice([0, 0, 0, 0.01, 0.05]),
        })
    counts = {}
    out = open(a.out, "w", buffering=1 << 20)
    written = 0
    records = 0
    conn_id = 0
    seq = 0

    def emit(line):
        nonlocal written, records
        out.write(line)
        out.write("\n")
        written += len(line) + 1
        records += 1

    emit('{"type":"process_start","schema":1,"ts":%d,"pid":%d,"tid":%d,"wedjat_version":"0.1.0",'
         '"exe":"/usr/local/bin/gateway","argv":["gateway","--config","/etc/gateway.yaml"],"argv_mode":"redact",'
         '"ppid":1,"parent_log":null,"exec_from":null,"log":"%s","hostname":"box",'
         '"kernel":"Linux 6.1.0-27-amd64 #1 SMP x86_64","arch":"x86_64","cpu_model":"AMD EPYC 7B13","cpus":2,'
         '"mem_total_bytes":25197051904,"process_start_ts":%d,"proc_start_ticks":123456,'
         '"config":{"dir":"/tmp/wedjat-0","argv":"redact","flush_ms":200,"max_connections":65536,"log_max_mb":256,'
         '"http":true,"capture_bytes":8192,"http_records":200,"sample_ms":1000,"redact":["query","userinfo","fragment"]},'
         '"config_warnings":[]}' % (ts, pid, pid, a.out, ts - 2000))
    emit('{"type":"startup","ts":%d,"pid":%d,"tid":%d,"exec_ts":%d,"exec_source":"exec","exec_resolution_us":1,'
         '"constructor_us":1850,"main_us":1870,"ready_us":2900,"ready_call":"connect"}' % (ts + 900, pid, pid, ts - 2000))
    statuses = [200] * 90 + [201, 204, 301, 304, 400, 404, 404, 429, 500, 503]
    paths = ["/v1/items", "/v1/items/42", "/v2/search?REDACTED", "/health", "/v1/users/7/orders", "/static/app.js"]
    while written < target:
        h = hosts[rng.randrange(len(hosts))]
        conn_id += 1
        tid = pid + 1 + conn_id % 8
        scale = h["scale"]
        open_ts = ts
        dns_us = None
        if rng.random() < 0.3:
            dns_us = int(rng.expovariate(1 / (800 * scale))) + 50
            emit('{"type":"dns","ts":%d,"pid":%d,"tid":%d,"api":"getaddrinfo","name":"%s","service":"%d",'
                 '"family":"any","start_ts":%d,"duration_us":%d,"answers":1,"addresses":["%s"],"error":null}'
                 % (ts, pid, tid, h["name"], h["port"], ts - dns_us, dns_us, h["ip"]))
        local = "192.168.1.10:%d" % (32768 + conn_id % 28000)
        peer = "%s:%d" % (h["ip"], h["port"])
        host_json = '"%s"' % h["name"]
        dns_json = str(dns_us) if dns_us is not None else "null"
        if rng.random() < h["fail"]:
            ts += 120
            emit('{"type":"connection","ts":%d,"pid":%d,"tid":%d,"conn_id":%d,"fd":%d,"transport":"tcp",'
                 '"family":"ipv4","role":"client","local":null,"peer":"%s","open_ts":%d,"close_ts":%d,'
                 '"duration_us":120,"connect_us":null,"connect_end_ts":null,"tls":null,"first_byte_out_ts":null,'
                 '"first_byte_in_ts":null,"last_byte_ts":null,"shutdown_ts":null,"bytes_in":0,"bytes_out":0,'
                 '"http_requests":0,"http_none":"no_bytes","tcp_info":null,"host":%s,"dns_us":%s,'
                 '"error":"ECONNREFUSED","error_phase":"connect","open_at_exit":false}'
                 % (ts, pid, tid, conn_id, 5 + conn_id % 50, peer, open_ts, ts, host_json, dns_json))
            continue
        connect_us = int(rng.expovariate(1 / (300 * scale))) + 20
        t = open_ts + connect_us
        connect_end = t
        tls_json = "null"
        if h["https"]:
            hs = int(rng.expovariate(1 / (2000 * scale))) + 300
            tls_json = ('{"library":"openssl","start_ts":%d,"end_ts":%d,"handshake_us":%d,"phase_us":%d,'
                        '"version":"TLSv1.3","alpn":"http/1.1"}' % (t + 10, t + 10 + hs, hs, hs + 10))
            t += hs + 10
        scheme = "https" if h["https"] else "http"
        n = 1 + min(int(rng.expovariate(0.4)), 30)
        bytes_in = bytes_out = 0
        first_out = t + 5
        first_in = None
        for i in range(n):
            req_start = t + 5
            ttfb = int(rng.lognormvariate(0, 0.8) * 4000 * scale) + 100
            body = rng.choice([0, 120, 512, 1024, 2048, 16384, 65536]) if rng.random() < 0.97 else 1048576
            recv = body // 200 + 10
            status = statuses[rng.randrange(len(statuses))]
            err = "null"
            complete = "true"
            status_json = str(status)
            resp_end_json = str(req_start + ttfb + recv)
            dur = ttfb + recv
            if rng.random() < 0.003:
                err, complete, status_json = '"incomplete"', "false", "null"
            req_hdr, resp_hdr = 96 + rng.randrange(200), 180 + rng.randrange(100)
            method = "GET" if rng.random() < 0.8 else "POST"
            req_body = 0 if method == "GET" else rng.choice([64, 256, 4096])
            path = paths[rng.randrange(len(paths))]
            ts = req_start + dur
            first_in = first_in or req_start + ttfb
            emit('{"type":"http","ts":%d,"pid":%d,"tid":%d,"conn_id":%d,"role":"client","scheme":"%s",'
                 '"method":"%s","host":"%s","path":"%s","status":%s,"peer":"%s","request_index":%d,'
                 '"reused":%s,"request_start_ts":%d,"request_end_ts":%d,"response_start_ts":%d,'
                 '"response_end_ts":%s,"ttfb_us":%d,"wait_us":%d,"duration_us":%d,"request_header_bytes":%d,'
                 '"request_body_bytes":%d,"response_header_bytes":%d,"response_body_bytes":%d,'
                 '"headers":{"request.host":"%s","request.user-agent":"gateway/1.4",'
                 '"response.content-type":"application/json","response.content-length":"%d"},'
                 '"complete":%s,"error":%s}'
                 % (ts, pid, tid, conn_id, scheme, method, h["authority"], path, status_json, peer, i,
                    "true" if i else "false", req_start, req_start, req_start + ttfb, resp_end_json, ttfb,
                    ttfb, dur, req_hdr, req_body, resp_hdr, body, h["authority"], body, complete, err))
            key = ("client", h["authority"])
            counts[key] = counts.get(key, 0) + 1
            bytes_out += req_hdr + req_body
            bytes_in += resp_hdr + body
            t = ts
            if records % 2000 < n + 2:
                seq += 1
                emit('{"type":"sample","ts":%d,"pid":%d,"seq":%d,"at_exit":false,"interval_start_ts":%d,'
                     '"interval_us":1000000,"cpu":{"user_pct":%.1f,"system_pct":%.1f,"total_pct":%.1f,'
                     '"user_us":%d,"system_us":%d},"top_threads":[{"tid":%d,"name":"worker","cpu_pct":%.1f}],'
                     '"system_cpu":{"busy_pct":27.5,"user_pct":25.5,"system_pct":2.0,"iowait_pct":0.0,'
                     '"steal_pct":0.0,"interval_us":1000012},"memory":{"rss_bytes":%d,"peak_rss_bytes":%d,'
                     '"virtual_bytes":421315072},"threads":9,"fds":%d,"ctx_switches":{"voluntary":%d,'
                     '"involuntary":%d},"page_faults":{"minor":%d,"major":0},"wedjat":{"thread_cpu_us":%d,"sample_us":96}}'
                     % (ts, pid, seq, ts - 1000000, 40 + seq % 20, 5.0, 45 + seq % 20, seq * 450000, seq * 50000,
                        pid + 1, 30.0 + seq % 10, 200000000 + seq % 100 * 100000, 220000000, 40 + seq % 30,
                        seq * 90, seq * 30, 51641 + seq * 10, seq * 1800))
            if records % 50000 < n + 2 and rng.random() < 0.5:
                # Exchanges past the record budget: the writer's summaries.
                c = rng.randrange(100, 5000)
                p50 = int(4000 * scale)
                emit('{"type":"http_summary","ts":%d,"pid":%d,"tid":0,"role":"client","scheme":"%s",'
                     '"method":"GET","host":"%s","status":200,"count":%d,"errors":0,"request_bytes":%d,'
                     '"response_bytes":%d,"first_ts":%d,"last_ts":%d,'
                     '"duration_us":{"count":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d},'
                     '"ttfb_us":{"count":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d}}'
                     % (ts, pid, scheme, h["authority"], c, c * 150, c * 2048, ts - 10000000, ts, c, p50 + 100,
                        p50 * 3, p50 * 8, p50 * 20, c, p50, p50 * 3, p50 * 7, p50 * 19))
                key = ("client", h["authority"])
                counts[key] = counts.get(key, 0) + c
        ts += 50
        emit('{"type":"connection","ts":%d,"pid":%d,"tid":%d,"conn_id":%d,"fd":%d,"transport":"tcp",'
             '"family":"ipv4","role":"client","local":"%s","peer":"%s","open_ts":%d,"close_ts":%d,'
             '"duration_us":%d,"connect_us":%d,"connect_end_ts":%d,"tls":%s,"first_byte_out_ts":%d,'
             '"first_byte_in_ts":%d,"last_byte_ts":%d,"shutdown_ts":null,"bytes_in":%d,"bytes_out":%d,'
             '"http_requests":%d,"tcp_info":{"rtt_us":%d,"rttvar_us":15,"retransmits":0,"total_retrans":0,"lost":0},'
             '"host":%s,"dns_us":%s,"error":null,"error_phase":null,"open_at_exit":false}'
             % (ts, pid, tid, conn_id, 5 + conn_id % 50, local, peer, open_ts, ts, ts - open_ts, connect_us,
                connect_end, tls_json, first_out, first_in, ts - 50, bytes_in, bytes_out, n,
                int(connect_us * 0.8) + 5, host_json, dns_json))
        ts += rng.randrange(10, 500)
    emit('{"type":"process_end","ts":%d,"pid":%d,"tid":%d,"reason":"exit","exit_status":0,"duration_us":%d,'
         '"records":{},"dropped_events":0,"dropped_records":0,"open_connections":0,"untracked_connections":0,'
         '"capture_dropped":0}' % (ts, pid, pid, ts - 1763782510000000))
    out.close()
    for (role, host), c in sorted(counts.items()):
        print(role, host, c)


if __name__ == "__main__":
    sys.exit(main())
