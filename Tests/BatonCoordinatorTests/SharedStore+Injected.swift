import BatonStore

extension SharedStore {
    /// The storage faults this store was opened with (tests open theirs with some).
    var injected: StorageFaults {
        guard let faults else { preconditionFailure("this store was opened without storage faults") }
        return faults
    }
}
