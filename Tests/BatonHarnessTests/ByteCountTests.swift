import BatonHarness
import Testing

@Suite("Byte counts")
struct ByteCountTests {
    @Test(
        "sizes parse as bytes or with K, M, G (powers of 1024)",
        arguments: [
            ("65536", Int64(65536)), ("64K", 65536), ("64k", 65536), ("8M", 8 << 20), ("8MiB", 8 << 20),
            ("1G", 1 << 30), ("2kb", 2048), ("0", 0),
        ])
    func parses(text: String, bytes: Int64) {
        #expect(ByteCount.parse(text) == bytes)
    }

    @Test("anything else is refused", arguments: ["", "M", "-1", "+5", "1.5M", "8T", "8 M", "99999999999G"])
    func refuses(text: String) {
        #expect(ByteCount.parse(text) == nil)
    }

    @Test("sizes print as people read them")
    func text() {
        #expect(ByteCount.text(812) == "812 B")
        #expect(ByteCount.text(65536) == "64.0 KiB")
        #expect(ByteCount.text(8 << 20) == "8.0 MiB")
        #expect(ByteCount.text(1_288_490_189) == "1.2 GiB")
    }
}
