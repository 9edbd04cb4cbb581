import BatonStore
import Testing

@Suite("Dirty-record helpers")
struct DirtyRecordTests {
    @Test("marking sets the flags, cleaning clears them and stamps the sync id")
    func flags() {
        let created = LocalFlags.markCreated(["Name": "A"])
        #expect(LocalFlags.isDirty(created) && LocalFlags.isCreated(created))
        #expect(!LocalFlags.isUpdated(created) && !LocalFlags.isDeleted(created))
        let updated = LocalFlags.markUpdated(created)
        #expect(LocalFlags.isCreated(updated) && LocalFlags.isUpdated(updated))
        let deleted = LocalFlags.markDeleted(["Id": "1"])
        #expect(LocalFlags.isDeleted(deleted) && !LocalFlags.isCreated(deleted))
        var withError = deleted
        withError[LocalFlags.lastError] = "boom"
        let clean = LocalFlags.clean(withError, syncId: 7)
        #expect(!LocalFlags.isDirty(clean) && !LocalFlags.isDeleted(clean))
        #expect(clean[LocalFlags.lastError] == nil)
        #expect(clean[LocalFlags.syncId] == 7)
    }

    @Test("the store finds exactly the dirty records")
    func findDirty() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let unfenced = fixture.unfenced
        try unfenced.registerSoup("contacts", indexSpecs: [IndexSpec(path: "Id", type: .string)])
        let clean = try unfenced.upsert(LocalFlags.clean(["Id": "1"], syncId: 1), into: "contacts")
        let created = try unfenced.upsert(LocalFlags.markCreated(["Name": "new"]), into: "contacts")
        let deleted = try unfenced.upsert(LocalFlags.markDeleted(["Id": "2"]), into: "contacts")
        let dirty = try store.read { try $0.dirtyEntries(in: "contacts") }
        #expect(Set(dirty.map(\.entryId)) == [created.entryId, deleted.entryId])
        #expect(
            try store.read { try $0.dirtyEntryIds(in: "contacts") } == [created.entryId, deleted.entryId])
        #expect(try store.count(SoupQuery(where: [.exact(LocalFlags.syncId, 1)]), in: "contacts") == 1)
        _ = clean
    }
}
