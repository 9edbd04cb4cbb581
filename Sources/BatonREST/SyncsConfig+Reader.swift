import BatonStore
import BatonSync

extension SyncsConfig {
    /// Reads values, and names where in the file a value is wrong: lines come from one
    /// ``JSONOutline`` of the file, so each costs a walk down its path, not a scan of the file.
    final class Reader {
        let outline: JSONOutline
        let file: String
        /// ``SyncsConfig/locationWork`` so far.
        private(set) var work: Int

        init(outline: JSONOutline, file: String) {
            self.outline = outline
            self.file = file
            work = outline.bytesScanned
        }

        func line(of path: [JSONPathComponent]) -> Int {
            work += path.count
            return outline.line(of: path)
        }

        /// `file:line: syncs[1].options.mergeMode: message`; the line is the field's, or its
        /// nearest enclosing value's when the field is missing, or that of byte `offset`.
        func error(_ path: [JSONPathComponent], _ message: String, at offset: Int? = nil) -> SyncError {
            let line = offset.map { outline.lineAndColumn(ofOffset: $0).line } ?? self.line(of: path)
            let field = path.map(\.description).joined().drop { $0 == "." }
            return SyncError(
                .invalidTarget, "\(file):\(line): \(field.isEmpty ? "" : "\(field): ")\(message)")
        }

        func refuseUnknownKeys(_ value: JSONValue, at path: [JSONPathComponent], allowed: Set<String>) throws
        {
            for key in (value.objectValue ?? [:]).keys.sorted() where !allowed.contains(key) {
                throw error(
                    path + [.key(key)], "unknown key (known: \(allowed.sorted().joined(separator: ", ")))")
            }
        }

        /// Refuses a key of `object` that `keys` does not know, or a value of the wrong kind.
        func check(_ object: JSONObject, keys: [String: TargetKeys.Kind], at path: [JSONPathComponent]) throws
        {
            if let problem = TargetKeys.firstProblem(in: object, keys: keys) {
                throw error(path + problem.path, problem.message)
            }
        }

        func string(_ value: JSONValue, _ key: String, at path: [JSONPathComponent]) throws -> String {
            guard let text = value.value(atPath: key)?.stringValue, !text.isEmpty else {
                throw error(path + [.key(key)], "a non-empty string is needed")
            }
            return text
        }

        /// Mobile Sync's `SFSyncOptions`: `fieldlist` and `mergeMode`; absent means the defaults.
        func options(_ value: JSONValue?, at path: [JSONPathComponent]) throws -> SyncOptions {
            guard let value, !value.isNull else { return SyncOptions() }
            guard value.objectValue != nil else { throw error(path, "options are an object") }
            try refuseUnknownKeys(value, at: path, allowed: ["fieldlist", "mergeMode"])
            var options = SyncOptions()
            if let mode = value.value(atPath: "mergeMode") {
                switch mode.stringValue {
                case "OVERWRITE": options.mergeMode = .overwrite
                case "LEAVE_IF_CHANGED": options.mergeMode = .leaveIfChanged
                default:
                    throw error(
                        path + [.key("mergeMode")], "\(mode) is not \"OVERWRITE\" or \"LEAVE_IF_CHANGED\"")
                }
            }
            if let list = value.value(atPath: "fieldlist") {
                let names = list.arrayValue?.compactMap(\.stringValue)
                guard let names, names.count == list.arrayValue?.count else {
                    throw error(path + [.key("fieldlist")], "a fieldlist is a list of field names")
                }
                options.fieldlist = names
            }
            return options
        }
    }
}
