import Testing

/// The end-to-end suites that start several processes and a server: they run one after another
/// (not beside each other), so a 2-core CI machine is not asked to run dozens of processes at
/// once and their bounded waits keep a wide margin.
@Suite(.serialized) enum HeavyEndToEnd {}
