import Synchronization

/// How the interval before a lease holding ends in the history, as the lock file told the next
/// holder: its epoch, when it ended (ms since 1970) and how.
public struct LeaseClosing: Sendable, Hashable {
    /// How a lease holding ended.
    public enum Kind: String, Sendable, Hashable {
        /// The holder let go.
        case released
        /// The next holder closed it: the holder died, or stopped renewing and was taken over.
        case takenOver = "taken-over"
        /// The holder kept the lock for another turn: the next interval is the same holder's.
        /// Only earlier builds wrote it (their bounded lease renewed turns; nothing does now), so a
        /// lock file or lease history they left still reads.
        case renewed

        /// The letter the lock file's record writes for it.
        public var letter: Character {
            switch self {
            case .released: "r"
            case .takenOver: "t"
            case .renewed: "n"
            }
        }

        /// The kind a letter of the lock file's record names.
        public init?(letter: Character) {
            guard let ascii = letter.asciiValue else { return nil }
            self.init(ascii: ascii)
        }

        /// The kind the letter with this ASCII code names.
        public init?(ascii: UInt8) {
            switch ascii {
            case UInt8(ascii: "r"): self = .released
            case UInt8(ascii: "t"): self = .takenOver
            case UInt8(ascii: "n"): self = .renewed
            default: return nil
            }
        }
    }

    /// The epoch of the holding that ended.
    public var epoch: Int64
    /// When it ended, in milliseconds since 1970.
    public var at: Int64
    /// How it ended.
    public var kind: Kind

    /// Makes the closing of `epoch`'s holding at `at` (ms since 1970), ended as `kind` says.
    public init(epoch: Int64, at: Int64, kind: Kind) {
        self.epoch = epoch
        self.at = at
        self.kind = kind
    }
}

/// The right to write under the writer lease: the epoch that fences a holder's writes, and the
/// bookkeeping of the holding, which the holder's first write records in its own transaction
/// (a turn of the lease costs no transaction of its own).
///
/// Only the writer lease mints one (`WriterLease` in BatonCoordinator, when it is granted the
/// lock): there is no public initializer, so code outside Baton cannot write to a
/// ``SharedStore`` without holding the lease. Give it to the store's `write(_:deadline:_:)`.
///
/// The first write commits only if the store's epoch is still the one seen when the lease was
/// granted (``previous``), or, when the lease took its epoch from the lock file's record without
/// reading the store, is still below ``epoch``; and only if the lock is still the one in place
/// (`stillHeld`, asked inside the transaction, which serializes with a takeover's). It then
/// closes the previous interval, starts ``epoch`` and appends its history row. Every later write commits only while the store's epoch
/// is ``epoch``. A holder frozen before its first write and taken over meanwhile can never
/// record or commit anything.
public final class LeaseFence: Sendable, Hashable, CustomStringConvertible {
    /// The store this holding may write to.
    let store: SharedStore
    /// The epoch every write of this holding is fenced by.
    public let epoch: Int64
    /// The name of the participant that holds the lease.
    public let holder: String
    /// The holder's process id.
    public let pid: Int32
    /// When the lease was granted (ms since 1970): the history row's `acquired`.
    public let granted: Int64
    /// The store's epoch when the lease was granted; nil when the lease did not read it (the
    /// holding's first write does).
    public let previous: Int64?
    /// How the interval of ``previous`` ends, when the lock file said (nil: at ``granted``, as
    /// taken over). With no ``previous``, how it ends if the last holder wrote.
    public let closing: LeaseClosing?
    /// With no ``previous``: how the interval of the store's epoch ends, given that epoch, as the
    /// lock file's record says.
    private let closingOf: (@Sendable (Int64) -> LeaseClosing?)?
    private let stillHeld: @Sendable () -> Bool
    private let recorded: Atomic<Bool>

    /// For the writer lease only.
    ///
    /// - Parameters:
    ///   - recorded: true when the holding is in the store already (a takeover records it in its
    ///     own transaction).
    ///   - stillHeld: whether the lock that grants this holding is still the one in place.
    package convenience init(
        store: SharedStore, epoch: Int64, holder: String, pid: Int32, granted: Int64, previous: Int64,
        closing: LeaseClosing?, recorded: Bool = false, stillHeld: @escaping @Sendable () -> Bool
    ) {
        self.init(
            store: store, epoch: epoch, holder: holder, pid: pid, granted: granted, previous: previous,
            closing: closing, closingOf: nil, recorded: recorded, stillHeld: stillHeld)
    }

    /// For the writer lease only: a holding whose epoch came from the lock file's record, one
    /// above the epoch its last holder took; the first write reads the store's epoch, which must
    /// be below it, and closes that epoch's interval as `closingOf` says.
    ///
    /// - Parameters:
    ///   - closing: how the last holder's interval ends if it wrote (for ``acquired``).
    ///   - closingOf: how the interval of a store epoch ends, as the lock file's record says.
    package convenience init(
        store: SharedStore, epoch: Int64, holder: String, pid: Int32, granted: Int64, closing: LeaseClosing?,
        closingOf: @escaping @Sendable (Int64) -> LeaseClosing?, stillHeld: @escaping @Sendable () -> Bool
    ) {
        self.init(
            store: store, epoch: epoch, holder: holder, pid: pid, granted: granted, previous: nil,
            closing: closing, closingOf: closingOf, recorded: false, stillHeld: stillHeld)
    }

    private init(
        store: SharedStore, epoch: Int64, holder: String, pid: Int32, granted: Int64, previous: Int64?,
        closing: LeaseClosing?, closingOf: (@Sendable (Int64) -> LeaseClosing?)?, recorded: Bool,
        stillHeld: @escaping @Sendable () -> Bool
    ) {
        self.store = store
        self.epoch = epoch
        self.holder = holder
        self.pid = pid
        self.granted = granted
        self.previous = previous
        self.closing = closing
        self.closingOf = closingOf
        self.stillHeld = stillHeld
        self.recorded = Atomic(recorded)
    }

    /// How the interval of `storeEpoch` ends, as this holding was told when granted: what a
    /// holding that never writes passes on to the next holder.
    package func closing(of storeEpoch: Int64) -> LeaseClosing? {
        let told = previous == nil ? closingOf?(storeEpoch) : closing
        return told?.epoch == storeEpoch ? told : nil
    }

    /// Whether the store has this holding (its first write committed).
    public var isRecorded: Bool { recorded.load(ordering: .acquiring) }

    /// When the holding began, as far as the lease knows: never before the release it followed.
    /// (Its history row can say later: a holding that followed no known release begins with its
    /// first write.)
    public var acquired: Int64 { max(granted, closing?.at ?? granted) }

    public var description: String { "epoch \(epoch) of '\(holder)' (pid \(pid))" }

    public static func == (lhs: LeaseFence, rhs: LeaseFence) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// Inside a write transaction: fails unless this holding may commit; records it first when
    /// it is not in the store yet.
    ///
    /// - Returns: true when this transaction records the holding (mark it once committed).
    func admit(_ transaction: StoreTransaction) throws -> Bool {
        // Read from the store in this transaction: another process may have moved it since.
        let current = try transaction.currentLeaseEpoch()
        if isRecorded {
            guard current == epoch else {
                throw StoreError(
                    .staleEpoch,
                    "the writer lease moved to epoch \(current) while this process held epoch \(epoch); nothing was written"
                )
            }
            return false
        }
        // Whether the lock is still the one in place is asked by ``confirm()``, later in the
        // same transaction: a lock that was replaced never comes back.
        let previous: Int64
        if let known = self.previous {
            guard current == known else {
                throw StoreError(
                    .staleEpoch,
                    "the writer lease moved (epoch \(current)) before this process recorded epoch \(epoch); nothing was written"
                )
            }
            previous = known
        } else {
            // The lock file's record gave an epoch above every one taken while the lock was
            // passed on: one at or above it was recorded by someone else since.
            guard current < epoch else {
                throw StoreError(
                    .staleEpoch,
                    "the store's lease epoch (\(current)) is not below epoch \(epoch), which this process took from the lock file; nothing was written"
                )
            }
            previous = current
        }
        // A release the lock file told of ends the interval before it when it happened. Without
        // one (the holder died, or the lock file was deleted under a holder that may still be
        // committing under its epoch until this transaction), it ends now: never before a
        // commit of its own.
        let closes =
            closing(of: previous) ?? LeaseClosing(epoch: previous, at: transaction.now, kind: .takenOver)
        try transaction.recordLeaseEpoch(
            epoch, name: holder, pid: pid, acquired: max(granted, closes.at), closing: closes)
        return true
    }

    /// Inside a write transaction, after its body: fails unless the lock is still the one in
    /// place (a lock file deleted or replaced while the body ran means another process may hold
    /// the lease now; the whole transaction rolls back).
    func confirm() throws {
        guard stillHeld() else {
            throw StoreError(
                .staleEpoch,
                "the writer lock file was replaced or deleted while epoch \(epoch)'s transaction ran; nothing was written"
            )
        }
    }

    func markRecorded() {
        recorded.store(true, ordering: .releasing)
    }
}
