// The SOQL lexer, parser and printer.
// Invariants: an accepted query prints to SOQL that parses to the same query and prints the same
// again; a refused query names a position inside the text.
import FuzzSupport
import SOQL

@main
enum Main {
    static func main() { runFuzzer(fuzzOneInput) }
}

func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let text = fuzzText(fuzzInput(data, size)) else { return 0 }
    let query: SOQLQuery
    do {
        query = try SOQLQuery(parsing: text)
    } catch let error as SOQLError {
        require(
            error.position >= 0 && error.position <= max(text.count, text.utf8.count),
            "error position \(error.position) outside the text")
        return 0
    } catch {
        fatalError("untyped error \(error)")
    }
    let printed = query.soql
    let reparsed: SOQLQuery
    do {
        reparsed = try SOQLQuery(parsing: printed)
    } catch {
        fatalError("printed SOQL does not parse: \(error)\n\(printed)")
    }
    require(reparsed == query, "parse → print → parse changed the query:\n\(text)\n\(printed)")
    require(reparsed.soql == printed, "printing is not stable:\n\(printed)\n\(reparsed.soql)")
    // The mutations the engine applies keep a query that round-trips.
    let mutated = query.addingFields(["Id", "LastModifiedDate"]).addingOrderBy("LastModifiedDate")
        .addingTimeStampFilter(field: "LastModifiedDate", milliseconds: 1_700_000_000_000, inclusive: false)
    require((try? SOQLQuery(parsing: mutated.soql)) == mutated, "a mutated query does not round-trip")
    require(
        (try? SOQLQuery(parsing: query.idQuery.soql)) == query.idQuery, "the id query does not round-trip")
    return 0
}
