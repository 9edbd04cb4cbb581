import BatonStore
import BatonTestSupport
import Foundation
import Testing

/// `/proc/locks` read by ``LockHolders``: the parser on lines captured from a real kernel (6.18,
/// device fe:00 = `st_dev` 65024), and the lock files' bounded wait naming the holder.
@Suite("Lock holders from /proc/locks")
struct LockHoldersTests {
    /// `/proc/locks` while `flock /tmp/x sleep 3` held /tmp/x (inode 16220936), `flock /tmp/x
    /// true` and `flock -s /tmp/x true` waited for it, and a Python process held a `lockf` lock on
    /// /tmp/y (16220994) and an open file description read lock on /tmp/z (16221094).
    static let captured = """
        1: POSIX  ADVISORY  WRITE 7830 fe:00:5310268 1073741824 1073742335
        2: FLOCK  ADVISORY  WRITE 7830 fe:00:16220266 0 EOF
        3: FLOCK  ADVISORY  WRITE 7826 fe:00:16223396 0 EOF
        4: OFDLCK ADVISORY  READ -1 fe:00:16221094 0 EOF
        5: POSIX  ADVISORY  WRITE 8030 fe:00:16220994 0 EOF
        6: FLOCK  ADVISORY  WRITE 8015 fe:00:16220936 0 EOF
        6: -> FLOCK  ADVISORY  WRITE 8021 fe:00:16220936 0 EOF
        6:  -> FLOCK  ADVISORY  READ 8023 fe:00:16220936 0 EOF

        """
    static let device: UInt64 = 65024

    @Test("the holder of an flock is listed; its waiters (->) are not")
    func flockHolder() {
        #expect(
            LockHolders.parse(Self.captured, device: Self.device, inode: 16_220_936) == [
                LockHolder(pid: 8015, kind: .flock, access: .write)
            ])
    }

    @Test("POSIX and open file description locks, the latter with no pid")
    func otherKinds() {
        #expect(
            LockHolders.parse(Self.captured, device: Self.device, inode: 16_220_994) == [
                LockHolder(pid: 8030, kind: .posix, access: .write)
            ])
        let ofd = LockHolders.parse(Self.captured, device: Self.device, inode: 16_221_094)
        #expect(ofd == [LockHolder(pid: -1, kind: .openFileDescription, access: .read)])
        #expect(ofd.first?.knownPid == nil)
        #expect(ofd.first?.description == "an open file description lock (the kernel names no process)")
    }

    /// `/proc/locks` for a store's `-shm` (inode 16226464) while Python's sqlite3 held a write
    /// transaction in WAL mode (pid 14359) and another of its connections a read transaction.
    static let walCaptured = """
        1: POSIX  ADVISORY  WRITE 14359 fe:00:16226464 120 120
        2: POSIX  ADVISORY  READ 14359 fe:00:16226464 124 124
        3: POSIX  ADVISORY  READ 14359 fe:00:16226464 128 128
        4: POSIX  ADVISORY  WRITE 222 fe:00:16226464 0 EOF
        5: POSIX  ADVISORY  WRITE 333 fe:00:16226465 120 120
        6: POSIX  ADVISORY  WRITE 444 fe:00:16226464 121 127
        7: -> POSIX  ADVISORY  WRITE 555 fe:00:16226464 120 120

        """

    @Test("the WAL write lock: a POSIX write lock covering byte 120 of the -shm, not a waiter, not a read")
    func walWriters() {
        #expect(LockHolders.walWriteLockByte == 120)
        #expect(
            LockHolders.posixWriters(
                covering: 120, in: Self.walCaptured, device: Self.device, inode: 16_226_464)
                == [14359, 222])
        // After the commit only the read locks are left: nobody writes.
        let committed = Self.walCaptured.split(separator: "\n").filter { !$0.contains(" WRITE ") }
            .joined(separator: "\n")
        #expect(
            LockHolders.posixWriters(covering: 120, in: committed, device: Self.device, inode: 16_226_464)
                .isEmpty)
        #expect(
            LockHolders.posixWriters(covering: 120, in: "", device: Self.device, inode: 16_226_464).isEmpty)
    }

    @Test("another device or inode, and lines that do not parse, list nobody")
    func noMatch() {
        #expect(LockHolders.parse(Self.captured, device: Self.device + 1, inode: 16_220_936).isEmpty)
        #expect(LockHolders.parse(Self.captured, device: Self.device, inode: 1).isEmpty)
        #expect(LockHolders.parse("", device: Self.device, inode: 16_220_936).isEmpty)
        let junk =
            "6: FLOCK ADVISORY WRITE\nFLOCK  ADVISORY  WRITE 1 fe:00:16220936 0 EOF\n"
            + "6: LEASE  ACTIVE    READ 12 fe:00:16220936 0 EOF\n6: FLOCK  ADVISORY  WRITE x fe:00:16220936 0 EOF"
        #expect(LockHolders.parse(junk, device: Self.device, inode: 16_220_936).isEmpty)
    }

    @Test("major and minor numbers are hexadecimal, split from st_dev as glibc does")
    func deviceNumbers() {
        // Major 0x103, minor 0x2 (st_dev 0x10302); major 8, minor 0x1f0 (st_dev 0x1008f0).
        let line = "1: FLOCK  ADVISORY  WRITE 7 103:02:99 0 EOF\n2: POSIX  ADVISORY  READ 9 08:1f0:99 0 EOF"
        #expect(LockHolders.parse(line, device: 0x10302, inode: 99).map(\.pid) == [7])
        #expect(LockHolders.parse(line, device: 0x1008f0, inode: 99).map(\.pid) == [9])
    }

    @Test("a holder's command: its command line with spaces, else its comm name")
    func command() {
        let cmdline = Array("flock\0/d/setup.lock\0sleep\u{0}30\0".utf8)
        #expect(LockHolders.command(cmdline: cmdline, comm: "flock\n") == "flock /d/setup.lock sleep 30")
        #expect(LockHolders.command(cmdline: [], comm: "kworker\n") == "kworker")
        #expect(LockHolders.command(cmdline: nil, comm: nil) == nil)
        let long = LockHolders.command(cmdline: Array(String(repeating: "a", count: 400).utf8), comm: nil)
        #expect(long?.count == 160)
        #expect(long?.hasSuffix("…") == true)
        let holder = LockHolder(
            pid: 42, kind: .flock, access: .write, command: "flock /d/setup.lock sleep 30")
        #expect(LockHolders.heldBy([holder]) == "held by pid 42 (flock /d/setup.lock sleep 30)")
        #expect(LockHolders.heldBy([LockHolder(pid: 42, kind: .flock, access: .write)]) == "held by pid 42")
        #expect(LockHolders.heldBy(nil).contains("/proc/locks could not be read"))
    }

    @Test("this process's own flock, as the kernel lists it now, with its command")
    func liveHolder() throws {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        let lock = try FileLock(path: shared.path + "/held.lock", in: shared)
        try lock.lock()
        let holders = try #require(LockHolders.current(at: lock.path))
        #expect(holders.map(\.pid) == [getpid()])
        #expect(holders.first?.kind == .flock)
        #expect(holders.first?.command?.isEmpty == false)
        lock.unlock()
        // A file nobody locked has no holder; none at all is nil.
        let free = try FileLock(path: shared.path + "/free.lock", in: shared)
        #expect(LockHolders.current(at: free.path) == [])
        #expect(LockHolders.current(at: shared.path + "/missing.lock") == nil)
    }

    @Test("a lock held elsewhere is waited for within the timeout, then refused naming path and holder")
    func boundedWait() throws {
        let temp = try TemporaryDirectory()
        let shared = try SharedDirectory(path: temp.path + "/d")
        let path = shared.setupLockPath
        let holder = try FileLock(path: path, in: shared)
        try holder.lock()
        let waiter = try FileLock(path: path, in: shared)
        let clock = ContinuousClock()
        let started = clock.now
        let error = try #require(throws: StoreError.self) { try waiter.lock(timeout: .milliseconds(200)) }
        let waited = clock.now - started
        #expect(waited >= .milliseconds(200) && waited < .seconds(5), "\(waited)")
        #expect(error.code == .busy)
        #expect(error.message.hasPrefix("\(path) is held by pid \(getpid()) ("), "\(error.message)")
        #expect(error.message.contains("did not let it go within 0.2s"), "\(error.message)")
        // Let go, it is taken (a child process spawned meanwhile by a test beside this one may
        // hold a copy of the descriptor until it execs: hence a timeout, not a single try).
        holder.unlock()
        try waiter.lock(timeout: .seconds(5))
        waiter.unlock()
    }
}
