import BatonStore
import BatonTestSupport
import Foundation
import Logging
import Testing

@Suite("Shared directory")
struct SharedDirectoryTests {
    @Test("a missing directory is created with mode 0700")
    func createsPrivateDirectory() throws {
        let temp = try TemporaryDirectory()
        let path = temp.path + "/a/b/shared"
        _ = try SharedDirectory(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
    }

    @Test("a world-writable directory is refused with a message that says how to fix it")
    func refusesWorldWritable() throws {
        let temp = try TemporaryDirectory()
        let path = temp.path + "/open"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        chmod(path, 0o777)
        #expect {
            try SharedDirectory(path: path)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .unsafeDirectory && error.message.contains("world-writable")
                && error.message.contains("chmod o-w")
        }
    }

    @Test("a directory owned by another user is refused with a message that says so")
    func refusesForeignOwner() throws {
        let temp = try TemporaryDirectory()
        var path = temp.path + "/theirs"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        if geteuid() == 0 {
            // As root, hand the directory to "nobody"; otherwise any root-owned directory will do.
            #expect(chown(path, 65534, 65534) == 0)
        } else {
            path = "/usr"
        }
        #expect {
            try SharedDirectory(path: path)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .unsafeDirectory && error.message.contains("not by you")
                && error.message.contains("use a directory you own")
        }
    }

    @Test("a regular file is refused as a directory")
    func refusesFile() throws {
        let temp = try TemporaryDirectory()
        let path = temp.path + "/file"
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        #expect { try SharedDirectory(path: path) } throws: { ($0 as? StoreError)?.code == .unsafeDirectory }
    }

    @Test("a store file that is not SQLite is a typed error")
    func notSQLite() throws {
        let temp = try TemporaryDirectory()
        let directory = try SharedDirectory(path: temp.path)
        try Data("this is not a database, just text that is long enough".utf8).write(
            to: URL(fileURLWithPath: directory.storePath))
        #expect {
            try SharedStore.open(directory: directory, logger: Logger(label: "test"))
        } throws: { ($0 as? StoreError)?.code == .notADatabase }
    }

    @Test("store files (with the WAL and shared-memory files) are private to the user")
    func storeFileMode() throws {
        let fixture = try StoreFixture()
        try fixture.unfenced.registerSoup("s", indexSpecs: [])
        let base = fixture.store.directory.storePath
        for path in [base, base + "-wal", base + "-shm", fixture.store.directory.setupLockPath] {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(path)")
        }
    }
}
