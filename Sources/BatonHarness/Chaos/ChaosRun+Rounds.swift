import BatonCoordinator
import BatonREST
import BatonServer
import BatonStore
import Foundation
import Logging

extension ChaosRun {
    /// One round: maybe local edits, server-side changes for the reSync to fetch, a hand-over
    /// to a new writer, and the round's fault at its moment.
    func play(round: Int, fault: ChaosFault) async throws {
        faults[fault, default: 0] += 1
        if fault.needsLocalEdits || random.chance(0.25) { try await editLocally(round: round) }
        // A kill between pages needs a sync of several pages: a page that reaches 100% is not
        // reported (Mobile Sync's contract), so a one-page sync never shows one committed.
        let changes =
            fault == .killBetweenPages ? random.int(2 * Self.batchSize + 1...40) : random.int(10...40)
        try await client.adminTouch(
            type: "Account", count: changes, fields: ["Rating__c": .string("r\(round)")])
        let marks = Dictionary(uniqueKeysWithValues: members.map { ($0.name, $0.log.count) })

        // Faults that act on the hand-over's first requests are set before it.
        let server = self.server!.server
        let faultsBefore = server.faultsInjected
        var expectedFaults = 0
        switch fault {
        case .killMidPage:
            try await client.adminSetFaults(["latencyMs": 150])
        case .killBetweenPages, .stopAndContinue, .serverEdits, .serverRestart, .bulkEditOneStamp:
            try await client.adminSetFaults(["latencyMs": 40])
        case .transactionInFlight:
            try await client.adminSetFaults(["latencyMs": 40])
            try await commitInFlight()
            inFlight = try await client.adminBeginTransaction(
                type: "Account", count: random.int(1...20), create: random.int(0...3),
                fields: ["Rating__c": .string("late\(round)")])
        case .killAfterServerCommit:
            try await client.adminSetFaults(["latencyMs": 5, "holdAfterCommitMs": 3000])
        case .serverError:
            // Up to 10 in a row: more than the client's 4 attempts, so some syncs fail and the
            // participant's own retry takes over.
            expectedFaults = random.int(1...10)
            try await client.adminSetFaults(["latencyMs": 5, "failNext": .int(Int64(expectedFaults))])
        case .serverLatency:
            try await client.adminSetFaults(["latencyMs": .int(Int64(random.int(50...300)))])
        case .droppedConnection:
            expectedFaults = random.int(1...6)
            try await client.adminSetFaults([
                "latencyMs": 5, "dropConnectionNext": .int(Int64(expectedFaults)),
            ])
        case .droppedAfterCommit:
            expectedFaults = 1
            try await client.adminSetFaults(["latencyMs": 5, "dropAfterCommitNext": 1])
        case .junkSignals:
            break
        case .stopDeadlineInterrupt:
            try await client.adminSetFaults(["latencyMs": 5])
            try await stopDeadlineInterrupt(round: round)
            return
        case .freezeWriter, .freezeWriterInTransaction:
            // A sync long enough to freeze in the middle of.
            try await client.adminSetFaults(["latencyMs": 40])
            let most = max(1, min(600, options.records))
            try await client.adminTouch(
                type: "Account", count: random.int(min(200, most)...most),
                fields: ["Rating__c": .string("frozen\(round)")])
        case .diskFull:
            try await client.adminSetFaults(["latencyMs": 20])
            // Full before the hand-over: the new writer's lease record, its recovery and its
            // pages all meet the full disk. Half the time SQLite's page limit (writes that need
            // room fail, a state updated in place commits), half the time every write fails.
            let kind = random.chance(0.5) ? "disk-full" : "full"
            try Data("\(kind)\n".utf8).write(to: URL(fileURLWithPath: diskFullPath))
        }
        let writesBefore = server.writesCommitted
        let requestsBefore = server.requestCount

        try handOver()
        // A transaction a previous round left open commits once this round's hand-over began.
        if fault != .transactionInFlight { try await commitInFlight() }

        switch fault {
        case .killMidPage:
            let victim = try await untilSyncRuns(round: round, after: marks, progressed: false)
            try await Task.sleep(for: .milliseconds(random.int(0...100)))  // a random point in the request
            try await killAndRestart(victim)
        case .killBetweenPages:
            let victim = try await untilSyncRuns(round: round, after: marks, progressed: true)
            try await killAndRestart(victim)
        case .killAfterServerCommit:
            let committed = await finishes(within: .seconds(60)) {
                await server.waitForWritesCommitted(writesBefore + 1)
            }
            guard committed else {
                throw ChaosViolation(
                    round: round, invariant: "liveness",
                    detail: "the local edits were never sent up; \(diagnosis())")
            }
            // The server has committed the batch and holds its answer: the writer dies waiting.
            guard let victim = currentWriter ?? expectedWriter else { return }
            try await killAndRestart(victim)
        case .stopAndContinue:
            let victim = try await untilSyncRuns(round: round, after: marks, progressed: false)
            await victim.process?.send(SIGSTOP)
            if random.chance(0.5), let other = active.filter({ $0 !== victim }).randomElement(using: &random)
            {
                // Ask for a hand-over the stopped writer can only act on once it runs again.
                try arrange(foreground: [other])
            }
            try await Task.sleep(for: .milliseconds(random.int(200...1500)))  // how long it stays stopped
            await victim.process?.send(SIGCONT)
        case .serverError, .droppedConnection, .droppedAfterCommit:
            let target = faultsBefore + expectedFaults
            let fired = await finishes(within: .seconds(60)) { await server.waitForFaultsInjected(target) }
            guard fired else {
                throw ChaosViolation(
                    round: round, invariant: "liveness",
                    detail:
                        "the \(fault.rawValue) fault never fired: no request reached the server; \(diagnosis())"
                )
            }
        case .serverLatency:
            // Every writer's turn sends at least its sync down's first query and its ghost id
            // query; waiting for a third request waited out the bound when both were single pages.
            _ = await finishes(within: .seconds(60)) { await server.waitForRequests(requestsBefore + 2) }
        case .serverRestart:
            _ = try await untilSyncRuns(round: round, after: marks, progressed: false)
            try await restartServer(downFor: .milliseconds(random.int(100...1500)))
        case .junkSignals:
            try await junkBurst()
        case .stopDeadlineInterrupt:
            break
        case .freezeWriter:
            let victim = try await untilSyncRuns(round: round, after: marks, progressed: true)
            try await freezeWriter(victim, round: round)
        case .freezeWriterInTransaction:
            let victim = try await untilSyncRuns(round: round, after: marks, progressed: true)
            try await freezeInTransaction(victim, round: round)
        case .diskFull:
            // The outage lasts until a write has failed on it (or a while, if none was due).
            let members = self.members
            _ = try await DirectoryWatcher(
                root: shared.path, subdirectories: ["logs"], reportsModifications: true
            )
            .wait(timeout: .seconds(10)) {
                members.contains { member in
                    member.log.events().dropFirst(marks[member.name] ?? 0).contains {
                        ["sync.retry", "sync.retryFailed", "lease.failed", "writer.error", "status.failed"]
                            .contains(
                                $0.event ?? "")
                    }
                }
            }
            try? FileManager.default.removeItem(atPath: diskFullPath)
        case .bulkEditOneStamp:
            _ = try await untilSyncRuns(round: round, after: marks, progressed: true)
            let most = max(1, min(400, options.records))
            try await client.adminTouch(
                type: "Account", count: random.int(min(50, most)...most),
                fields: ["Rating__c": .string("bulk\(round)")])
        case .transactionInFlight:
            // Half the time it commits once the new writer's sync has saved a page; else it stays
            // open across the next round's hand-over.
            if random.chance(0.5) {
                _ = try await untilSyncRuns(round: round, after: marks, progressed: true)
                try await commitInFlight()
            }
        case .serverEdits:
            _ = try await untilSyncRuns(round: round, after: marks, progressed: false)
            try await client.adminTouch(
                type: "Account", count: random.int(5...30), fields: ["Rating__c": .string("mid\(round)")])
            let deletable = try await client.adminRecords(type: "Account").compactMap { record -> String? in
                guard record["Name"]?.stringValue?.hasPrefix("chaos-") != true else { return nil }
                return record["Id"]?.stringValue
            }
            let doomed = Array(deletable.shuffled(using: &random).prefix(random.int(1...5)))
            try await client.adminDelete(type: "Account", ids: doomed)
        }
    }

    /// Commits the server transaction left in flight, if any.
    func commitInFlight() async throws {
        guard let transaction = inFlight else { return }
        inFlight = nil
        try await client.adminCommitTransaction(transaction.id)
        lateCommits += 1
    }

    /// The `stop-deadline-interrupt` round: a member restarted with a 1 ms stop deadline
    /// becomes the writer of a few hundred changed records. Once it has committed a page, the
    /// run takes SQLite's write lock from outside (as a shell's `BEGIN IMMEDIATE` would), so the
    /// next page's save waits; as soon as that save has begun, the member is sent to the
    /// background. Its stop deadline passes, the save is abandoned and rolled back, and the lock
    /// is let go right then, so the `stopped` state commits: it must not cover the page that did
    /// not. The member is restarted with the usual deadline once it has let go.
    func stopDeadlineInterrupt(round: Int) async throws {
        let previous = currentWriter ?? expectedWriter
        let victim = active.filter { $0 !== previous }.randomElement(using: &random)!
        try await restartGracefully(victim, stopDeadline: "0.001")
        let most = max(1, min(600, options.records))
        try await client.adminTouch(
            type: "Account", count: random.int(min(200, most)...most),
            fields: ["Rating__c": .string("big\(round)")])
        let marks = Dictionary(uniqueKeysWithValues: members.map { ($0.name, $0.log.count) })
        try arrange(foreground: [victim])
        handOvers += 1
        // A sync that fetches everything in its first page finishes without a progress event:
        // then there is no next page to interrupt, and the round ends there.
        try await until(round: round, "\(victim.name) to commit a page") {
            Self.runningSync(in: victim, after: marks[victim.name] ?? 0, progressed: true)
                || Self.syncDone(in: victim, after: marks[victim.name] ?? 0)
        }
        if !Self.runningSync(in: victim, after: marks[victim.name] ?? 0, progressed: true) {
            try await restartGracefully(victim, stopDeadline: "2")
            return
        }
        let server = self.server!.server
        let lock = try ForeignWriteLock(path: shared.storePath)
        defer { lock.release() }
        // The next page's fetch is sent as the save before it begins (and waits for the lock).
        let requests = server.requestCount
        _ = await finishes(within: .seconds(10)) { await server.waitForRequests(requests + 1) }
        let next = active.filter { $0 !== victim }.randomElement(using: &random)!
        try arrange(foreground: [next])
        handOvers += 1
        try await until(round: round, "\(victim.name)'s stop deadline to pass") {
            victim.log.events().dropFirst(marks[victim.name] ?? 0).contains {
                $0.event == "stop.deadline" || $0.event == "stopped"
            }
        }
        lock.release()
        if victim.log.events().dropFirst(marks[victim.name] ?? 0).contains(where: {
            $0.event == "stop.deadline"
        }) {
            interruptedStops += 1
        }
        try await until(round: round, "\(victim.name) to let go of the lease") {
            victim.log.events().dropFirst(marks[victim.name] ?? 0).contains { $0.event == "lease.released" }
        }
        try await restartGracefully(victim, stopDeadline: "2")
    }

    /// SIGTERM (the participant releases what it holds and exits), then start it again with
    /// this stop deadline (seconds).
    func restartGracefully(_ member: Member, stopDeadline: String) async throws {
        if let process = member.process {
            await process.send(SIGTERM)
            await process.wait()
        }
        member.stopDeadline = stopDeadline
        try await start(member)
    }

    /// Picks a new writer (never the current one) and sometimes a lower-priority member that
    /// waits behind it, and signals them.
    func handOver() throws {
        let previous = currentWriter ?? expectedWriter
        let next = active.filter { $0 !== previous }.randomElement(using: &random)!
        var foreground = [next]
        let lower = active.filter { $0.priority < next.priority }
        if random.chance(0.5), let waiting = lower.randomElement(using: &random) {
            foreground.append(waiting)
        }
        try arrange(foreground: foreground)
        handOvers += 1
    }

    /// Waits until some member logged its sync down running since `marks` (with a page saved
    /// when `progressed`); returns that member.
    func untilSyncRuns(round: Int, after marks: [String: Int], progressed: Bool) async throws -> Member {
        let members = self.members
        try await until(round: round, "a sync down to run") {
            members.contains { Self.runningSync(in: $0, after: marks[$0.name] ?? 0, progressed: progressed) }
        }
        guard
            let member = members.first(where: {
                Self.runningSync(in: $0, after: marks[$0.name] ?? 0, progressed: progressed)
            })
        else { throw ChaosViolation(round: round, invariant: "liveness", detail: "no sync down ran") }
        return member
    }

    static func runningSync(in member: Member, after mark: Int, progressed: Bool) -> Bool {
        member.log.events().dropFirst(mark).contains { event in
            event.event == "sync" && event["name"]?.stringValue == "accounts"
                && event["status"]?.stringValue == "running"
                && (!progressed || (event["progress"]?.intValue ?? 0) > 0)
        }
    }

    /// True once `member` logged its `accounts` sync `done` after log line `mark`.
    static func syncDone(in member: Member, after mark: Int) -> Bool {
        member.log.events().dropFirst(mark).contains { event in
            event.event == "sync" && event["name"]?.stringValue == "accounts"
                && event["status"]?.stringValue == "done"
        }
    }

    /// SIGKILL, then start the participant again under the same name (an app relaunch).
    func killAndRestart(_ member: Member) async throws {
        guard let process = member.process, await process.send(SIGKILL) else { return }
        await process.wait()
        kills += 1
        try await start(member)
    }

    /// Everything back to normal: faults off, nobody stopped, the server up.
    func recover() async throws {
        try? FileManager.default.removeItem(atPath: diskFullPath)
        for member in active { await member.process?.send(SIGCONT) }
        if server == nil { try await startServer() }
        try await client.adminClearFaults()
        try await client.adminSetFaults(["latencyMs": 5])
    }

    /// Local edits and creates, made under the run's own lease while nobody else writes.
    func editLocally(round: Int) async throws {
        guard let store else { return }
        try arrange(foreground: [])
        try await untilNobodyWrites(round: round)
        try await WriterLease(directory: shared, store: store, name: "chaos").withLease(timeout: .seconds(30))
        {
            try await edit(round: round, store: store, fence: $0.fence)
        }
    }

    func edit(round: Int, store: SharedStore, fence: LeaseFence) async throws {
        let onServer = Set(
            try await client.adminRecords(type: "Account").compactMap { $0["Id"]?.stringValue })
        let entries = try await store.read { try $0.query(.all, in: "accounts") }
        let candidates = entries.filter { entry in
            entry.record["Id"]?.stringValue.map(onServer.contains) == true
        }
        var updates: [(Int64, JSONObject)] = []
        for (index, entry) in candidates.shuffled(using: &random).prefix(random.int(1...4)).enumerated() {
            var record = entry.record
            record["Name"] = .string("chaos-r\(round)-e\(editCount + index)")
            updates.append((entry.entryId, LocalFlags.markUpdated(record)))
        }
        let creates = (0..<random.int(0...3)).map { index -> JSONObject in
            let token = "chaos-r\(round)-c\(createCount + index)"
            // The run names the external id itself, to recognise the server's record later.
            return LocalFlags.markCreated([
                "Name": .string(token), "Number__c": .int(Int64(round * 10 + index)),
                "BatonExternalId__c": .string("ext-" + token),
            ])
        }
        let toUpdate = updates
        let written = try await store.write(fence) { transaction -> [LocalEdit] in
            var written: [LocalEdit] = []
            for (entryId, record) in toUpdate {
                try transaction.upsert(record, into: "accounts", entryId: entryId)
                written.append(
                    LocalEdit(
                        token: record["Name"]?.stringValue ?? "", entryId: entryId,
                        serverId: record["Id"]?.stringValue))
            }
            for record in creates {
                let entry = try transaction.upsert(record, into: "accounts")
                written.append(
                    LocalEdit(
                        token: record["Name"]?.stringValue ?? "", entryId: entry.entryId,
                        externalId: record["BatonExternalId__c"]?.stringValue))
            }
            return written
        }
        edits += written
        editCount += updates.count
        createCount += creates.count
    }

    /// Plants the `--sabotage` bug, if any, so the checks that follow must catch it.
    func sabotageAfterFirstRound() async throws {
        guard let store, let sabotage = options.sabotage else { return }
        switch sabotage {
        case .unleasedWrite:
            // A second handle, opened to write outside the lease: what the audit must catch.
            let unfenced = try UnfencedStore.open(directory: shared, logger: Logger(label: "baton.chaos"))
            defer { try? unfenced.close() }
            try await unfenced.write { transaction in
                _ = try transaction.upsert(["Name": "written without the lease"], into: "accounts")
            }
        case .lostEdit:
            try await editLocally(round: 1)
            let lost = edits.map(\.entryId)
            try await WriterLease(directory: shared, store: store, name: "chaos").withLease(
                timeout: .seconds(30)
            ) {
                held in
                try await store.write(held.fence) { transaction in
                    for entryId in lost {
                        guard let entry = try transaction.entry(entryId, in: "accounts"),
                            entry.record["Id"] != nil
                        else { continue }
                        try transaction.upsert(
                            LocalFlags.clean(entry.record, syncId: nil), into: "accounts", entryId: entryId)
                    }
                }
            }
            try arrange(foreground: [members[0]])
        case .serverDrift:
            break
        }
    }

    /// A burst of bad and rapid lifecycle signals (and the lifecycle directory deleted and made
    /// again), junk in `participants/`, that directory or `writer.lock` deleted, then the
    /// intended signals.
    func junkBurst() async throws {
        let lifecycle = shared.lifecyclePath
        let names = members.map(\.name) + ["ghost", "no such participant", ".hidden"]
        let intended = members.filter { $0.lifecycle == .foreground }
        for _ in 0..<random.int(20...60) {
            let name = names.randomElement(using: &random)!
            let path = lifecycle + "/" + name
            switch random.int(0...7) {
            case 0:
                try? Data("sideways\n".utf8).write(to: URL(fileURLWithPath: path))
            case 1:
                try? Data(repeating: UInt8(ascii: "f"), count: 1 << 20).write(to: URL(fileURLWithPath: path))
            case 2:
                try? FileManager.default.removeItem(atPath: path)
                try? FileManager.default.createSymbolicLink(
                    atPath: path, withDestinationPath: "/etc/hostname")
            case 3:
                try? FileManager.default.removeItem(atPath: path)
            case 4:
                try? Data([0xFF, 0xFE, 0x00, 0x41]).write(to: URL(fileURLWithPath: path))
            case 5:
                // Junk in participants/: unparsable and binary status files, stray lock files.
                let junk = shared.participantsPath + "/junk-\(random.int(0...9999))"
                try? Data("{not json".utf8).write(to: URL(fileURLWithPath: junk + ".json"))
                try? Data([0xFF, 0x00]).write(to: URL(fileURLWithPath: junk + " binary.json"))
                try? Data().write(to: URL(fileURLWithPath: junk + ".lock"))
            case 6 where random.chance(0.3):
                // The participants directory deleted and made again (everyone republishes and
                // takes its name again), or the writer's lock file deleted (the holder steps
                // down and the lease goes by priority again).
                if random.chance(0.5) {
                    // Moved away whole (a recursive delete races with the participants' writes).
                    _ = rename(
                        shared.participantsPath, workPath + "/participants-gone-\(random.int(0...999_999))")
                    try? shared.ensureSubdirectory(shared.participantsPath)
                } else {
                    try? FileManager.default.removeItem(atPath: shared.writerLockPath)
                }
            case 7:
                // The whole lifecycle directory deleted and made again (the watchers rescan).
                try? FileManager.default.removeItem(atPath: lifecycle)
                try? shared.ensureSubdirectory(lifecycle)
            default:
                // A valid but rapid flip.
                try? FileManager.default.removeItem(atPath: path)
                let state: Lifecycle = random.chance(0.5) ? .foreground : .background
                try? LifecycleSignal.write(state, directory: shared, name: name)
            }
        }
        for name in ["ghost", "no such participant", ".hidden"] {
            try? FileManager.default.removeItem(atPath: lifecycle + "/" + name)
        }
        for member in members { try? FileManager.default.removeItem(atPath: lifecycle + "/" + member.name) }
        try arrange(foreground: intended)
    }
}
