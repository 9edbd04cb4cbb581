/// Where the demo shows its progress (the executable's live terminal view; nothing in tests).
public protocol DemoView: Sendable {
    /// A step of the script.
    func step(_ text: String)
    /// The current state: who writes, and each sync's (name, status, progress %). `printPlain`
    /// says whether a view that does not redraw in place should print it now.
    func state(writer: String, syncs: [(String, String, Int)], printPlain: Bool)
}
