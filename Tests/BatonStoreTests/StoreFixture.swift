import BatonStore
import BatonTestSupport
import Logging

/// A store in its own temporary shared directory, opened to write outside the lease (the store
/// tests are about the store, not the lease).
struct StoreFixture {
    let temp: TemporaryDirectory
    let unfenced: UnfencedStore
    var store: SharedStore { unfenced.store }

    init() throws {
        temp = try TemporaryDirectory()
        let directory = try SharedDirectory(path: temp.path + "/shared")
        unfenced = try UnfencedStore.open(
            directory: directory, faults: StorageFaults(), logger: Logger(label: "test"))
    }
}
