import BatonStore
import BatonTestSupport
import Logging

/// A store in its own temporary shared directory.
struct StoreFixture {
    let temp: TemporaryDirectory
    let store: SharedStore

    init() throws {
        temp = try TemporaryDirectory()
        let directory = try SharedDirectory(path: temp.path + "/shared")
        store = try SharedStore.open(directory: directory, logger: Logger(label: "test"))
    }
}
