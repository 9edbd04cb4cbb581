import BatonCoordinator
import BatonStore
import Foundation

extension ChaosRun {
    /// A writer frozen by the run and left so for a few rounds.
    struct Frozen {
        var member: Member
        /// The round at whose start it is thawed.
        var thawRound: Int
        /// Its log's length when it was frozen.
        var mark: Int
    }

    /// The members that take part in the rounds: all but a frozen one.
    var active: [Member] { members.filter { $0 !== frozen?.member } }

    /// The lease term the participants run with (the participant's default).
    static let leaseTerm = Duration.seconds(2)

    /// The `freeze-writer` round: SIGSTOP the writer in the middle of its sync and leave it
    /// frozen; another member, sent to the foreground, must take the lease over within the
    /// term (plus a margin for a loaded machine) and settle the round. The frozen one is thawed
    /// 1-3 rounds later (``thawIfDue(round:)``).
    ///
    /// The signal follows the committed page as fast as the run can send it, but on a loaded
    /// machine the writer may already be inside the next page's write transaction: then SQLite's
    /// write lock is held, and the round is judged as a freeze inside a transaction
    /// (``expectNamedThenResumed(_:round:cgroup:frozenAt:)``).
    func freezeWriter(_ victim: Member, round: Int) async throws {
        let mark = victim.log.count
        try await stop(victim, round: round)
        let frozenAt = ContinuousClock.now
        if try ForeignWriteLock.isHeld(path: shared.storePath) {
            try await expectNamedThenResumed(victim, round: round, frozenAt: frozenAt)
            return
        }
        let peer = active.filter { $0 !== victim }.randomElement(using: &random)!
        let peerMark = peer.log.count
        frozen = Frozen(member: victim, thawRound: round + random.int(1...3), mark: mark)
        try arrange(foreground: [peer])
        handOvers += 1
        try await until(
            round: round, "\(peer.name) to take the lease over from the frozen \(victim.name)",
            timeout: Self.leaseTerm + .seconds(10)
        ) {
            peer.log.events().dropFirst(peerMark).contains { $0.event == "lease.takeover" }
        }
        let elapsed = ContinuousClock.now - frozenAt
        takeoverMillis.append(elapsed.inMilliseconds)
    }

    /// SIGSTOP, and wait until `/proc` shows the member stopped: the lifecycle change that
    /// follows must never reach it still running. A signal that cannot be sent, or a member
    /// that does not stop, fails the run by name rather than as a takeover that never came.
    func stop(_ victim: Member, round: Int) async throws {
        let pid = victim.pid
        guard await victim.process?.send(SIGSTOP) == true else {
            throw ChaosViolation(
                round: round, invariant: "harness",
                detail: "SIGSTOP could not be sent to \(victim.name) (pid \(pid))")
        }
        let stopped = await finishes(within: .seconds(10)) {
            while ProcessState.of(pid) != .stopped {
                try? await Task.sleep(for: .milliseconds(1))  // wait-ok: polling /proc, bounded
            }
        }
        guard stopped else {
            throw ChaosViolation(
                round: round, invariant: "harness",
                detail: "\(victim.name) (pid \(pid)) was sent SIGSTOP but /proc says \(ProcessState.of(pid))")
        }
    }

    /// The `freeze-writer-in-transaction` round: the writer stops itself inside its next page's
    /// write transaction (its storage-fault file says `stop-in-transaction`), so SQLite's write
    /// lock stays held; with `--freezer cgroup` it is then frozen by the v1 cgroup freezer
    /// instead. A peer sent to the foreground must say by name what blocks it, in its log and
    /// its published status; then the participants' frozen-holder policy is judged
    /// (``expectNamedThenResumed(_:round:cgroup:frozenAt:)``).
    func freezeInTransaction(_ victim: Member, round: Int) async throws {
        try Data("stop-in-transaction\n".utf8).write(to: URL(fileURLWithPath: diskFullPath), options: .atomic)
        let pid = victim.pid
        // A process's stop has no event to wait on: look at /proc every 10 ms.
        let stopped = await finishes(within: .seconds(30)) {
            while ProcessState.of(pid) != .stopped {
                try? await Task.sleep(for: .milliseconds(10))  // wait-ok: polling /proc, bounded
            }
        }
        try? FileManager.default.removeItem(atPath: diskFullPath)  // gone already: nothing to undo
        guard stopped else {
            // Its sync ended before another page: nothing was frozen this round.
            missedFreezes += 1
            return
        }
        let frozenAt = ContinuousClock.now
        var cgroup: ChaosFreezer.Cgroup?
        if options.freezer == .cgroup { cgroup = try await freezeByCgroup(victim, round: round) }
        defer { cgroup?.release(pid) }
        try await expectNamedThenResumed(victim, round: round, cgroup: cgroup, frozenAt: frozenAt)
    }

    /// Moves `victim`, stopped inside its transaction, into a freezer cgroup of its own that is
    /// frozen, then sends SIGCONT: the freezer keeps it from running (the kernel shows it in
    /// uninterruptible sleep).
    func freezeByCgroup(_ victim: Member, round: Int) async throws -> ChaosFreezer.Cgroup {
        let pid = victim.pid
        let cgroup = try ChaosFreezer.Cgroup.freeze(pid)
        await victim.process?.send(SIGCONT)
        let frozen = await finishes(within: .seconds(10)) {
            while ProcessState.of(pid) != .hung {
                try? await Task.sleep(for: .milliseconds(1))  // wait-ok: polling /proc, bounded
            }
        }
        guard frozen else {
            cgroup.release(pid)
            throw ChaosViolation(
                round: round, invariant: "harness",
                detail:
                    "\(victim.name) (pid \(pid)) was frozen by \(cgroup.path) but /proc says \(ProcessState.of(pid))"
            )
        }
        return cgroup
    }

    /// A writer stopped or frozen inside a write transaction: a peer sent to the foreground
    /// must say by name what blocks it, in its log and its published status. Then, by the
    /// participants' policy: `wait`, the run resumes it; `thaw`, the peer resumes it itself;
    /// `kill`, the peer kills it (the run starts it again, an app relaunch). Either way the
    /// peer gets the lease, and a resumed writer steps down.
    /// Under `thaw` and `kill`, the time from `frozenAt` (the victim seen stopped) to the peer's
    /// lease, its first write, is kept: the wedge's length.
    func expectNamedThenResumed(
        _ victim: Member, round: Int, cgroup: ChaosFreezer.Cgroup? = nil, frozenAt: ContinuousClock.Instant
    ) async throws {
        let pid = victim.pid
        let peer = active.filter { $0 !== victim }.randomElement(using: &random)!
        let peerMark = peer.log.count
        let victimMark = victim.log.count
        try arrange(foreground: [peer])
        handOvers += 1
        let named = "\(victim.name) (pid \(pid))"
        @Sendable func names(_ problem: String?) -> Bool {
            (problem ?? "").contains(named) && (problem ?? "").contains("inside a write transaction")
        }
        // Under thaw and kill the policy may act at the first block (the holder was silent past
        // the bound already), and the problem leaves the status as soon as the lease moves: the
        // log must name it. Under wait it stays named in the status too.
        let policy = options.frozenHolder
        try await until(
            round: round, "\(peer.name) to name \(victim.name) frozen inside a write transaction",
            timeout: Self.leaseTerm + FrozenHolder.standard.bound + .seconds(10)
        ) { [shared] in
            peer.log.events().dropFirst(peerMark).contains {
                $0.event == "lease.blocked" && names($0["problem"]?.stringValue)
            }
                && (policy != .wait
                    || ParticipantStatus.readAll(in: shared).contains {
                        $0.name == peer.name && names($0.problem)
                    })
        }
        blockedDiagnoses += 1
        if policy == .wait {
            cgroup?.thaw()
            await victim.process?.send(SIGCONT)
        } else {
            try await until(round: round, "\(peer.name) to \(policy.rawValue) the frozen \(victim.name)") {
                peer.log.events().dropFirst(peerMark).contains {
                    $0.event == "lease.blocked"
                        && ($0["problem"]?.stringValue ?? "").contains("policy \(policy.rawValue):")
                }
            }
            policyActs += 1
        }
        // The takeover completes once the transaction ends (committed, or rolled back by the
        // kill), or the victim, told it is in the background, releases first.
        try await until(round: round, "\(peer.name) to hold the lease once \(victim.name) was let go") {
            peer.log.events().dropFirst(peerMark).contains { $0.event == "lease.acquired" }
        }
        if policy != .wait {
            frozenInTransactionMillis.append((ContinuousClock.now - frozenAt).inMilliseconds)
        }
        if policy == .kill {
            await victim.process?.wait()
            kills += 1
            try await start(victim)
            return
        }
        try await untilSteppedDown(victim, after: victimMark, round: round)
        thawed += 1
    }

    /// Thaws the frozen member when its round has come (or when too few members are left to
    /// play a round without it), and waits for it to step down: it logs the lost lease, and its
    /// status no longer says writer.
    func thawIfDue(round: Int, force: Bool = false) async throws {
        guard let frozen, force || round >= frozen.thawRound || active.count < 2 else { return }
        self.frozen = nil
        await frozen.member.process?.send(SIGCONT)
        try await untilSteppedDown(frozen.member, after: frozen.mark, round: round)
        thawed += 1
    }

    /// Waits until the thawed `member` has logged losing the lease (or releasing it: one frozen
    /// while it was already handing over finishes that first) and no longer says it writes.
    func untilSteppedDown(_ member: Member, after mark: Int, round: Int) async throws {
        try await until(round: round, "the thawed \(member.name) to step down") { [shared] in
            member.log.events().dropFirst(mark).contains {
                $0.event == "lease.lost" || $0.event == "lease.lockLost"
                    || $0.event == "lease.released"
            }
                && ParticipantStatus.readAll(in: shared).contains {
                    $0.name == member.name && $0.pid == member.pid && !$0.isWriter && $0.phase != .fenced
                        && $0.phase != .releasing
                }
        }
    }

    /// Every takeover logged since the last look: counted, and a violation when its holder was
    /// not stopped (or hung) when it was taken over: a live holder must never lose the lease.
    func checkTakeovers(round: Int) throws {
        for member in members {
            let events = member.log.events()
            let seen = takeoversScanned[member.name] ?? 0
            takeoversScanned[member.name] = events.count
            let found = Self.takeovers(in: events.dropFirst(seen))
            takeovers += found.count
            if let live = found.first(where: { !$0.holderWasFrozen }) {
                falseTakeovers += 1
                throw ChaosViolation(
                    round: round, invariant: "no takeover of a live holder",
                    detail:
                        "\(member.name) took epoch \(live.epoch) over from \(live.holder), which was \(live.holderState)"
                )
            }
        }
    }

    /// A `lease.takeover` a participant logged.
    struct Takeover: Equatable {
        var epoch: Int64
        var holder: String
        var holderState: String
        /// Stopped in the kernel or hung: the only holders that may be taken over.
        var holderWasFrozen: Bool { holderState == "stopped" || holderState == "hung" }
    }

    /// The takeovers among `events`.
    static func takeovers(in events: some Sequence<JSONObject>) -> [Takeover] {
        events.filter { $0.event == "lease.takeover" }.map {
            Takeover(
                epoch: $0["from"]?.intValue ?? 0, holder: $0["holder"]?.stringValue ?? "?",
                holderState: $0["holderState"]?.stringValue ?? "unknown")
        }
    }
}
