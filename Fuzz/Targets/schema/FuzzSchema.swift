// A `baton serve --schema` file. Invariants: a refused file gets a Salesforce-shaped error of a
// bounded length (an echoed value is cut short); an accepted file declares every type and field
// it names, with a valid name, and each declared type answers a query over its fields.
import BatonJSON
import FuzzSupport

@testable import BatonServer

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let json = try? JSONValue(parsing: fuzzInput(data, size), maxDepth: 16) else { return 0 }
    let schema: ServerSchema
    do {
        schema = try ServerSchema(extending: .standard, json: json)
    } catch let error as SalesforceError {
        require(!error.message.isEmpty && error.message.utf8.count <= 512, "error message: \(error.message)")
        return 0
    } catch {
        fatalError("untyped error \(error)")
    }
    for entry in json.value(atPath: "objects")?.arrayValue ?? [] {
        guard let name = entry.value(atPath: "name")?.stringValue else {
            fatalError("accepted a nameless object")
        }
        guard let object = schema.object(name) else { fatalError("declared type \(name) is missing") }
        require(RecordStorage.isTypeName(object.name), "invalid type name \(object.name)")
        for field in entry.value(atPath: "fields")?.arrayValue ?? [] {
            guard let fieldName = field.value(atPath: "name")?.stringValue, object.field(fieldName) != nil
            else {
                fatalError("declared field of \(name) is missing")
            }
        }
    }
    // Every type queries: each field in one SELECT, through the server's own storage.
    guard let storage = try? RecordStorage(path: nil, schema: schema) else {
        fatalError("storage refused the schema")
    }
    for name in schema.objectNames.prefix(8) {
        guard let object = schema.object(name) else { continue }
        let fields = object.fields.filter { $0.type != .reference }.map(\.name).joined(separator: ", ")
        do {
            _ = try QueryEngine(storage: storage, stats: ServerStats(), locatorLifetime: .seconds(60))
                .start(soql: "SELECT \(fields) FROM \(object.name)", batchSize: 10)
        } catch {
            fatalError("a declared type does not query: \(error)")
        }
    }
    return 0
}
