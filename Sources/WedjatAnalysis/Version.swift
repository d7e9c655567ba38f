/// wedjat's version, as the library writes it in `process_start.wedjat_version`
/// (`WEDJAT_VERSION` in a header of CShims/interposer; a unit test keeps the two equal).
public enum WedjatVersion {
    public static let current = "0.1.0"
}
