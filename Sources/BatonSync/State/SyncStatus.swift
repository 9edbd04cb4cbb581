import BatonStore

/// Where a sync is in its cycle: `new` → `running` → `stopped` | `failed` | `done`.
public enum SyncStatus: String, Sendable, CaseIterable, Codable {
    case new
    case running
    case stopped
    case failed
    case done

    /// True for the statuses a run ends in.
    public var isTerminal: Bool { self == .stopped || self == .failed || self == .done }
}

/// Which way a sync moves records.
public enum SyncType: String, Sendable, CaseIterable, Codable {
    case syncDown
    case syncUp
}

/// How a sync treats records changed on both sides.
public enum MergeMode: String, Sendable, CaseIterable, Codable {
    /// The incoming side wins.
    case overwrite
    /// Sync down keeps locally modified records; sync up skips records changed on the server
    /// since they were fetched.
    case leaveIfChanged
}

/// A sync's options, persisted with it as JSON.
public struct SyncOptions: Sendable, Hashable, Encodable {
    public var mergeMode: MergeMode
    /// Sync up: only these fields are sent (all but local flags and server fields when nil).
    public var fieldlist: [String]?

    public init(mergeMode: MergeMode = .overwrite, fieldlist: [String]? = nil) {
        self.mergeMode = mergeMode
        self.fieldlist = fieldlist
    }

    var json: JSONObject {
        var object: JSONObject = ["mergeMode": .string(mergeMode.rawValue)]
        if let fieldlist { object["fieldlist"] = .array(fieldlist.map(JSONValue.string)) }
        return object
    }

    init(json: JSONObject) {
        mergeMode = json["mergeMode"]?.stringValue.flatMap(MergeMode.init(rawValue:)) ?? .overwrite
        fieldlist = json["fieldlist"]?.arrayValue?.compactMap(\.stringValue)
    }
}
