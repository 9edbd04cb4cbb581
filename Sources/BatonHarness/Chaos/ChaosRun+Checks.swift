import BatonCoordinator
import BatonREST
import BatonStore
import BatonSync
import Foundation

extension ChaosRun {
    /// The invariants checked after every round: no participant crashed, the lease history is
    /// sound, every commit came from the holder of its epoch, and the file is intact.
    func check(round: Int) throws {
        try checkNoCrash(round: round)
        try checkTakeovers(round: round)
        guard let store else { return }
        let (recorded, commits, folded, integrity) = try store.read {
            (try $0.leaseHistory(), try $0.commitLog(), try $0.leaseHistoryFold(), try $0.integrityCheck())
        }
        let history = LeaseHistory.fold(recorded, record: HeartbeatRecord.read(at: shared.writerLockPath))
        try Self.checkStore(
            round: round, history: history, commits: commits, folded: folded, integrity: integrity)
    }

    /// The lease history is sound (no overlap, epochs increase), every commit came from the holder
    /// of its epoch (every writer in a chaos run goes through the lease, so an unleased commit is
    /// a violation), the intervals folded out of the history had no violation, and
    /// `integrity_check` said ok.
    static func checkStore(
        round: Int, history: [LeaseRecord], commits: [CommitRecord], folded: LeaseHistoryFold? = nil,
        integrity: String
    ) throws {
        if let violation = LeaseAudit.check(history).first {
            throw ChaosViolation(round: round, invariant: "lease history", detail: violation.description)
        }
        let audit = LeaseAudit.audit(history: history, commits: commits, folded: folded, strict: true)
        if let violation = audit.violations.first {
            throw ChaosViolation(
                round: round, invariant: "commits under the lease", detail: violation.description)
        }
        guard integrity == "ok" else {
            throw ChaosViolation(round: round, invariant: "integrity_check", detail: integrity)
        }
    }

    /// A participant that exited without being killed by the run crashed (bad input must never
    /// stop one).
    func checkNoCrash(round: Int) throws {
        for member in members {
            guard let process = member.process, let termination = process.termination else { continue }
            let output =
                (try? String(contentsOfFile: shared.logsPath + "/\(member.name).out", encoding: .utf8)) ?? ""
            throw Self.crash(
                round: round, name: member.name, pid: process.pid, termination: termination, output: output)
        }
    }

    /// The violation of a participant that ended by itself, with the end of its output.
    static func crash(
        round: Int, name: String, pid: Int32, termination: ChildProcess.Termination, output: String
    ) -> ChaosViolation {
        let tail = output.split(separator: "\n").suffix(3).joined(separator: " | ")
        return ChaosViolation(
            round: round, invariant: "no participant crashed",
            detail: "\(name) (pid \(pid)) ended with \(termination): \(tail)")
    }

    /// Settles for good: faults off, the host alone in the foreground, twice (the second sync
    /// down brings back what the first sync up changed on the server).
    func finalSettle(round: Int) async throws {
        try await commitInFlight()
        try await thawIfDue(round: round, force: true)
        try await recover()
        for pass in 1...2 {
            try arrange(foreground: [])
            try await untilNobodyWrites(round: round)
            try arrange(foreground: [members[0]])
            try await settle(round: round, "the final settle (pass \(pass))")
            handOvers += 1
        }
        try check(round: round)
    }

    /// After the final settle: every sync done, the store holds exactly the server's records
    /// (same Ids, same LastModifiedDate, same synced fields: on Salesforce's clock an edit in the
    /// same second keeps the stamp), nothing left unsynced, no duplicates from sync up, no local
    /// edit lost.
    func checkConverged(round: Int) async throws {
        guard let store else { return }
        let syncs = try SyncState.all(store)
        let serverRecords = try await client.adminRecords(type: "Account")
        let entries = try await store.read { try $0.query(.all, in: "accounts") }
        try Self.checkConverged(
            round: round, syncs: syncs, serverRecords: serverRecords, local: entries, edits: edits)
        let contacts = try await client.adminRecords(type: "Contact")
        let (parents, children) = try await store.read { reader in
            (
                try reader.query(.all, in: "treeAccounts").map(\.record),
                try reader.query(.all, in: "treeContacts").map(\.record)
            )
        }
        try Self.checkTrees(
            round: round, serverAccounts: serverRecords, serverContacts: contacts, parents: parents,
            children: children)
    }

    /// The parent-children sync `trees` holds exactly the server's accounts (same Ids and
    /// LastModifiedDate) and their contacts, each under its account.
    static func checkTrees(
        round: Int, serverAccounts: [JSONObject], serverContacts: [JSONObject], parents: [JSONObject],
        children: [JSONObject]
    ) throws {
        func pairs(_ records: [JSONObject], _ field: String) -> Set<String> {
            Set(records.map { "\($0["Id"]?.stringValue ?? "?") \($0[field]?.stringValue ?? "-")" })
        }
        let parentsMatch = pairs(parents, "LastModifiedDate") == pairs(serverAccounts, "LastModifiedDate")
        let childrenMatch = pairs(children, "AccountId") == pairs(serverContacts, "AccountId")
        guard parentsMatch, childrenMatch, parents.count == serverAccounts.count,
            children.count == serverContacts.count
        else {
            throw ChaosViolation(
                round: round, invariant: "store = server (parent-children)",
                detail:
                    "\(serverAccounts.count) accounts and \(serverContacts.count) contacts on the server, \(parents.count) and \(children.count) in the trees sync's soups; accounts \(parentsMatch ? "match" : "differ"), contacts \(childrenMatch ? "match" : "differ")"
            )
        }
    }

    /// ``checkConverged(round:)`` on what it read: the syncs, the server's records and the
    /// store's entries.
    static func checkConverged(
        round: Int, syncs: [SyncState], serverRecords: [JSONObject], local entries: [SoupEntry],
        edits: [LocalEdit]
    ) throws {
        func violation(_ invariant: String, _ detail: String) -> ChaosViolation {
            ChaosViolation(round: round, invariant: invariant, detail: detail)
        }
        let notDone = syncs.filter { $0.status != .done }
        if let sync = notDone.first {
            throw violation(
                "every sync done", "sync '\(sync.name ?? "#\(sync.id)")' is \(sync.status.rawValue)")
        }

        let local = entries.map(\.record)
        let unsynced = local.filter(LocalFlags.isDirty)
        if !unsynced.isEmpty {
            let errors = unsynced.compactMap { $0[LocalFlags.lastError]?.stringValue }.prefix(2)
            throw violation(
                "no local change left behind",
                "\(unsynced.count) local record(s) still dirty\(errors.isEmpty ? "" : ": \(errors.joined(separator: "; "))")"
            )
        }
        func stamps(_ records: [JSONObject]) -> [String: String] {
            Dictionary(
                records.compactMap { record in
                    record["Id"]?.stringValue.map { ($0, record["LastModifiedDate"]?.stringValue ?? "") }
                }, uniquingKeysWith: { first, _ in first })
        }
        let onServer = stamps(serverRecords)
        let inStore = stamps(local)
        func fields(_ records: [JSONObject]) -> [String: [JSONValue]] {
            Dictionary(
                records.compactMap { record in
                    record["Id"]?.stringValue.map { ($0, Self.syncedFields.map { record[$0] ?? .null }) }
                }, uniquingKeysWith: { first, _ in first })
        }
        let serverFields = fields(serverRecords)
        let storeFields = fields(local)
        if local.count != inStore.count {
            throw violation("store = server", "\(local.count - inStore.count) local record(s) have no Id")
        }
        let missing = Set(onServer.keys).subtracting(inStore.keys)
        let extra = Set(inStore.keys).subtracting(onServer.keys)
        let stale = onServer.filter { id, stamp in inStore[id].map { $0 != stamp } ?? false }
        if !missing.isEmpty || !extra.isEmpty || !stale.isEmpty || local.count != serverRecords.count {
            throw violation(
                "store = server",
                "\(serverRecords.count) on the server, \(local.count) in the store: \(missing.count) missing locally (e.g. \(missing.first ?? "-")), \(extra.count) not on the server (e.g. \(extra.first ?? "-")), \(stale.count) with another LastModifiedDate (e.g. \(stale.first?.key ?? "-"))"
            )
        }

        var names: [String: Int] = [:]
        for record in serverRecords {
            if let name = record["Name"]?.stringValue, name.hasPrefix("chaos-") {
                names[name, default: 0] += 1
            }
        }
        if let duplicate = names.first(where: { $0.value > 1 }) {
            throw violation(
                "no duplicates from sync up", "'\(duplicate.key)' is on the server \(duplicate.value) times")
        }
        try checkNoEditLost(round: round, edits: edits, serverRecords: serverRecords, local: entries)
        // Last, what the stamps cannot tell: an edit made in the same second as the stored copy.
        let differing = serverFields.filter { id, fields in storeFields[id] != fields }
        if let first = differing.first {
            throw violation(
                "store = server",
                "\(differing.count) record(s) with the server's LastModifiedDate but other \(Self.syncedFields.joined(separator: ", ")) (e.g. \(first.key))"
            )
        }
    }

    /// The newest local write to each record reached the server. Writes to one record are
    /// linked through its local entry, its server Id and its external id (a record merged or
    /// recreated keeps at least one of them), so an edit superseded by a later one to the same
    /// record is not counted as lost.
    static func checkNoEditLost(
        round: Int, edits: [LocalEdit], serverRecords: [JSONObject], local: [SoupEntry]
    ) throws {
        var same = SameRecord()
        for edit in edits {
            same.link("token:" + edit.token, "entry:\(edit.entryId)")
            if let id = edit.serverId { same.link("token:" + edit.token, "id:" + id) }
            if let ext = edit.externalId { same.link("token:" + edit.token, "ext:" + ext) }
        }
        for record in serverRecords + local.map(\.record) {
            guard let id = record["Id"]?.stringValue, let ext = record["BatonExternalId__c"]?.stringValue
            else {
                continue
            }
            same.link("id:" + id, "ext:" + ext)
        }
        for entry in local {
            if let id = entry.record["Id"]?.stringValue { same.link("id:" + id, "entry:\(entry.entryId)") }
        }
        var newest: [String: String] = [:]
        for edit in edits { newest[same.root("token:" + edit.token)] = edit.token }
        let onServer = Set(serverRecords.compactMap { $0["Name"]?.stringValue })
        let lost = newest.values.filter { !onServer.contains($0) }.sorted()
        if !lost.isEmpty {
            throw ChaosViolation(
                round: round, invariant: "no local edit lost",
                detail:
                    "\(lost.count) of \(newest.count) newest local writes never reached the server (e.g. \(lost[0]))"
            )
        }
    }
}
