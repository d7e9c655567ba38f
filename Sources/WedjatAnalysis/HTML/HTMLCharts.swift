import Foundation

// Inline SVG charts: latency CDFs (log time axis) and CPU / memory timelines. Coordinates are
// rounded to 0.1 px so the output is compact and the same on every machine.

/// A plot area inside an SVG of a fixed size, and the axes around it.
struct SVGChart {
    var width = 380.0
    var height = 150.0
    var left = 56.0
    var right = 10.0
    var top = 10.0
    var bottom = 24.0
    private(set) var body: [String] = []

    var plotWidth: Double { width - left - right }
    var plotHeight: Double { height - top - bottom }

    /// `fx`, `fy`: data coordinates already mapped to 0...1 of the plot area.
    func x(_ fx: Double) -> Double { left + Swift.min(1, Swift.max(0, fx)) * plotWidth }
    func y(_ fy: Double) -> Double { top + (1 - Swift.min(1, Swift.max(0, fy))) * plotHeight }

    mutating func add(_ element: String) { body.append(element) }

    mutating func xTick(_ fx: Double, _ label: String) {
        let px = n(x(fx))
        add("<line class=\"grid\" x1=\"\(px)\" x2=\"\(px)\" y1=\"\(n(top))\" y2=\"\(n(top + plotHeight))\"/>")
        add("<text class=\"tick\" x=\"\(px)\" y=\"\(n(height - 8))\" text-anchor=\"middle\">\(HTMLText.escape(label))</text>")
    }

    mutating func yTick(_ fy: Double, _ label: String) {
        let py = n(y(fy))
        add("<line class=\"grid\" x1=\"\(n(left))\" x2=\"\(n(left + plotWidth))\" y1=\"\(py)\" y2=\"\(py)\"/>")
        add("<text class=\"tick\" x=\"\(n(left - 4))\" y=\"\(n(y(fy) + 3.5))\" text-anchor=\"end\">\(HTMLText.escape(label))</text>")
    }

    /// A line through points (fx, fy); nil breaks it (a gap in the data).
    mutating func line(_ points: [(Double, Double)?], cssClass: String) {
        var run: [(String, String)] = []
        func flush() {
            if run.count == 1 {
                // A lone point (a process sampled once) would be an invisible line.
                add("<circle class=\"\(cssClass)\" cx=\"\(run[0].0)\" cy=\"\(run[0].1)\" r=\"2.5\"/>")
            } else if !run.isEmpty {
                add("<polyline class=\"\(cssClass)\" points=\"\(run.map { $0.0 + "," + $0.1 }.joined(separator: " "))\"/>")
            }
            run = []
        }
        for p in points {
            guard let p else { flush(); continue }
            run.append((n(x(p.0)), n(y(p.1))))
        }
        flush()
    }

    /// An invisible column over [fx0, fx1) whose tooltip gives the numbers at that point.
    mutating func hover(_ fx0: Double, _ fx1: Double, _ text: String) {
        let x0 = x(fx0), x1 = x(fx1)
        add("<rect class=\"hit\" x=\"\(n(x0))\" y=\"\(n(top))\" width=\"\(n(Swift.max(1, x1 - x0)))\" height=\"\(n(plotHeight))\">"
            + "<title>\(HTMLText.escape(text))</title></rect>")
    }

    func svg(cssClass: String, label: String) -> String {
        "<svg class=\"\(cssClass)\" width=\"\(n(width))\" height=\"\(n(height))\" viewBox=\"0 0 \(n(width)) \(n(height))\" role=\"img\" aria-label=\"\(HTMLText.escape(label))\">"
            + "<rect class=\"frame\" x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(plotWidth))\" height=\"\(n(plotHeight))\"/>"
            + body.joined() + "</svg>"
    }

    /// One decimal, no trailing `.0`.
    func n(_ v: Double) -> String {
        let s = Format.fixed(v, 1)
        return s.hasSuffix(".0") ? String(s.dropLast(2)) : s
    }
}

enum Axis {
    /// A step of 1, 2 or 5 times a power of ten giving at most about `target` ticks over `span`.
    static func niceStep(_ span: Double, target: Int = 6) -> Double {
        guard span > 0 else { return 1 }
        let raw = span / Double(target)
        let magnitude = pow(10, (log10(raw)).rounded(.down))
        for m in [1.0, 2, 5, 10] where m * magnitude >= raw { return m * magnitude }
        return 10 * magnitude
    }

    /// Short time labels for axes: `0`, `250 us`, `12.5 ms`, `1.5 s`, `2 min`.
    static func time(_ us: Double) -> String {
        func trim(_ v: Double) -> String {
            var s = Format.fixed(v, 2)
            while s.hasSuffix("0") { s.removeLast() }
            if s.hasSuffix(".") { s.removeLast() }
            return s
        }
        let a = abs(us)
        if a == 0 { return "0" }
        if a < 1000 { return trim(us) + " us" }
        if a < 1_000_000 { return trim(us / 1000) + " ms" }
        if a < 120_000_000 { return trim(us / 1_000_000) + " s" }
        if a < 7_200_000_000 { return trim(us / 60_000_000) + " min" }
        return trim(us / 3_600_000_000) + " h"
    }
}

enum HTMLCharts {
    /// Cumulative distributions of TTFB and total time of one host, on a log time axis.
    static func latencyCDF(_ latency: HostLatency, label: String) -> String {
        var chart = SVGChart(width: 380, height: 170, left: 40, right: 20, bottom: 26)
        let hists = [latency.ttfb, latency.total].filter { $0.total > 0 }
        let used = hists.flatMap { h in h.counts.indices.filter { h.counts[$0] > 0 } }
        guard let lo = used.min(), let hi = used.max() else { return "<p class=\"empty\">no latencies recorded</p>" }
        // Whole decades around the data, at least one.
        let per = LatencyHistogram.bucketsPerDecade
        let d0 = lo / per, d1 = Swift.max(d0 + 1, (hi + 1 + per - 1) / per)
        let span = Double(d1 - d0)
        func fx(_ edgeIndex: Double) -> Double { (edgeIndex / Double(per) - Double(d0)) / span }
        for d in d0 ... d1 { chart.xTick(Double(d - d0) / span, Axis.time(pow(10, Double(d)))) }
        for p in [0.0, 0.25, 0.5, 0.75, 1.0] { chart.yTick(p, Format.fixed(p * 100, 0) + "%") }
        // Total first: where the two coincide the dashed TTFB line stays visible on top.
        for (h, cls) in [(latency.total, "cdf total"), (latency.ttfb, "cdf ttfb")] where h.total > 0 {
            // A step curve: flat until a bucket's upper edge, then up by its share.
            var points: [(Double, Double)?] = [(fx(Double(lo)), 0)]
            var cumulative: Int64 = 0
            for i in lo ... hi where h.counts[i] > 0 {
                points.append((fx(Double(i + 1)), Double(cumulative) / Double(h.total)))
                cumulative += h.counts[i]
                points.append((fx(Double(i + 1)), Double(cumulative) / Double(h.total)))
            }
            points.append((1, 1))
            chart.line(points, cssClass: cls)
        }
        // Tooltips: the percentiles read off the histograms, per decade column.
        for d in d0 ..< d1 {
            var lines = ["\(Axis.time(pow(10, Double(d)))) – \(Axis.time(pow(10, Double(d + 1))))"]
            for (h, name) in [(latency.ttfb, "TTFB"), (latency.total, "total")] where h.total > 0 {
                let below = h.counts[0 ..< Swift.min(h.counts.count, (d + 1) * per)].reduce(0, +)
                lines.append("\(name): \(Format.fixed(Double(below) / Double(h.total) * 100, 1))% within \(Axis.time(pow(10, Double(d + 1))))")
            }
            chart.hover(Double(d - d0) / span, Double(d + 1 - d0) / span, lines.joined(separator: "\n"))
        }
        return chart.svg(cssClass: "chart cdf-chart", label: label)
    }

    struct TimelinePoint {
        var ts: Int64
        var value: Double?
    }

    /// A line over the process's life; `top` is the least upper end of the y axis.
    static func timeline(_ points: [TimelinePoint], startTs: Int64, endTs: Int64, top: Double,
                         cssClass: String, label: String, format: (Double) -> String) -> String {
        var chart = SVGChart(width: 380, height: 130, left: 64, right: 20, bottom: 24)
        let span = Double(Swift.max(1, endTs - startTs))
        let step = Axis.niceStep(span, target: 5)
        var t = 0.0
        while t <= span * 1.0001 {
            chart.xTick(t / span, Axis.time(t))
            t += step
        }
        let maxValue = Swift.max(top, points.compactMap(\.value).max() ?? 0)
        let yStep = Axis.niceStep(maxValue, target: 3)
        let yTop = Swift.max(yStep, (maxValue / yStep).rounded(.up) * yStep)
        var v = 0.0
        while v <= yTop * 1.0001 {
            chart.yTick(v / yTop, format(v))
            v += yStep
        }
        func fx(_ ts: Int64) -> Double { Double(ts - startTs) / span }
        chart.line(points.map { p in p.value.map { (fx(p.ts), $0 / yTop) } }, cssClass: "series " + cssClass)
        for (i, p) in points.enumerated() {
            let x0 = i == 0 ? fx(p.ts) : (fx(points[i - 1].ts) + fx(p.ts)) / 2
            let x1 = i == points.count - 1 ? fx(p.ts) + 0.004 : (fx(p.ts) + fx(points[i + 1].ts)) / 2
            chart.hover(x0, x1, "+\(Format.duration(p.ts - startTs)): " + (p.value.map(format) ?? "no value"))
        }
        return chart.svg(cssClass: "chart timeline " + cssClass, label: label)
    }
}
