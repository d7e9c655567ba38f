/// Folded stacks (flamegraph.pl's format: `outer;...;inner weight` a line) drawn as a flame
/// graph of positioned elements: the root at the bottom, each frame as wide as its share of
/// the total weight, children in name order. The weights are microseconds of stall time
/// (FoldedStacks), shown as durations. The script zooms into a frame on click.
struct FlameGraph {
    struct Node {
        var name: String
        var value: Int64 = 0
        var children: [String: Int] = [:]
    }

    private(set) var nodes = [Node(name: "all")]
    /// Lines that are not `stack count` with a positive count (1-based).
    private(set) var badLines: [Int] = []
    /// Frames narrower than this share of the total are not drawn (their parent shows them).
    static let minShare = 0.0005
    static let frameHeight = 18
    static let maxDepth = 256

    var total: Int64 { nodes[0].value }

    init(folded: String) {
        var lineNumber = 0
        // `isNewline`: a CRLF is one Character, which a split on "\n" would not cut.
        for line in folded.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            if line.allSatisfy({ $0 == " " }) { continue }
            guard let space = line.lastIndex(of: " "), let count = Int64(line[line.index(after: space)...]), count > 0,
                  space > line.startIndex
            else {
                if badLines.count < 20 { badLines.append(lineNumber) }
                continue
            }
            var at = 0
            nodes[0].value += count
            for frame in line[..<space].split(separator: ";", omittingEmptySubsequences: false).prefix(Self.maxDepth) {
                let name = frame.isEmpty ? "(empty)" : String(frame)
                if let child = nodes[at].children[name] {
                    at = child
                } else {
                    nodes.append(Node(name: name))
                    nodes[at].children[name] = nodes.count - 1
                    at = nodes.count - 1
                }
                nodes[at].value += count
            }
        }
    }

    func html() -> String {
        guard total > 0 else {
            return "<p class=\"empty\" id=\"flame-empty\">No stalls recorded.</p>"
        }
        var frames: [String] = []
        var depthUsed = 0
        let all = Double(total)
        func draw(_ i: Int, x: Int64, depth: Int) {
            let n = nodes[i]
            let share = Double(n.value) / all
            guard share >= Self.minShare else { return }
            depthUsed = Swift.max(depthUsed, depth)
            let fx = Double(x) / all
            let title = "\(n.name)\n\(Format.duration(n.value)) (\(Format.fixed(share * 100, 2))%)"
            frames.append("<div class=\"fg-f\" data-d=\"\(depth)\" data-x=\"\(Format.fixed(fx, 6))\" data-w=\"\(Format.fixed(share, 6))\""
                + " style=\"left:\(Format.fixed(fx * 100, 3))%;width:\(Format.fixed(share * 100, 3))%;"
                + "bottom:\(depth * Self.frameHeight)px;background:\(Self.colour(n.name, root: i == 0))\""
                + " title=\"\(HTMLText.escape(title))\">\(HTMLText.escape(n.name))</div>")
            var childX = x
            for c in n.children.sorted(by: { $0.key < $1.key }).map(\.value) {
                draw(c, x: childX, depth: depth + 1)
                childX += nodes[c].value
            }
        }
        draw(0, x: 0, depth: 0)
        return "<div class=\"fg\" id=\"flame\" style=\"height:\((depthUsed + 1) * Self.frameHeight)px\" data-total=\"\(total)\">"
            + frames.joined(separator: "\n") + "</div>"
    }

    /// flamegraph.pl's warm palette, the hue taken from the name so a frame keeps its colour.
    static func colour(_ name: String, root: Bool) -> String {
        if root { return "hsl(0,0%,80%)" }
        var h: UInt32 = 2_166_136_261
        for b in name.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return "hsl(\(h % 50),\(70 + (h >> 8) % 20)%,\(55 + (h >> 16) % 12)%)"
    }
}
