import BatonREST
import BatonStore
import BatonSync
import Logging
import Testing

/// Mobile Sync 7.1's `SFMetadataSyncManagerTests` and `SFLayoutSyncManagerTests`, ported
/// scenario for scenario (each fetch mode, and two server fetches leaving one row), then what
/// the SDK leaves unsaid: a failed server fetch falls back on the cache, and a process that is
/// not the writer reads the cache only.
@Suite("Metadata and layout sync managers", .timeLimit(.minutes(5)))
struct DescriptionSyncManagerTests {
    /// `validateResult:` of SFMetadataSyncManagerTests.
    func validate(_ metadata: SObjectMetadata?) throws {
        let metadata = try #require(metadata, "Metadata should not be nil")
        #expect(metadata.name == "Account", "Object types should match")
        #expect(!metadata.rawData.isEmpty, "Metadata raw data should not be nil")
        #expect(metadata.compactLayoutable, "Object should be compact layoutable")
        #expect(metadata.createable, "Object should be createable")
        #expect(metadata.childRelationships != nil, "Child relationships should not be nil")
        #expect(metadata.fields != nil, "Fields should not be nil")
        #expect(metadata.urls != nil, "URLs should not be nil")
        #expect(metadata.searchable, "Object should be searchable")
        #expect(metadata.keyPrefix == "001", "Object key prefixes should match")
        #expect(metadata.label == "Account", "Object labels should match")
    }

    /// `validateResult:layout:` of SFLayoutSyncManagerTests.
    func validate(_ layout: SObjectLayout?) throws {
        let layout = try #require(layout, "Layout data should not be nil")
        #expect(layout.layoutType == "Compact", "Layout types should match")
        #expect(!layout.rawData.isEmpty, "Layout raw data should not be nil")
        let sections = try #require(layout.sections, "Layout sections should not be nil")
        try #require(sections.count > 0, "Number of layout sections should be 1 or more")
        let rows = try #require(sections[0].layoutRows, "Layout rows for a section should not be nil")
        try #require(rows.count > 0, "Number of layout rows for a section should be 1 or more")
        let items = try #require(rows[0].layoutItems, "Layout items for a row should not be nil")
        #expect(items.count > 0, "Number of layout items for a row should be 1 or more")
    }

    /// The server saw no request since `before` but the stats request itself.
    func expectNoRequestSince(_ before: JSONValue, _ f: SyncFixture) async throws {
        let requests = { (stats: JSONValue) in stats.value(atPath: "requests")?.intValue ?? -1 }
        #expect(requests(try await f.client.adminStats()) == requests(before) + 1)
    }

    func metadataManager(_ f: SyncFixture) -> MetadataSyncManager {
        MetadataSyncManager(syncManager: f.manager, client: f.client)
    }

    func layoutManager(_ f: SyncFixture) -> LayoutSyncManager {
        LayoutSyncManager(syncManager: f.manager, client: f.client)
    }

    @Test("testFetchMetadataInCacheOnlyMode: after a server fetch, the cache answers")
    func metadataCacheOnly() async throws {
        try await withSyncFixture { f in
            let manager = metadataManager(f)
            #expect(try await manager.fetchMetadata(for: "Account", mode: .cacheOnly) == nil)
            _ = try await manager.fetchMetadata(for: "Account", mode: .serverFirst)
            try validate(try await manager.fetchMetadata(for: "Account", mode: .cacheOnly))
        }
    }

    @Test("testFetchMetadataInCacheFirstModeWithCacheData: the cached copy, no request")
    func metadataCacheFirstCached() async throws {
        try await withSyncFixture { f in
            let manager = metadataManager(f)
            _ = try await manager.fetchMetadata(for: "Account", mode: .serverFirst)
            let before = try await f.client.adminStats()
            try validate(try await manager.fetchMetadata(for: "Account", mode: .cacheFirst))
            try await expectNoRequestSince(before, f)
        }
    }

    @Test("testFetchMetadataInCacheFirstModeWithoutCacheData: the server fills the empty cache")
    func metadataCacheFirstEmpty() async throws {
        try await withSyncFixture { f in
            try validate(try await metadataManager(f).fetchMetadata(for: "Account", mode: .cacheFirst))
            #expect(try f.store.count(in: MetadataSyncManager.soupName) == 1)
        }
    }

    @Test("testFetchMetadataInServerFirstMode")
    func metadataServerFirst() async throws {
        try await withSyncFixture { f in
            try validate(try await metadataManager(f).fetchMetadata(for: "Account", mode: .serverFirst))
        }
    }

    @Test("testFetchMetadataMultipleTimes: two server fetches leave one row, and one sync")
    func metadataTwice() async throws {
        try await withSyncFixture { f in
            let manager = metadataManager(f)
            for _ in 0..<2 {
                try validate(try await manager.fetchMetadata(for: "Account", mode: .serverFirst))
            }
            let query = SoupQuery(where: [.exact("Id", "Account")])
            #expect(
                try f.store.count(query, in: MetadataSyncManager.soupName) == 1, "Number of rows should be 1")
            #expect(try await f.manager.getSyncStatus(name: "sfdcMetadata.Account")?.status == .done)
        }
    }

    @Test("testFetchLayoutInCacheOnlyMode")
    func layoutCacheOnly() async throws {
        try await withSyncFixture { f in
            let manager = layoutManager(f)
            #expect(
                try await manager.fetchLayout(for: "Account", layoutType: "Compact", mode: .cacheOnly) == nil)
            _ = try await manager.fetchLayout(for: "Account", layoutType: "Compact", mode: .serverFirst)
            try validate(
                try await manager.fetchLayout(for: "Account", layoutType: "Compact", mode: .cacheOnly))
        }
    }

    @Test("testFetchLayoutInCacheFirstModeWithCacheData")
    func layoutCacheFirstCached() async throws {
        try await withSyncFixture { f in
            let manager = layoutManager(f)
            _ = try await manager.fetchLayout(for: "Account", layoutType: "Compact", mode: .serverFirst)
            let before = try await f.client.adminStats()
            try validate(
                try await manager.fetchLayout(for: "Account", layoutType: "Compact", mode: .cacheFirst))
            try await expectNoRequestSince(before, f)
        }
    }

    @Test("testFetchLayoutInCacheFirstModeWithoutCacheData")
    func layoutCacheFirstEmpty() async throws {
        try await withSyncFixture { f in
            try validate(
                try await layoutManager(f).fetchLayout(
                    for: "Account", layoutType: "Compact", mode: .cacheFirst))
        }
    }

    @Test("testFetchLayoutInServerFirstMode")
    func layoutServerFirst() async throws {
        try await withSyncFixture { f in
            try validate(
                try await layoutManager(f).fetchLayout(
                    for: "Account", layoutType: "Compact", mode: .serverFirst))
        }
    }

    @Test("testFetchLayoutMultipleTimes: one row; the Full layout is a row of its own")
    func layoutTwice() async throws {
        try await withSyncFixture { f in
            let manager = layoutManager(f)
            for _ in 0..<2 {
                try validate(
                    try await manager.fetchLayout(for: "Account", layoutType: "Compact", mode: .serverFirst))
            }
            let compact = SoupQuery(where: [.exact("Id", "Account-Compact")])
            #expect(
                try f.store.count(compact, in: LayoutSyncManager.soupName) == 1, "Number of rows should be 1")
            let full = try #require(try await manager.fetchLayout(for: "Account", mode: .serverFirst))
            #expect(full.layoutType == "Full")
            #expect(try f.store.count(in: LayoutSyncManager.soupName) == 2)
        }
    }

    @Test("server first falls back on the cache when the server fails; with nothing cached it throws")
    func serverFirstFallsBack() async throws {
        try await withSyncFixture { f in
            let manager = metadataManager(f)
            _ = try await manager.fetchMetadata(for: "Account", mode: .serverFirst)
            try await f.client.adminSetFaults(["failNext": 100])
            try validate(try await manager.fetchMetadata(for: "Account", mode: .serverFirst))
            await #expect {
                try await manager.fetchMetadata(for: "Contact", mode: .serverFirst)
            } throws: { error in
                (error as? SyncError)?.code == .syncFailed && "\(error)".contains("sfdcMetadata.Contact")
            }
            try await f.client.adminClearFaults()
            #expect(try await manager.fetchMetadata(for: "Contact", mode: .serverFirst)?.keyPrefix == "003")
        }
    }

    @Test("a process that is not the writer reads the cache and fetches nothing")
    func notWriterReadsCache() async throws {
        try await withSyncFixture { f in
            _ = try await metadataManager(f).fetchMetadata(for: "Account", mode: .serverFirst)
            let reader = SyncManager(
                store: f.store, targetFactory: RESTTargetFactory(client: f.client),
                logger: Logger(label: "test"))
            let manager = MetadataSyncManager(syncManager: reader, client: f.client)
            try validate(try await manager.fetchMetadata(for: "Account", mode: .cacheOnly))
            try validate(try await manager.fetchMetadata(for: "Account", mode: .serverFirst))
            await #expect {
                try await manager.fetchMetadata(for: "Contact", mode: .cacheFirst)
            } throws: { error in
                (error as? StoreError)?.code == .staleEpoch
            }
            #expect(try await manager.fetchMetadata(for: "Contact", mode: .cacheOnly) == nil)
            #expect(throws: SyncError.self) {
                try MetadataSyncDownTarget(client: f.client, objectType: "Not A Type")
            }
        }
    }
}
