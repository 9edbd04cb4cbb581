import BatonLocking
import BatonStore
import Foundation

/// Reads a participant's log, `D/logs/<name>.jsonl`, together with the file it was last rotated
/// to, `<name>.jsonl.1` (see ``ParticipantLog``): whole lines, oldest first, across rotations.
///
/// ``lines(directory:name:)`` reads what both files hold now. A reader made once follows the log
/// as it grows: each ``newLines()`` returns the lines appended since the last call, including
/// the rest of a file that was rotated meanwhile, so no line is read twice or, unless the log
/// rotated twice between two calls, missed.
///
/// ```swift
/// let reader = ParticipantLogReader(directory: shared, name: "host")
/// let events = reader.newEvents()   // everything so far
/// // … later
/// let more = reader.newEvents()     // only what was appended since
/// ```
public final class ParticipantLogReader: Sendable {
    /// Where the reader stands: the file it read last (device and inode), how far, and the
    /// start of a line not finished yet.
    private struct Position {
        var file: [UInt64]
        var offset: Int64
        var partial: [UInt8]
    }

    /// The log's path (`D/logs/<name>.jsonl`); the rotated file is this path with `.1`.
    public let path: String
    /// The shared directory the log is in, when known: no symbolic link in it is followed.
    private let directory: SharedDirectory?
    private let position = Locked<Position?>(nil)

    /// A reader of the log at `path`, from its start (the rotated file first).
    public init(path: String) {
        self.path = path
        directory = nil
    }

    /// A reader of participant `name`'s log in `directory`, from its start.
    public init(directory: SharedDirectory, name: String) {
        path = directory.logsPath + "/\(name).jsonl"
        self.directory = directory
    }

    /// Every line the log and its rotated file hold now, oldest first (a line still being
    /// written left out).
    public static func lines(directory: SharedDirectory, name: String) -> [String] {
        ParticipantLogReader(directory: directory, name: name).newLines()
    }

    /// ``lines(directory:name:)`` parsed; lines that are not JSON objects (a line torn by a full
    /// disk) are skipped.
    public static func events(directory: SharedDirectory, name: String) -> [JSONObject] {
        ParticipantLogReader(directory: directory, name: name).newEvents()
    }

    /// The whole lines appended since the last call (on the first, every line), oldest first.
    public func newLines() -> [String] {
        position.withLock { position in
            var lines: [String] = []
            let (rotated, current) = Self.openBoth(path, in: directory)
            defer {
                if let rotated { close(rotated.fd) }
                if let current { close(current.fd) }
            }
            if let at = position, at.file == current?.file {
                read(current!, from: at.offset, partial: at.partial, into: &lines, position: &position)
                return lines
            }
            // The file read last was rotated (it is the rotated one now: read its rest), or is
            // gone (read the rotated one whole); or this is the first read.
            if let rotated, rotated.file != current?.file {
                let resume = position?.file == rotated.file ? position : nil
                read(
                    rotated, from: resume?.offset ?? 0, partial: resume?.partial ?? [], into: &lines,
                    position: &position)
                // Once a new file follows it, a line the rotated file ends without finishing was
                // torn (it never grows again): it stays a line.
                if current != nil, let partial = position?.partial, !partial.isEmpty {
                    lines.append(String(decoding: partial, as: UTF8.self))
                }
            }
            if let current {
                read(current, from: 0, partial: [], into: &lines, position: &position)
            }
            return lines
        }
    }

    /// ``newLines()`` parsed; lines that are not JSON objects (a line torn by a full disk) are
    /// skipped.
    public func newEvents() -> [JSONObject] {
        // A torn line is skipped, as documented above.
        newLines().compactMap { try? JSONObject(parsingObject: $0) }
    }

    private struct OpenFile {
        var fd: Int32
        var file: [UInt64]
    }

    /// Opens the rotated file, then the current one, and checks that the rotated file is still
    /// the one opened: then no rotation came in between, and the current file is the one that
    /// follows it. (Tried again a few times; past that, a log rotating that fast is read as
    /// found.)
    private static func openBoth(_ path: String, in directory: SharedDirectory?) -> (
        rotated: OpenFile?, current: OpenFile?
    ) {
        for attempt in 0..<4 {
            let rotated = openFile(path + ".1", in: directory)
            let current = openFile(path, in: directory)
            var status = stat()
            let now = lstat(path + ".1", &status) == 0 ? [UInt64(status.st_dev), UInt64(status.st_ino)] : nil
            if now == rotated?.file || attempt == 3 { return (rotated, current) }
            if let rotated { close(rotated.fd) }
            if let current { close(current.fd) }
        }
        return (nil, nil)
    }

    private static func openFile(_ path: String, in directory: SharedDirectory?) -> OpenFile? {
        let fd = directory?.openFile(path, O_RDONLY) ?? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            close(fd)
            return nil
        }
        return OpenFile(fd: fd, file: [UInt64(status.st_dev), UInt64(status.st_ino)])
    }

    /// Reads `file` from `offset` to its end: the whole lines go to `lines`, and the reader's
    /// position moves to the end, with the unfinished line's start kept.
    private func read(
        _ file: OpenFile, from offset: Int64, partial: [UInt8], into lines: inout [String],
        position: inout Position?
    ) {
        var pending = partial
        var offset = offset
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes {
                pread(file.fd, $0.baseAddress, $0.count, off_t(offset))
            }
            guard count > 0 else { break }
            offset += Int64(count)
            var start = 0
            for index in 0..<count where buffer[index] == UInt8(ascii: "\n") {
                pending += buffer[start..<index]
                if !pending.isEmpty { lines.append(String(decoding: pending, as: UTF8.self)) }
                pending.removeAll(keepingCapacity: true)
                start = index + 1
            }
            pending += buffer[start..<count]
        }
        position = Position(file: file.file, offset: offset, partial: pending)
    }
}
