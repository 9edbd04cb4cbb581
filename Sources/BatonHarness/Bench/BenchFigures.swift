import BatonREST

/// What `baton bench --json` reports: the machine, and each scenario that ran (the others are
/// left out), with its baseline and ratios. Figures are rounded as the table shows them.
struct BenchFigures: Encodable {
    var cores: Int
    var records: Int
    var trials: Int
    var ingest: Ingest?
    var stop: Latencies?
    var handover: Latencies?
    var takeover: Takeover?
    var resumeWaste: ResumeWaste?
    var incremental: Incremental?
    var ghosts: Ghosts?
    var syncs: Syncs?
    var syncUp: SyncUp?
    var contention: Contention?
    var readers: Readers?
    var memory: Memory?

    static func round(_ value: Double, _ places: Double = 10) -> Double { BenchStats.round(value, places) }

    struct Ingest: Encodable {
        var endToEndPerSec: Double
        var storePerSec: Double
        /// The raw loop: the same table shape and indexes, prepared statements, no store.
        var rawPerSec: Double
        var grdbPerSec: Double
        /// End to end over the store's own upsert path.
        var ratio: Double
        var storeVsRaw: Double
        var endToEndVsRaw: Double
        var storeVsGrdb: Double
        /// The pages fetched and parsed, nothing saved (server, transport and client parse).
        var fetchPerSec: Double
        /// End to end over fetch only: near 1 when the fetch bounds the sync down.
        var endToEndVsFetch: Double
        /// Every round's records/s (the figures above are their medians).
        var rounds: [IngestBench.Round]

        init(_ result: IngestBench.Result) {
            fetchPerSec = round(result.fetchPerSec, 1)
            endToEndVsFetch = round(result.endToEndPerSec / result.fetchPerSec, 1000)
            rounds = result.rounds
            endToEndPerSec = round(result.endToEndPerSec, 1)
            storePerSec = round(result.storePerSec, 1)
            rawPerSec = round(result.rawPerSec, 1)
            grdbPerSec = round(result.grdbPerSec, 1)
            ratio = round(result.endToEndPerSec / result.storePerSec, 1000)
            storeVsRaw = round(result.storePerSec / result.rawPerSec, 1000)
            endToEndVsRaw = round(result.endToEndPerSec / result.rawPerSec, 1000)
            storeVsGrdb = round(result.storePerSec / result.grdbPerSec, 1000)
        }
    }

    /// A latency and others of the same trials (`inFlight`, `firstPage`): p50s and tails.
    /// A p99 needs 100 samples or more; of fewer, the tail is the maximum and is named so
    /// (`maxMs`, `inFlightMaxMs`).
    struct Latencies: Encodable {
        var main: [Double]
        var others: [(name: String, values: [Double])]

        init(main: [Double], others: [(name: String, values: [Double])]) {
            self.main = main
            self.others = others
        }

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            func put(_ name: String, _ values: [Double]) throws {
                let tail = values.count >= 100 ? "P99Ms" : "MaxMs"
                let p50 = name.isEmpty ? "p50Ms" : name + "P50Ms"
                let tailKey = name.isEmpty ? tail.prefix(1).lowercased() + tail.dropFirst() : name + tail
                try container.encode(round(BenchStats.percentile(values, 50)), forKey: Key(stringValue: p50))
                try container.encode(
                    round(BenchStats.percentile(values, 99)), forKey: Key(stringValue: tailKey))
            }
            try put("", main)
            for other in others { try put(other.name, other.values) }
            try container.encode(main.count, forKey: Key(stringValue: "trials"))
        }
    }

    struct Takeover: Encodable {
        var termMs: Double
        var trials: Int
        var leaseP50Ms: Double
        /// Of fewer than 100 trials this is the maximum, and the table says so.
        var leaseP99Ms: Double
        var firstPageP50Ms: Double
        var firstPageP99Ms: Double
        var takeovers: Int
        var falseTakeovers: Int
        var frozenInTransaction: Int
        var longestTransactionMs: Double

        init(_ result: TakeoverBench.Result) {
            func p(_ values: [Double], _ percentile: Double) -> Double {
                round(BenchStats.percentile(values, percentile))
            }
            termMs = result.termMs
            trials = result.leaseMs.count
            leaseP50Ms = p(result.leaseMs, 50)
            leaseP99Ms = p(result.leaseMs, 99)
            firstPageP50Ms = p(result.firstPageMs, 50)
            firstPageP99Ms = p(result.firstPageMs, 99)
            takeovers = result.takeovers
            falseTakeovers = result.falseTakeovers
            frozenInTransaction = result.frozenInTransaction
            longestTransactionMs = round(result.longestTransactionMs, 100)
        }
    }

    struct ResumeWaste: Encodable {
        struct Case: Encodable {
            var stopAtPercent: Int
            var tie: Int
            var extra: Int
        }
        var maxExtraRecords: Int
        var cases: [Case]

        init(_ waste: [ResumeWasteBench.Case]) {
            maxExtraRecords = waste.map(\.extra).max() ?? 0
            cases = waste.map { Case(stopAtPercent: $0.stopAt, tie: $0.tie, extra: $0.extra) }
        }
    }

    /// Several sync downs until all are done: at once against one at a time, and the floor;
    /// medians of the rounds.
    struct Syncs: Encodable {
        var syncs: Int
        var records: Int
        var latencyMs: Int
        var batchSize: Int
        var concurrentMs: Double
        var oneAtATimeMs: Double
        /// The longest single sync run alone (in the one-at-a-time runs), and every page save
        /// alone; the floor is the longer.
        var longestAloneMs: Double
        var savesAloneMs: Double
        var floorMs: Double
        var concurrentVsOneAtATime: Double
        var concurrentVsFloor: Double
        /// What no schedule can beat on this machine: the round trips before a sync's first
        /// full batch can arrive (the server's clock, the first page of
        /// ``SoqlSyncDownTarget/firstPageSize``, the first full batch), then every later page
        /// saved alone, one after another through the one writer.
        var writerFloorMs: Double
        var concurrentVsWriterFloor: Double
        /// Until all are done, by how many run at once (1, 2, 4, all): medians.
        var byConcurrency: [String: Double]
        var rounds: [SyncsBench.Round]

        init(_ result: SyncsBench.Result) {
            syncs = result.syncs
            records = result.records
            latencyMs = result.latencyMs
            batchSize = result.batchSize
            rounds = result.rounds
            func median(_ values: [Double]) -> Double { BenchStats.percentile(values, 50) }
            let concurrent = median(result.rounds.filter { $0.way == "concurrent" }.map(\.ms))
            let sequential = result.rounds.filter { $0.way == "oneAtATime" }
            let oneAtATime = median(sequential.map(\.ms))
            let alone = median(sequential.map(\.longestSyncMs))
            let saves = median(result.savesAloneMs)
            let floor = max(alone, saves)
            concurrentMs = round(concurrent)
            oneAtATimeMs = round(oneAtATime)
            longestAloneMs = round(alone)
            savesAloneMs = round(saves)
            floorMs = round(floor)
            concurrentVsOneAtATime = round(concurrent / max(oneAtATime, 0.001), 1000)
            concurrentVsFloor = round(concurrent / max(floor, 0.001), 1000)
            let laterPages =
                Double(max(result.records - SoqlSyncDownTarget.firstPageSize, 0))
                / Double(max(result.records, 1))
            let writerFloor = Double(3 * result.latencyMs) + saves * laterPages
            writerFloorMs = round(writerFloor)
            concurrentVsWriterFloor = round(concurrent / max(writerFloor, 0.001), 1000)
            var byConcurrency: [String: Double] = [:]
            for way in Set(result.rounds.map(\.way)) {
                let key =
                    way == "oneAtATime"
                    ? "1" : way == "concurrent" ? "\(result.syncs)" : String(way.dropFirst(10))
                byConcurrency[key] = round(median(result.rounds.filter { $0.way == way }.map(\.ms)))
            }
            self.byConcurrency = byConcurrency
        }
    }

    /// Sync up of many local creates against the server's own collections rate; medians.
    struct SyncUp: Encodable {
        var records: Int
        var batchSize: Int
        var syncUpPerSec: Double
        var collectionsPerSec: Double
        var ratio: Double
        var rounds: [SyncUpBench.Round]

        init(_ result: SyncUpBench.Result) {
            records = result.records
            batchSize = result.batchSize
            rounds = result.rounds
            func median(_ way: String) -> Double {
                BenchStats.percentile(result.rounds.filter { $0.way == way }.map(\.recordsPerSec), 50)
            }
            let (up, collections) = (median("syncUp"), median("collections"))
            syncUpPerSec = round(up)
            collectionsPerSec = round(collections)
            ratio = round(up / max(collections, 0.001), 1000)
        }
    }

    /// Clean resync ghosts after a few deletions: the deletions since the last clean against a
    /// comparison of every id, medians of the rounds.
    struct Ghosts: Encodable {
        var records: Int
        var deletes: Int
        var fullRequests: Double
        var incrementalRequests: Double
        var fullIds: Double
        var incrementalIds: Double
        var fullMs: Double
        var incrementalMs: Double
        /// Incremental over full: ids transferred, time.
        var idsRatio: Double
        var timeRatio: Double
        var rounds: [GhostBench.Round]

        init(_ result: GhostBench.Result) {
            records = result.records
            deletes = result.deletes
            rounds = result.rounds
            func median(_ way: String, _ value: (GhostBench.Round) -> Double) -> Double {
                BenchStats.percentile(result.rounds.filter { $0.way == way }.map(value), 50)
            }
            fullRequests = median("full") { Double($0.requests) }
            incrementalRequests = median("incremental") { Double($0.requests) }
            fullIds = median("full") { Double($0.idsTransferred) }
            incrementalIds = median("incremental") { Double($0.idsTransferred) }
            let (full, incremental) = (median("full", \.ms), median("incremental", \.ms))
            fullMs = round(full)
            incrementalMs = round(incremental, 100)
            idsRatio = round(incrementalIds / max(fullIds, 1), 10_000)
            timeRatio = round(incremental / max(full, 0.001), 10_000)
        }
    }

    /// Records each incremental run fetched against the records changed since the run before.
    struct Incremental: Encodable {
        /// Per clock: changed and fetched over the runs after the first (the idle run aside),
        /// and what the idle run fetched.
        struct Clock: Encodable {
            var changed: Int
            var fetched: Int
            var extraPerRun: Double
            var fetchedPerChanged: Double
            var idleFetched: Int
        }
        var salesforce: Clock?
        var ideal: Clock?
        var runs: [IncrementalBench.Run]

        init(_ runs: [IncrementalBench.Run]) {
            self.runs = runs
            func clock(_ name: String) -> Clock? {
                let busy = runs.filter { $0.clock == name && $0.run != "idle" }
                guard !busy.isEmpty else { return nil }
                let changed = busy.map(\.changed).reduce(0, +)
                let fetched = busy.map(\.fetched).reduce(0, +)
                return Clock(
                    changed: changed, fetched: fetched,
                    extraPerRun: round(Double(fetched - changed) / Double(busy.count)),
                    fetchedPerChanged: round(Double(fetched) / Double(max(changed, 1)), 100),
                    idleFetched: runs.first { $0.clock == name && $0.run == "idle" }?.fetched ?? 0)
            }
            salesforce = clock("salesforce")
            ideal = clock("ideal")
        }
    }

    struct Contention: Encodable {
        /// The strictly fair lease (a hand-over after every turn).
        var batonWritesPerSec: Double
        var baselineWritesPerSec: Double
        var writesRatio: Double
        /// The same as `writesRatio`, under the name the lease-term issue gave it.
        var throughputRatio: Double
        var batonErrors: Int
        var baselineErrors: Int
        var batonP50Ms: Double
        var batonP99Ms: Double
        var batonMaxMs: Double
        var baselineP50Ms: Double
        var baselineP99Ms: Double
        var baselineMaxMs: Double
        var p99Ratio: Double
        /// The same turns taken through a bare `flock` (no heartbeat, epoch or fence): the floor
        /// of a lease handed over by the kernel at every turn.
        var floorWritesPerSec: Double
        var floorP50Ms: Double
        var floorP99Ms: Double
        var floorMaxMs: Double
        var floorThroughputRatio: Double
        var floorP99Ratio: Double
        var floorErrors: Int
        /// The fair lease's throughput over the floor's.
        var fairVsFloor: Double

        init(_ modes: [String: ProcessBench.Contention]) {
            let none = ProcessBench.Contention(writesPerSec: 0, p50Ms: 0, p99Ms: 0, maxMs: 0, errors: 0)
            let (lease, busy, floor) = (modes["lease"] ?? none, modes["busy"] ?? none, modes["floor"] ?? none)
            func ratio(_ a: Double, _ b: Double) -> Double { round(a / max(b, 1e-9), 1000) }
            /// A mode's p50, p99 and longest wait, in ms to two decimals.
            func latencies(_ run: ProcessBench.Contention) -> (Double, Double, Double) {
                (round(run.p50Ms, 100), round(run.p99Ms, 100), round(run.maxMs, 100))
            }
            batonWritesPerSec = round(lease.writesPerSec)
            baselineWritesPerSec = round(busy.writesPerSec)
            writesRatio = ratio(lease.writesPerSec, busy.writesPerSec)
            throughputRatio = writesRatio
            batonErrors = lease.errors
            baselineErrors = busy.errors
            (batonP50Ms, batonP99Ms, batonMaxMs) = latencies(lease)
            (baselineP50Ms, baselineP99Ms, baselineMaxMs) = latencies(busy)
            p99Ratio = ratio(lease.p99Ms, busy.p99Ms)
            floorWritesPerSec = round(floor.writesPerSec)
            (floorP50Ms, floorP99Ms, floorMaxMs) = latencies(floor)
            floorThroughputRatio = ratio(floor.writesPerSec, busy.writesPerSec)
            floorP99Ratio = ratio(floor.p99Ms, busy.p99Ms)
            floorErrors = floor.errors
            fairVsFloor = ratio(lease.writesPerSec, floor.writesPerSec)
        }
    }

    struct Readers: Encodable {
        /// From the commit (the write's return), as the readers issue defines it.
        var notifyP50Ms: Double
        var notifyP99Ms: Double
        /// From the start of the page's write, its own write time included.
        var fromWriteStartP50Ms: Double
        var fromWriteStartP99Ms: Double
        var notifications: Int
        var coalesced: Int

        init(_ result: ReadersBench.Result) {
            func p(_ values: [Double], _ percentile: Double) -> Double {
                round(BenchStats.percentile(values, percentile), 1000)
            }
            notifyP50Ms = p(result.fromCommitMs, 50)
            notifyP99Ms = p(result.fromCommitMs, 99)
            fromWriteStartP50Ms = p(result.latenciesMs, 50)
            fromWriteStartP99Ms = p(result.latenciesMs, 99)
            notifications = result.latenciesMs.count
            coalesced = result.coalesced
        }
    }

    struct Memory: Encodable {
        var smallRecords: Int
        var largeRecords: Int
        var smallPeakKiB: Int
        var largePeakKiB: Int
        var ratio: Double

        init(small: (records: Int, kiB: Int), large: (records: Int, kiB: Int)) {
            smallRecords = small.records
            largeRecords = large.records
            smallPeakKiB = small.kiB
            largePeakKiB = large.kiB
            ratio = round(Double(large.kiB) / Double(max(1, small.kiB)), 1000)
        }
    }
}
