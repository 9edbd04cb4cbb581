import BatonStore

/// Rebuilds targets from their persisted descriptions, so a sync created by one process can be
/// resumed by another.
public protocol SyncTargetFactory: Sendable {
    func syncDownTarget(from json: JSONObject) throws -> any SyncDownTarget
    func syncUpTarget(from json: JSONObject) throws -> any SyncUpTarget
}
