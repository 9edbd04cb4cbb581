import BatonLocking
import BatonStore
import Foundation

/// Who waits for the writer lease, since when and at what priority: `D/writer.waiters`, 64
/// slots of 32 bytes, each claimed by a waiter with an open-file-description lock on its byte
/// range for as long as it waits, so the kernel frees the slot of a waiter that dies.
///
/// A holder reads the whole board (one `pread` of 2 KiB) to decide whether it may renew its turn
/// (``WriterLease/renew(_:budget:priority:)``). A slot left filled by a waiter that died is
/// told apart by its free byte-range lock and ignored.
///
/// Slot layout, little-endian: pid (Int32, 0 for a free slot), priority (Int32), waiting since
/// (UInt64, `CLOCK_MONOTONIC` ns, which every process of a boot shares), 16 bytes unused.
package final class LeaseWaiters: Sendable {
    static let slotCount = 64
    static let slotSize = 32

    /// Linux's open-file-description lock commands (`<fcntl.h>`; not all of them are imported).
    private static let getLock: Int32 = 36
    private static let setLock: Int32 = 37

    let path: String
    /// Read by the holder; open for the board's life (-1 when it could not be opened: no
    /// waiter is seen).
    private let readFd: Int32

    package init(path: String) {
        self.path = path
        readFd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    }

    deinit {
        if readFd >= 0 { close(readFd) }
        for fd in spare.withLock({ $0 }) { close(fd) }
    }

    /// A slot held by a waiter: its own descriptor, so two waits of one process never share
    /// an open file description (whose locks would not exclude each other).
    package struct Ticket: Sendable {
        fileprivate let fd: Int32
        fileprivate let slot: Int
    }

    /// One filled slot.
    struct Entry: Sendable, Hashable {
        var pid: Int32
        var priority: Int32
        var since: UInt64
    }

    /// Descriptors of waits that ended, kept for the next ones (a contended turn of the lease
    /// opens nothing).
    private let spare = Locked<[Int32]>([])

    /// Claims a free slot and fills it; nil when the board cannot be opened or is full. An
    /// unannounced wait still ends: every holder hands over once someone else has waited past
    /// its budget, and a holder without more work releases.
    ///
    /// The search starts at a slot picked by the process id, so waiters of different processes
    /// rarely try the same slots first.
    package func enter(priority: Int, since: UInt64) -> Ticket? {
        let fd = spare.withLock { $0.popLast() } ?? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        let pid = getpid()
        let first = Int((UInt32(bitPattern: pid) &* 2_654_435_761) >> 26) % Self.slotCount
        for step in 0..<Self.slotCount {
            let slot = (first + step) % Self.slotCount
            guard Self.lock(fd, slot: slot, type: Int16(F_WRLCK)) else { continue }
            var bytes = [UInt8](repeating: 0, count: Self.slotSize)
            Self.store(pid, at: 0, in: &bytes)
            Self.store(Int32(clamping: priority), at: 4, in: &bytes)
            Self.store(since, at: 8, in: &bytes)
            guard pwrite(fd, bytes, bytes.count, off_t(slot * Self.slotSize)) == bytes.count else {
                _ = Self.lock(fd, slot: slot, type: Int16(F_UNLCK))
                break
            }
            return Ticket(fd: fd, slot: slot)
        }
        close(fd)
        return nil
    }

    /// Empties the slot and lets it go (its descriptor is kept for the next wait).
    package func leave(_ ticket: Ticket) {
        let emptied = withUnsafeTemporaryAllocation(byteCount: Self.slotSize, alignment: 8) { zeros in
            zeros.initializeMemory(as: UInt8.self, repeating: 0)
            return pwrite(ticket.fd, zeros.baseAddress, zeros.count, off_t(ticket.slot * Self.slotSize))
                == zeros.count
        }
        guard emptied, Self.lock(ticket.fd, slot: ticket.slot, type: Int16(F_UNLCK)) else {
            close(ticket.fd)  // drops the slot's lock
            return
        }
        spare.withLock { $0.append(ticket.fd) }
    }

    /// The filled slots, each with its slot number. A slot
    /// is filled only while its waiter holds its lock, but a waiter that died leaves its bytes:
    /// ``isLive(slot:fd:)`` tells.
    private func entries(fd: Int32) -> [(slot: Int, entry: Entry)] {
        var bytes = [UInt8](repeating: 0, count: Self.slotCount * Self.slotSize)
        let count = pread(fd, &bytes, bytes.count, 0)
        guard count > 0 else { return [] }
        var entries: [(Int, Entry)] = []
        for slot in 0..<(count / Self.slotSize) {
            let base = slot * Self.slotSize
            let pid: Int32 = Self.load(at: base, from: bytes)
            guard pid != 0 else { continue }
            let entry = Entry(
                pid: pid, priority: Self.load(at: base + 4, from: bytes),
                since: Self.load(at: base + 8, from: bytes))
            entries.append((slot, entry))
        }
        return entries
    }

    /// The live waiters.
    func entries() -> [Entry] {
        guard readFd >= 0 else { return [] }
        return entries(fd: readFd).filter { isLive(slot: $0.slot, fd: readFd) }.map(\.entry)
    }

    /// Whether some open file description holds `slot`'s lock: its waiter is alive.
    private func isLive(slot: Int, fd: Int32) -> Bool {
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = off_t(slot * Self.slotSize)
        probe.l_len = off_t(Self.slotSize)
        probe.l_pid = 0
        guard fcntl(fd, Self.getLock, &probe) == 0 else { return true }
        return probe.l_type != Int16(F_UNLCK)
    }

    /// Whether a holder of `priority` should hand the lease over now: a live waiter has waited
    /// at least `budgetNanos`, or one of higher priority waits.
    func shouldYield(budgetNanos: UInt64, priority: Int, now: UInt64 = MonotonicClock.nanos()) -> Bool {
        guard readFd >= 0 else { return false }
        return entries(fd: readFd).contains { slot, entry in
            (Int(entry.priority) > priority || now &- min(now, entry.since) >= budgetNanos)
                && isLive(slot: slot, fd: readFd)
        }
    }

    private static func lock(_ fd: Int32, slot: Int, type: Int16) -> Bool {
        var lock = flock()
        lock.l_type = type
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(slot * slotSize)
        lock.l_len = off_t(slotSize)
        lock.l_pid = 0
        return fcntl(fd, setLock, &lock) == 0
    }

    private static func store<T: FixedWidthInteger>(_ value: T, at offset: Int, in bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { bytes[offset + index] = byte }
        }
    }

    private static func load<T: FixedWidthInteger>(at offset: Int, from bytes: [UInt8]) -> T {
        var value: T = 0
        withUnsafeMutableBytes(of: &value) { raw in
            for index in 0..<MemoryLayout<T>.size { raw[index] = bytes[offset + index] }
        }
        return T(littleEndian: value)
    }
}
