import BatonStore
import Foundation

/// The benchmark scenarios `baton bench` runs, each against a baseline measured in the same run.
public struct BenchSuite: Sendable {
    /// The scenarios, in the order they run.
    public static let scenarios = [
        "ingest", "lifecycle", "takeover", "waste", "incremental", "ghosts", "syncs", "syncup", "contention",
        "readers", "memory",
    ]

    public var records: Int
    public var trials: Int
    /// The scenarios to run; empty for all.
    public var only: [String]
    /// The `baton` executable the child processes run.
    public var baton: String
    /// Keep the scenarios' directories (stores, participants' logs) for a look afterwards.
    public var keepDirectories = false
    /// Hears what runs now.
    public var progress: @Sendable (String) -> Void

    public init(
        records: Int, trials: Int, only: [String], baton: String,
        progress: @escaping @Sendable (String) -> Void
    ) {
        self.records = records
        self.trials = trials
        self.only = only
        self.baton = baton
        self.progress = progress
    }

    /// Runs the wanted scenarios; returns the figures (only those that ran) and the table.
    public func run() async throws -> (figures: JSONObject, table: [String]) {
        let env = try await BenchEnvironment(baton: baton)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        progress("machine: \(cores) cores; \(records) records, \(trials) trials")

        func wanted(_ name: String) -> Bool { only.isEmpty || only.contains(name) }
        // Only the scenarios that ran appear, in the JSON and in the table.
        var figures = BenchFigures(cores: cores, records: records, trials: trials)
        var waste: [ResumeWasteBench.Case] = []
        if wanted("ingest") {
            progress("1/6 ingest…")
            figures.ingest = .init(try await IngestBench.run(env, records: records))
        }
        if wanted("lifecycle") {
            progress("2-3/6 stop and hand-over latency…")
            let lifecycle = try await LifecycleBench.run(env, trials: trials)
            figures.stop = .init(
                main: lifecycle.stopMs,
                others: [
                    ("requestOnly", lifecycle.requestOnlyStopMs), ("inFlight", lifecycle.inFlightStopMs),
                    ("inFlightCut", lifecycle.inFlightCutStopMs),
                ])
            figures.handover = .init(
                main: lifecycle.handoverMs, others: [("firstPage", lifecycle.firstPageMs)])
        }
        if wanted("takeover") {
            // At least 20 trials. The issue asks for `leaseP99Ms`; of fewer than 100 trials the
            // nearest-rank p99 is the maximum, and the table says so.
            let takeoverTrials = max(trials, 20)
            progress("takeover: \(takeoverTrials) frozen writers, then a slow one…")
            figures.takeover = .init(try await TakeoverBench.run(env, trials: takeoverTrials))
        }
        if wanted("waste") {
            progress("4/6 resume waste…")
            waste = try await ResumeWasteBench.run(env, records: min(records, 20_000))
            figures.resumeWaste = .init(waste)
        }
        var incremental: [IncrementalBench.Run] = []
        if wanted("incremental") {
            progress("incremental runs on each server clock: what the overlap fetches again…")
            incremental = try await IncrementalBench.run(records: min(records, 20_000))
            figures.incremental = .init(incremental)
        }
        if wanted("ghosts") {
            let soup = min(records, 100_000)
            progress("ghosts: clean resync ghosts of \(soup) records after 10 deletions, both ways…")
            figures.ghosts = .init(try await GhostBench.run(records: soup))
        }
        if wanted("syncs") {
            progress("syncs: 8 sync downs of 5,000 records with 100 ms a request, at once and one at a time…")
            figures.syncs = .init(try await SyncsBench.run())
        }
        if wanted("syncup") {
            progress("sync up: 5,000 local creates against the server's own collections rate…")
            figures.syncUp = .init(try await SyncUpBench.run())
        }
        if wanted("contention") {
            progress("5/6 contention…")
            // Alternating runs, pooled, so a machine that slows down mid-way weighs on both sides.
            let runs = try await ProcessBench.alternatingContention(env, runs: min(max(trials, 1), 5))
            figures.contention = .init(runs)
        }
        if wanted("readers") {
            progress("readers: a reader process hears of each committed page…")
            figures.readers = .init(try await ReadersBench.run(env))
        }
        if wanted("memory") {
            progress("6/6 memory…")
            let small = try await ProcessBench.peakRSS(env, records: 10_000)
            let large = try await ProcessBench.peakRSS(env, records: 200_000)
            figures.memory = .init(small: (10_000, small), large: (200_000, large))
        }
        await env.finish(keepingDirectories: keepDirectories)
        if keepDirectories { progress("kept the scenarios' directories in \(env.root)") }
        let json = try JSONValue(encoding: figures).objectValue ?? [:]
        return (json, Self.table(json, waste: waste, incremental: incremental))
    }

    static func table(
        _ f: JSONObject, waste: [ResumeWasteBench.Case], incremental: [IncrementalBench.Run] = []
    ) -> [String] {
        /// "p99" or "max": what the figures of `section` call their tail.
        func tail(_ section: String, _ key: String) -> String {
            JSONValue.object(f).value(atPath: "\(section).\(key.isEmpty ? "p99Ms" : key + "P99Ms")") == nil
                ? "max" : "p99"
        }
        func tailValue(_ section: String, _ key: String) -> String {
            let name = tail(section, key) == "p99" ? "P99Ms" : "MaxMs"
            return v(
                "\(section).\(key.isEmpty ? name.prefix(1).lowercased() + name.dropFirst() : key + name)")
        }
        func v(_ path: String) -> String {
            guard let value = JSONValue.object(f).value(atPath: path) else { return "-" }
            if let int = value.intValue, value.doubleValue == Double(int) { return String(int) }
            return value.doubleValue.map { String($0) } ?? value.jsonString
        }
        let rows: [(section: String, row: String)] = [
            (
                "ingest",
                "| ingest, records/s (end to end vs store limit) | \(v("ingest.endToEndPerSec")) | \(v("ingest.storePerSec")) | \(v("ingest.ratio")) |"
            ),
            (
                "ingest",
                "| ingest, store limit vs raw loop (same table and indexes, prepared statements), records/s | \(v("ingest.storePerSec")) | \(v("ingest.rawPerSec")) | \(v("ingest.storeVsRaw")) |"
            ),
            (
                "ingest",
                "| ingest, end to end vs raw loop, records/s | \(v("ingest.endToEndPerSec")) | \(v("ingest.rawPerSec")) | \(v("ingest.endToEndVsRaw")) |"
            ),
            (
                "ingest",
                "| ingest, end to end vs fetch only (pages fetched and parsed, nothing saved), records/s | \(v("ingest.endToEndPerSec")) | \(v("ingest.fetchPerSec")) | \(v("ingest.endToEndVsFetch")) |"
            ),
            (
                "ingest",
                "| ingest, store limit vs plain GRDB INSERT … ON CONFLICT, records/s | \(v("ingest.storePerSec")) | \(v("ingest.grdbPerSec")) | \(v("ingest.storeVsGrdb")) |"
            ),
            (
                "stop",
                "| stop latency p50 / \(tail("stop", "")), ms (\(v("stop.trials")) trials; signal → lease released) | \(v("stop.p50Ms")) / \(tailValue("stop", "")) | with a request in flight: \(v("stop.requestOnlyP50Ms")) / \(tailValue("stop", "requestOnly")); with it and the page before it being saved: \(v("stop.inFlightP50Ms")) / \(tailValue("stop", "inFlight")); those and save grace 0: \(v("stop.inFlightCutP50Ms")) / \(tailValue("stop", "inFlightCut")) | |"
            ),
            (
                "handover",
                "| hand-over p50 / \(tail("handover", "")), ms (\(v("handover.trials")) trials; signal → extension holds lease) | \(v("handover.p50Ms")) / \(tailValue("handover", "")) | first page committed: \(v("handover.firstPageP50Ms")) / \(tailValue("handover", "firstPage")) | |"
            ),
            (
                "takeover",
                "| takeover p50 / p99, ms (\(v("takeover.trials")) trials, so the p99 is the max; SIGSTOP of the writer → peer holds lease) | \(v("takeover.leaseP50Ms")) / \(v("takeover.leaseP99Ms")) | lease term \(v("takeover.termMs")); first page committed: \(v("takeover.firstPageP50Ms")) / \(v("takeover.firstPageP99Ms")) | |"
            ),
            (
                "takeover",
                "| takeovers of a holder that was not frozen (slow holder included) | \(v("takeover.falseTakeovers")) of \(v("takeover.takeovers")) | must be 0 | |"
            ),
            (
                "takeover",
                "| longest write transaction, ms (a writer frozen inside one blocks every writer) | \(v("takeover.longestTransactionMs")) | SIGSTOPs that landed inside one: \(v("takeover.frozenInTransaction")) | |"
            ),
            (
                "resumeWaste",
                "| resume waste, max extra records (a resume asks for the ids after the last saved) | \(v("resumeWaste.maxExtraRecords")) | 0 | |"
            ),
            (
                "incremental",
                "| incremental runs, records fetched per record changed since the run before: Salesforce's clock; ideal clock | \(v("incremental.salesforce.fetchedPerChanged")); \(v("incremental.ideal.fetchedPerChanged")) | 1 (extra per run: \(v("incremental.salesforce.extraPerRun")); \(v("incremental.ideal.extraPerRun")); an idle run fetched \(v("incremental.salesforce.idleFetched")); \(v("incremental.ideal.idleFetched"))) | |"
            ),
            (
                "ghosts",
                "| clean resync ghosts, \(v("ghosts.deletes")) deleted in \(v("ghosts.records")) records: requests; ids transferred; ms (the deletions since vs every id) | \(v("ghosts.incrementalRequests")); \(v("ghosts.incrementalIds")); \(v("ghosts.incrementalMs")) | \(v("ghosts.fullRequests")); \(v("ghosts.fullIds")); \(v("ghosts.fullMs")) | ids \(v("ghosts.idsRatio")), time \(v("ghosts.timeRatio")) |"
            ),
            (
                "syncs",
                "| \(v("syncs.syncs")) sync downs of \(v("syncs.records")) records (\(v("syncs.latencyMs")) ms a request, batches of \(v("syncs.batchSize"))) until all done, ms: at once vs one at a time | \(v("syncs.concurrentMs")) | \(v("syncs.oneAtATimeMs")) | \(v("syncs.concurrentVsOneAtATime")) |"
            ),
            (
                "syncs",
                "| the same, at once vs the floor (the longest sync alone \(v("syncs.longestAloneMs")), every page save alone \(v("syncs.savesAloneMs"))), ms | \(v("syncs.concurrentMs")) | \(v("syncs.floorMs")) | \(v("syncs.concurrentVsFloor")) |"
            ),
            (
                "syncs",
                "| the same, at once vs the writer's floor (3 round trips before a full batch, then every later page saved alone), ms | \(v("syncs.concurrentMs")) | \(v("syncs.writerFloorMs")) | \(v("syncs.concurrentVsWriterFloor")) |"
            ),
            (
                "syncs",
                "| the same, until all done with 1; 2; 4; \(v("syncs.syncs")) at once, ms | \(v("syncs.byConcurrency.2")); \(v("syncs.byConcurrency.4")); \(v("syncs.concurrentMs")) | \(v("syncs.oneAtATimeMs")) | |"
            ),
            (
                "syncUp",
                "| sync up of \(v("syncUp.records")) local creates (batches of \(v("syncUp.batchSize"))), records/s: sync up vs the server's own sObject Collections inserts | \(v("syncUp.syncUpPerSec")) | \(v("syncUp.collectionsPerSec")) | \(v("syncUp.ratio")) |"
            ),
            (
                "contention",
                "| contention, committed writes/s (8 processes): strictly fair lease | \(v("contention.batonWritesPerSec")) | \(v("contention.baselineWritesPerSec")) (busy timeout) | \(v("contention.writesRatio")) |"
            ),
            (
                "contention",
                "| contention, writes/s: strictly fair lease vs the bare kernel lock (its floor) | \(v("contention.batonWritesPerSec")) | \(v("contention.floorWritesPerSec")) | \(v("contention.fairVsFloor")) |"
            ),
            (
                "contention",
                "| contention, write latency ms p50 / p99 / max: fair lease | \(v("contention.batonP50Ms")) / \(v("contention.batonP99Ms")) / \(v("contention.batonMaxMs")) | busy timeout \(v("contention.baselineP50Ms")) / \(v("contention.baselineP99Ms")) / \(v("contention.baselineMaxMs")); floor \(v("contention.floorP50Ms")) / \(v("contention.floorP99Ms")) / \(v("contention.floorMaxMs")) | p99 ratios to busy: fair \(v("contention.p99Ratio")), floor \(v("contention.floorP99Ratio")) |"
            ),
            (
                "contention",
                "| contention, errors (SQLITE_BUSY): fair lease | \(v("contention.batonErrors")) | busy \(v("contention.baselineErrors")), floor \(v("contention.floorErrors")) | |"
            ),
            (
                "readers",
                "| readers: page committed → reader process notified, p50 / p99 ms (\(v("readers.notifications")) notifications) | \(v("readers.notifyP50Ms")) / \(v("readers.notifyP99Ms")) | from the start of the page's write: \(v("readers.fromWriteStartP50Ms")) / \(v("readers.fromWriteStartP99Ms")); aim: p99 ≤ 5 ms | |"
            ),
            (
                "memory",
                "| memory, peak RSS KiB (200k vs 10k records) | \(v("memory.largePeakKiB")) | \(v("memory.smallPeakKiB")) | \(v("memory.ratio")) |"
            ),
        ]
        var lines = ["| scenario | Baton | baseline | ratio |", "|---|---|---|---|"]
        lines += rows.filter { f[$0.section] != nil }.map(\.row)
        lines += ["", "machine: \(v("cores")) cores; records \(v("records")); trials \(v("trials"))"]
        if !waste.isEmpty {
            lines += [
                "", "| resume waste: stop at | records per time stamp | extra fetched |",
                "|---|---|---|",
            ]
            lines += waste.map { "| \($0.stopAt)% | \($0.tie) | \($0.extra) |" }
        }
        if !incremental.isEmpty {
            lines += [
                "", "| incremental run | clock | records changed since the run before | fetched | extra |",
                "|---|---|---|---|---|",
            ]
            lines += incremental.map {
                "| \($0.run) | \($0.clock) | \($0.changed) | \($0.fetched) | \($0.extra) |"
            }
        }
        return lines
    }
}
