import BatonJSON
import Foundation
import GRDB
import SOQL

/// Writes records as the query API answers them, straight from their stored text, for a query
/// that selects only the record's own fields: each selected field is copied as it is stored, the
/// server-managed ones come from their columns, and nothing is parsed into values or printed
/// again. The result is what ``Projector`` gives (`attributes` first, then the fields in the
/// order the query names them; a field the record lacks is `null`).
struct RecordTextWriter {
    /// The columns a row must hold, in this order.
    static let columns = "rowid, id, created, lastModified, systemModstamp, fields"

    private enum Source {
        case id
        case stamp(column: Int)
        case stored(name: [UInt8])
    }

    /// `{"attributes":{"type":"Account","url":"/services/data/v60.0/sobjects/Account/`
    private let prefix: [UInt8]
    /// Each selected field: `,"Name":` and where its value comes from.
    private let fields: [(key: [UInt8], source: Source)]
    /// The stored record's members, reused from one record to the next.
    private var members: [JSONMember] = []

    init(type: String, fields selected: [FieldDescription], apiPath: String) {
        var prefix = JSONTextWriter()
        prefix.raw("{\"attributes\":{\"type\":")
        prefix.string(type)
        prefix.raw(",\"url\":\"")
        prefix.stringContents("\(apiPath)/sobjects/\(type)/")
        self.prefix = prefix.bytes
        var seen: Set<String> = []
        var fields: [(key: [UInt8], source: Source)] = []
        for field in selected where seen.insert(field.name).inserted {
            var key = JSONTextWriter(capacity: field.name.utf8.count + 4)
            key.raw(",")
            key.string(field.name)
            key.raw(":")
            let source: Source =
                switch field.name {
                case "Id": .id
                case "CreatedDate": .stamp(column: 2)
                case "LastModifiedDate": .stamp(column: 3)
                case "SystemModstamp": .stamp(column: 4)
                default: .stored(name: Array(field.name.utf8))
                }
            fields.append((key.bytes, source))
        }
        self.fields = fields
    }

    /// The writer for `query`, or nil when it reads related records (those go through
    /// ``Projector``).
    init?(_ query: ResolvedQuery, apiPath: String) {
        var selected: [FieldDescription] = []
        for item in query.items {
            guard case .field(let field) = item else { return nil }
            selected.append(field)
        }
        self.init(type: query.object.name, fields: selected, apiPath: apiPath)
    }

    /// Appends the record in `row` (``columns``) to `out`.
    mutating func write(_ row: Row, to out: inout JSONTextWriter) throws {
        let id: String = row[1]
        try row.withUnsafeData(atIndex: 5) { data in
            guard let data else {
                throw SalesforceError(status: 500, "UNKNOWN_EXCEPTION", "record without fields")
            }
            try data.withUnsafeBytes { raw in
                let stored = raw.bindMemory(to: UInt8.self)
                try JSONObjectScanner.members(of: stored, into: &members)
                out.raw(prefix)
                out.stringContents(id)
                out.raw("\"}")
                for (key, source) in fields {
                    out.raw(key)
                    switch source {
                    case .id:
                        out.string(id)
                    case .stamp(let column):
                        out.string(DateTimeLiteral.format(milliseconds: row[column]))
                    case .stored(let name):
                        if let value = try Self.value(named: name, in: stored, members: members) {
                            out.raw(UnsafeBufferPointer(rebasing: stored[value]))
                        } else {
                            out.raw("null")
                        }
                    }
                }
                out.raw("}")
            }
        }
    }

    /// Where the member `name` holds its value: the last one of exactly that name, else one that
    /// differs only in ASCII case (records written before the schema canonicalised names).
    private static func value(
        named name: [UInt8], in stored: UnsafeBufferPointer<UInt8>, members: [JSONMember]
    ) throws -> Range<Int>? {
        for member in members.reversed() where !member.keyEscaped && member.key.count == name.count {
            if name.withUnsafeBufferPointer({ $0.elementsEqual(stored[member.key]) }) { return member.value }
        }
        func lowered(_ byte: UInt8) -> UInt8 {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
        }
        for member in members {
            if member.keyEscaped {
                let key = try JSONObjectScanner.key(member, in: stored)
                if key.utf8.count == name.count,
                    zip(key.utf8, name).allSatisfy({ lowered($0) == lowered($1) })
                {
                    return member.value
                }
            } else if member.key.count == name.count,
                zip(stored[member.key], name).allSatisfy({ lowered($0) == lowered($1) })
            {
                return member.value
            }
        }
        return nil
    }
}
