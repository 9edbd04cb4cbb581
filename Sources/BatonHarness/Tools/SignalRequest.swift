import BatonCoordinator
import BatonStore
import Foundation

/// What `baton signal NAME STATE` does: writes `D/lifecycle/NAME`, refusing a directory or a
/// name nobody knows unless told to create them (a mistyped name would otherwise be written and
/// wait, unnoticed, for a participant that never comes).
public enum SignalRequest {
    public static func send(_ state: Lifecycle, to name: String, in path: String, create: Bool) throws {
        let shared: SharedDirectory
        do {
            shared = try SharedDirectory(path: path, create: create)
        } catch let error as StoreError where error.code == .directoryUnavailable && !create {
            guard FileManager.default.fileExists(atPath: path) else {
                throw CLIError(
                    message: "no shared directory at \(path) (check --dir, or pass --create to make it)")
            }
            throw error
        }
        let known =
            FileManager.default.fileExists(atPath: shared.lifecyclePath + "/" + name)
            || FileManager.default.fileExists(atPath: shared.participantsPath + "/\(name).json")
        guard known || create else {
            let names = ParticipantStatus.readAll(in: shared).map(\.name)
            let list =
                names.isEmpty ? "none has published a status yet" : "known: " + names.joined(separator: ", ")
            throw CLIError(
                message:
                    "no participant named '\(name)' in \(shared.path) (\(list)); check the name, or pass --create to signal one that has not started yet"
            )
        }
        do {
            try LifecycleSignal.write(state, directory: shared, name: name)
        } catch let error as CoordinatorError {
            throw CLIError(message: error.message)
        }
    }
}

/// What `baton watch` prints on each change: the change sequence and each soup's count.
public struct ChangeReport: Encodable, Sendable {
    public var changeSequence: Int64
    public var soups: [String: Int]

    public static func read(_ store: SharedStore) throws -> ChangeReport {
        try store.read { reader in
            ChangeReport(
                changeSequence: try reader.changeSequence(),
                soups: Dictionary(
                    uniqueKeysWithValues: try reader.soups().map { ($0.name, try reader.count(in: $0.name)) })
            )
        }
    }

    /// `change 12: accounts=300 notes=4`.
    public var line: String {
        "change \(changeSequence): "
            + soups.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: " ")
    }
}
