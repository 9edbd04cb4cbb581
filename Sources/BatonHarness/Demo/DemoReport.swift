import BatonCoordinator
import BatonStore
import Foundation
import Logging

/// A self-contained HTML page (inline SVG and CSS, no network) with the run's timeline: a lane
/// per participant showing when it held the lease, its lifecycle changes, and its syncs'
/// progress over time; the summary below.
public struct DemoReport {
    let run: DemoRun
    let summary: DemoSummary

    public init(run: DemoRun, summary: DemoSummary) {
        self.run = run
        self.summary = summary
    }

    public func write(to path: String) throws {
        let shared = try run.directory
        let store = try SharedStore.open(
            directory: shared, create: false, logger: Logger(label: "baton.demo"))
        let history = try LeaseHistory.read(store: store, directory: shared)
        let names = ["host", "ext"]
        let logs = Dictionary(uniqueKeysWithValues: names.map { ($0, DemoRun.readLog(shared, $0)) })
        let walls = logs.values.flatMap { $0.compactMap { $0["wall"]?.intValue } } + history.map(\.acquired)
        let start = min(run.startedWall, walls.min() ?? run.startedWall)
        let end = max(walls.max() ?? start + 1, start + 1)
        let width = 1000.0
        let left = 90.0
        let laneHeight = 110.0
        func x(_ wall: Int64) -> Double {
            left + (width - left - 10) * Double(wall - start) / Double(end - start)
        }

        var svg = ""
        for (index, name) in names.enumerated() {
            let top = 30 + Double(index) * (laneHeight + 20)
            svg += "<text x=\"8\" y=\"\(top + 20)\" class=\"lane\">\(name)</text>"
            svg +=
                "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(width - left - 10)\" height=\"\(laneHeight)\" class=\"bg\"/>"
            for record in history where record.name == name {
                let x0 = x(record.acquired)
                let x1 = x(record.released ?? end)
                svg +=
                    "<rect x=\"\(f(x0))\" y=\"\(top)\" width=\"\(f(max(1, x1 - x0)))\" height=\"14\" class=\"lease\"><title>epoch \(record.epoch): \(name) holds the baton</title></rect>"
                svg +=
                    "<text x=\"\(f(x0 + 3))\" y=\"\(top + 11)\" class=\"small light\">epoch \(record.epoch)</text>"
            }
            let events = logs[name] ?? []
            for event in events where event["event"] == "lifecycle" {
                guard let wall = event["wall"]?.intValue, let state = event["state"]?.stringValue else {
                    continue
                }
                let cls = state == "foreground" ? "fg" : "bgmark"
                svg +=
                    "<line x1=\"\(f(x(wall)))\" x2=\"\(f(x(wall)))\" y1=\"\(top)\" y2=\"\(top + laneHeight)\" class=\"\(cls)\"/>"
                svg +=
                    "<text x=\"\(f(x(wall) + 3))\" y=\"\(top + laneHeight - 4)\" class=\"small\">\(state)</text>"
            }
            // Each sync's progress (0–100 %) during each of its runs in this lane.
            var runs: [String: [[(Int64, Int64)]]] = [:]
            var open: [String: [(Int64, Int64)]] = [:]
            for event in events where event["event"] == "sync" {
                guard let wall = event["wall"]?.intValue, let progress = event["progress"]?.intValue,
                    let status = event["status"]?.stringValue, status != "new"
                else { continue }
                let sync = event["name"]?.stringValue ?? "?"
                open[sync, default: []].append((wall, progress))
                if status != "running" {
                    runs[sync, default: []].append(open[sync] ?? [])
                    open[sync] = nil
                }
            }
            for (sync, points) in open { runs[sync, default: []].append(points) }
            for (syncIndex, sync) in runs.keys.sorted().enumerated() {
                for points in runs[sync] ?? [] where !points.isEmpty {
                    let plot = points.map {
                        "\(f(x($0.0))),\(f(top + laneHeight - 18 - Double($0.1) * (laneHeight - 36) / 100))"
                    }
                    svg +=
                        "<polyline points=\"\(plot.joined(separator: " "))\" class=\"progress p\(syncIndex % 3)\"><title>\(sync) progress</title></polyline>"
                }
                svg +=
                    "<text x=\"\(f(width - 120))\" y=\"\(top + 28 + Double(syncIndex) * 12)\" class=\"small legend p\(syncIndex % 3)t\">— \(escape(sync))</text>"
            }
        }
        let axisY = 30 + Double(names.count) * (laneHeight + 20)
        for tick in 0...5 {
            let wall = start + (end - start) * Int64(tick) / 5
            svg +=
                "<text x=\"\(f(x(wall)))\" y=\"\(axisY)\" class=\"small\" text-anchor=\"middle\">\(String(format: "%.1f s", Double(wall - start) / 1000))</text>"
        }
        let rows = summary.checks.map { check in
            "<tr class=\"\(check.passed ? "ok" : "bad")\"><td>\(check.passed ? "✔" : "✘")</td><td>\(escape(check.name))</td><td>\(escape(check.detail))</td></tr>"
        }.joined()
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Baton demo</title>
            <style>
            body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
            h1 { font-size: 20px; } .lane { font-weight: 600; font-size: 14px; }
            .bg { fill: #f6f7f9; stroke: #dde; } .lease { fill: #2f7d4f; } .small { font-size: 10px; fill: #555; }
            .light { fill: #fff; } .fg { stroke: #2a6; stroke-dasharray: 4 3; } .bgmark { stroke: #c44; stroke-dasharray: 4 3; }
            .progress { fill: none; stroke-width: 2; } .p0 { stroke: #2563eb; } .p1 { stroke: #d97706; } .p2 { stroke: #7c3aed; }
            .p0t { fill: #2563eb; } .p1t { fill: #d97706; } .p2t { fill: #7c3aed; }
            table { border-collapse: collapse; margin-top: 16px; } td { padding: 4px 10px; border-bottom: 1px solid #eee; }
            .ok td:first-child { color: #2a6; } .bad td:first-child { color: #c22; }
            </style></head><body>
            <h1>Baton demo: \(summary.passed ? "all checks passed" : "checks FAILED")</h1>
            <p>\(run.records) records, batch size \(run.batchSize). Green bars: who holds the baton (the writer lease);
            dashed lines: lifecycle signals (green foreground, red background); lines: sync progress (0–100 %).</p>
            <svg width="\(Int(width))" height="\(Int(axisY + 10))" viewBox="0 0 \(Int(width)) \(Int(axisY + 10))">\(svg)</svg>
            <table>\(rows)</table>
            </body></html>
            """
        try Data(html.utf8).write(to: URL(fileURLWithPath: path))
    }

    func f(_ value: Double) -> String { String(format: "%.1f", value) }

    func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(
                of: ">", with: "&gt;")
    }
}
