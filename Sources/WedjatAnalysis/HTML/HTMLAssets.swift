/// The HTML report's stylesheet and script, inlined into every page (nothing is fetched).
enum HTMLAssets {
    static let css = """
    :root { --dns: #009688; --connect: #ff9800; --tls: #9c27b0; --send: #78909c; --wait: #00a846;
            --receive: #2196f3; --cut: #e53935; --line: #d8dce3; --muted: #5b6475; color-scheme: light; }
    * { box-sizing: border-box; }
    [hidden] { display: none !important; }
    body { margin: 0; padding: 16px 24px 48px; font: 14px/1.4 system-ui, "Segoe UI", "DejaVu Sans", sans-serif;
           color: #1d2330; background: #f6f7f9; }
    h1 { font-size: 20px; margin: 0 0 10px; }
    h2 { font-size: 17px; margin: 28px 0 6px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
    h3 { font-size: 13px; margin: 0 0 4px; font-weight: 600; overflow-wrap: anywhere; }
    h3.inline { display: inline; }
    details > summary { cursor: pointer; margin: 8px 0 4px; }
    code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; background: #eceff3; padding: 0 3px; border-radius: 3px; }
    .summary { display: flex; flex-wrap: wrap; gap: 10px; margin: 0; }
    .stat { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 130px; }
    .stat dt { font-size: 12px; color: var(--muted); }
    .stat dd { margin: 0; font-size: 22px; font-weight: 600; }
    .stat dd.sub { font-size: 12px; font-weight: normal; color: var(--muted); }
    .stat.bad dd:not(.sub) { color: #c62828; }
    .note { color: var(--muted); font-size: 13px; margin: 4px 0 8px; max-width: 80em; }
    .empty { color: var(--muted); font-style: italic; }
    .badtext { color: #c62828; }
    .legend { display: flex; flex-wrap: wrap; gap: 14px; font-size: 12px; margin: 4px 0; align-items: center; }
    .legend .ph { position: static; display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: -1px; }
    .legend .hint { color: var(--muted); }
    .ln { display: inline-block; width: 18px; height: 3px; margin-right: 4px; vertical-align: 3px; }
    .ln.ttfb { background: repeating-linear-gradient(to right, var(--wait) 0 5px, transparent 5px 8px); }
    .ln.total { background: var(--receive); }
    .tools { margin: 6px 0; }
    .tools input { font: inherit; font-size: 13px; padding: 3px 6px; width: 26em; }
    #wf-count { color: var(--muted); font-size: 12px; margin-left: 8px; }

    .wf { background: #fff; border: 1px solid var(--line); border-radius: 6px; margin-bottom: 12px;
          font: 12px/1.25 ui-monospace, "DejaVu Sans Mono", monospace; }
    .wf-head, .wf-row { display: grid; grid-template-columns: minmax(18em, 34%) 1fr 7em; align-items: center; }
    .wf-head { position: sticky; top: 0; z-index: 1; height: 22px; background: #eef1f5; border-bottom: 1px solid var(--line); }
    .wf-head .wf-label { color: var(--muted); font-size: 11px; }
    .wf-axis { position: relative; height: 100%; }
    .wf-axis span { position: absolute; top: 4px; transform: translateX(-50%); color: var(--muted); font-size: 11px; white-space: nowrap; }
    .wf-axis span:first-child { transform: none; }
    .wf-proc { padding: 4px 8px; background: #f3f5f8; border-top: 1px solid #e3e6eb; font: 600 12px system-ui, sans-serif; }
    .pid { color: var(--muted); font-weight: normal; }
    .wf-row { height: 20px; border-top: 1px solid #f0f2f5; }
    .wf-row:hover { background: #e8f0fe; }
    .wf-row.bad .wf-label { color: #c62828; }
    .wf-label { padding: 0 8px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
    .wf-time { padding-right: 8px; text-align: right; color: #37404f; }
    .wf-track { position: relative; height: 100%;
                background: repeating-linear-gradient(to right, #e6e9ee 0 1px, transparent 1px var(--tick)); }
    .ph { position: absolute; top: 5px; height: 10px; min-width: 2px; border-radius: 1px; }
    .ph.dns { background: var(--dns); }
    .ph.connect { background: var(--connect); }
    .ph.tls { background: var(--tls); }
    .ph.send { background: var(--send); }
    .ph.wait { background: var(--wait); }
    .ph.receive { background: var(--receive); }
    .ph.cut { background: repeating-linear-gradient(45deg, var(--cut) 0 3px, #f6b4b4 3px 6px); }
    .st { display: inline-block; min-width: 3.4em; font-weight: 600; }
    .s2 { color: #2e7d32; } .s3 { color: #1565c0; } .s4 { color: #ef6c00; } .s5, .s0 { color: #c62828; } .s1 { color: #6a1b9a; }
    .role { color: #8a93a3; margin-right: 5px; }
    .err { color: #c62828; }
    .h2 { color: #5e35b1; font-size: 0.85em; margin-right: 5px; }

    .cards { display: flex; flex-wrap: wrap; gap: 12px; }
    .card { width: 406px; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; }
    .facts { font-size: 12px; color: #37404f; margin: 0 0 6px; }
    .chart-title { font-size: 11px; color: var(--muted); margin-top: 4px; }
    svg.chart { display: block; font: 10px system-ui, "DejaVu Sans", sans-serif; }
    svg .frame { fill: #fff; stroke: #c9ced6; }
    svg .grid { stroke: #eceef2; }
    svg .tick { fill: var(--muted); }
    svg polyline { fill: none; stroke-width: 1.6; stroke-linejoin: round; }
    svg .cdf.ttfb { stroke: var(--wait); stroke-dasharray: 5 3; }
    svg .cdf.total { stroke: var(--receive); }
    svg .series.cpu { stroke: #e8590c; }
    svg .series.rss { stroke: #6741d9; }
    svg circle.series { stroke: none; }
    svg circle.series.cpu { fill: #e8590c; }
    svg circle.series.rss { fill: #6741d9; }
    svg .hit { fill: transparent; }
    svg .hit:hover { fill: rgba(0, 0, 0, 0.06); }

    .fg { position: relative; background: #fff; border: 1px solid var(--line); border-radius: 6px; overflow: hidden;
          font: 11px/17px ui-monospace, "DejaVu Sans Mono", monospace; }
    .fg-f { position: absolute; height: 17px; padding: 0 3px; color: #222; white-space: nowrap; overflow: hidden;
            text-overflow: ellipsis; border-right: 1px solid #fff; cursor: pointer; }
    .fg-f:hover { outline: 1px solid #333; z-index: 1; }
    .warnings { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; padding-left: 20px; }
    table.plain { border-collapse: collapse; background: #fff; border: 1px solid var(--line); font-size: 12px; margin: 6px 0; }
    table.plain th, table.plain td { padding: 2px 8px; text-align: left; border-bottom: 1px solid #eef0f3; }
    table.plain td:nth-child(n+2) { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
    table.plain tr.bad td:first-child { color: #c62828; }
    #coverage .card { width: auto; max-width: 820px; }
    .wf-axis { cursor: col-resize; user-select: none; }
    .wf-sel { position: absolute; top: 0; bottom: 0; background: rgba(33, 150, 243, 0.2); pointer-events: none; }

    """

    /// Progressive: the page reads the same without it. It only reads the DOM (no data is
    /// embedded in it) and marks `body[data-js]` "ready" when it has run.
    static let script = """
    "use strict";
    (() => {
      const rows = [...document.querySelectorAll(".wf-row")];
      const count = document.getElementById("wf-count");
      const showCount = (visible) => {
        if (count) count.textContent = `${visible} of ${rows.length} rows shown`;
      };
      showCount(rows.length);

      // Filter the waterfall: every word must match. `500` or `5xx` is a status (not a size or
      // a path that happens to hold the digits), `-500` leaves it out; other words match the
      // request (method, URL), program, pid or error.
      const filter = document.getElementById("wf-filter");
      const matches = (r, words) => words.every((w) => {
        const not = w.startsWith("-") && w.length > 1;
        const t = not ? w.slice(1) : w;
        const st = r.dataset.status;
        let hit;
        if (/^[1-5][0-9][0-9]$/.test(t)) hit = st === t;
        else if (/^[1-5]xx$/.test(t)) hit = st[0] === t[0] && st.length === 3;
        else hit = r.dataset.q.includes(t);
        return not ? !hit : hit;
      });
      const regroup = () => {
        for (const head of document.querySelectorAll(".wf-proc")) {
          let any = false;
          for (let n = head.nextElementSibling; n && n.classList.contains("wf-row"); n = n.nextElementSibling) {
            if (!n.hidden) { any = true; break; }
          }
          head.hidden = !any || sorted;
        }
      };
      if (filter) {
        filter.addEventListener("input", () => {
          const words = filter.value.trim().toLowerCase().split(/\\s+/).filter((w) => w);
          let visible = 0;
          for (const r of rows) {
            const hit = matches(r, words);
            r.hidden = !hit;
            if (hit) visible++;
          }
          regroup();
          showCount(visible);
        });
      }

      // Sort: by start keeps the process groups; the others list all rows in one order.
      const wf = document.getElementById("wf-all");
      const original = wf ? [...wf.children] : [];
      let sorted = false;
      const sorter = document.getElementById("wf-sort");
      if (sorter && wf) {
        sorter.addEventListener("change", () => {
          const key = sorter.value;
          sorted = key !== "start";
          let order = original;
          if (sorted) {
            const head = original[0];
            const by = { total: (r) => -r.dataset.total, ttfb: (r) => -r.dataset.ttfb, status: (r) => -r.dataset.status };
            order = [head, ...rows.slice().sort((a, b) => by[key](a) - by[key](b)), ...original.filter((n) => n.classList.contains("wf-proc"))];
          }
          for (const n of order) wf.appendChild(n);
          regroup();
        });
      }

      // Zoom: drag across the time axis to show that range; double-click or "zoom out" for all.
      if (wf) {
        const span = +wf.dataset.span;
        const axis = wf.querySelector(".wf-axis");
        const bars = [...wf.querySelectorAll(".ph")];
        const nice = (x) => { const m = Math.pow(10, Math.floor(Math.log10(x))); for (const k of [1, 2, 5, 10]) if (k * m >= x) return k * m; return 10 * m; };
        const label = (us) => us === 0 ? "0" : us < 1e3 ? `${+us.toFixed(2)} us` : us < 1e6 ? `${+(us / 1e3).toFixed(2)} ms` : `${+(us / 1e6).toFixed(2)} s`;
        const view = (a, b) => {
          const w = Math.max(1, b - a);
          for (const i of bars) {
            const x0 = Math.max(a, +i.dataset.a), x1 = Math.min(b, +i.dataset.b);
            i.hidden = x1 < x0 || (x1 === x0 && (+i.dataset.b < a || +i.dataset.a > b));
            i.style.left = `${((x0 - a) / w) * 100}%`;
            i.style.width = `${(Math.max(0, x1 - x0) / w) * 100}%`;
          }
          const step = nice(w / 8);
          axis.replaceChildren();
          for (let t = Math.ceil(a / step) * step; t <= b; t += step) {
            const tick = document.createElement("span");
            tick.style.left = `${((t - a) / w) * 100}%`;
            tick.textContent = label(t - 0);
            axis.appendChild(tick);
          }
          wf.style.setProperty("--tick", `${(step / w) * 100}%`);
        };
        let from = null;
        const at = (e) => { const r = axis.getBoundingClientRect(); return Math.min(1, Math.max(0, (e.clientX - r.left) / r.width)); };
        let current = [0, span];
        axis.addEventListener("mousedown", (e) => { from = at(e); e.preventDefault(); });
        window.addEventListener("mouseup", (e) => {
          if (from === null) return;
          const to = at(e), lo = Math.min(from, to), hi = Math.max(from, to);
          from = null;
          if (hi - lo < 0.005) return;
          const w = current[1] - current[0];
          current = [current[0] + lo * w, current[0] + hi * w];
          view(current[0], current[1]);
        });
        const reset = () => { current = [0, span]; view(0, span); };
        axis.addEventListener("dblclick", reset);
        const button = document.getElementById("wf-reset");
        if (button) button.addEventListener("click", reset);
      }

      // Flame graph zoom: the clicked frame fills the width, its ancestors stay full width,
      // everything outside it is hidden. Clicking the root restores the whole graph.
      const frames = [...document.querySelectorAll(".fg-f")].map((el) => ({
        el, d: +el.dataset.d, x: +el.dataset.x, w: +el.dataset.w,
      }));
      const eps = 1e-9;
      const zoom = (z) => {
        for (const f of frames) {
          let left, width;
          if (f.d < z.d) {
            const ancestor = f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps;
            if (ancestor) { left = 0; width = 1; }
          } else if (f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps) {
            left = (f.x - z.x) / z.w; width = f.w / z.w;
          }
          f.el.hidden = left === undefined;
          if (left !== undefined) {
            f.el.style.left = `${left * 100}%`;
            f.el.style.width = `${width * 100}%`;
          }
        }
      };
      for (const f of frames) f.el.addEventListener("click", () => zoom(f));

      document.body.dataset.js = "ready";
    })();

    """
}
