/// Text from logs (paths, hosts, program names, stack frames) is attacker-controlled as far as
/// the report is concerned: it only ever reaches the page through these, as element text or a
/// double-quoted attribute value, never inside a script or a style.
enum HTMLText {
    /// Escapes for element content and double-quoted attribute values alike.
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for ch in s.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            // A tooltip's line breaks survive in an attribute as a character reference.
            case "\n": out += "&#10;"
            case "\t": out += " "
            // Other control characters have no business in a page (NUL would become U+FFFD).
            case "\u{0}" ..< "\u{20}", "\u{7F}": out += "\u{FFFD}"
            default: out.unicodeScalars.append(ch)
            }
        }
        return out
    }
}
