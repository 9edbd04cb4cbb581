import BatonJSON
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import SOQL

/// Answers a request the HTTP decoder refuses before any route sees it — a request line or
/// headers longer than ``maxRequestHead``, or bytes that are not HTTP — with a Salesforce-shaped
/// error, where the framework would answer `400` with an empty body: a client then reads why,
/// as from every other error of this server.
///
/// Too long is `431 REQUEST_HEADER_FIELDS_TOO_LARGE`: Salesforce answers 431 when the URI and
/// headers together pass its limit (414 when the URI alone does; the decoder does not say which
/// of the two overflowed, and both are then too long together). Anything else the decoder
/// refuses in a request line or headers is `400 BAD_REQUEST`. The answer goes out after the
/// responses to requests already read, and the connection then closes: nothing more can be read
/// from it. An error inside a request's body goes to that request's handler, as before.
final class UndecodableRequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        case reading
        /// Refused; the answer waits for the responses still owed.
        case refused(SalesforceError)
        /// Answered; what still arrives is dropped until the client closes.
        case answered
        /// The decoder failed inside a request's body: the error went to that request's
        /// handler, as it would without this handler, and everything passes through.
        case passedOn
    }

    private var state = State.reading
    /// Requests read whose response has not ended yet.
    private var responsesOwed = 0
    /// A request's head was read and its end not yet.
    private var inBody = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .reading:
            switch unwrapInboundIn(data) {
            case .head:
                responsesOwed += 1
                inBody = true
            case .end: inBody = false
            case .body: break
            }
            context.fireChannelRead(data)
        case .passedOn: context.fireChannelRead(data)
        case .refused, .answered: break
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let isEnd = if case .end = unwrapOutboundIn(data) { true } else { false }
        context.write(data, promise: promise)
        guard isEnd else { return }
        responsesOwed -= 1
        if responsesOwed == 0, case .refused(let error) = state { answer(error, context: context) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch state {
        case .reading:
            guard !inBody, let refusal = Self.refusal(for: error) else {
                if inBody { state = .passedOn }
                context.fireErrorCaught(error)
                return
            }
            state = .refused(refusal)
            if responsesOwed == 0 { answer(refusal, context: context) }
        case .passedOn:
            context.fireErrorCaught(error)
        case .refused, .answered:
            // The decoder goes on failing on every byte after its first error.
            break
        }
    }

    /// The answer to a decoder error; nil for an error that is not the decoder's.
    static func refusal(for error: any Error) -> SalesforceError? {
        let parserError: HTTPParserError
        switch error {
        case let error as HTTPParserError: parserError = error
        case ByteToMessageDecoderError.dataReceivedInErrorState(let error as HTTPParserError, _):
            parserError = error
        default: return nil
        }
        if parserError == .headerOverflow {
            return SalesforceError(
                status: 431, "REQUEST_HEADER_FIELDS_TOO_LARGE",
                "The request line and headers are longer than \(maxRequestHead) bytes. Send a shorter URL (a SOQL query or SOSL search is at most \(SOQLQuery.maxLength) characters) or smaller headers."
            )
        }
        return SalesforceError(
            status: 400, "BAD_REQUEST", "The request is not valid HTTP/1.1: \(parserError)")
    }

    /// Writes `error` as the last response and closes the connection's output; input is read and
    /// dropped until the client closes, so the answer is not lost to a reset.
    private func answer(_ error: SalesforceError, context: ChannelHandlerContext) {
        state = .answered
        let body = ByteBuffer(string: JSONValue.array([error.element]).jsonText(sortedKeys: false))
        var fields = HTTPFields()
        fields[.contentType] = "application/json;charset=UTF-8"
        fields[.contentLength] = "\(body.readableBytes)"
        fields[.connection] = "close"
        let head = HTTPResponse(status: .init(code: error.status), headerFields: fields)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            channel.close(mode: .output, promise: nil)
        }
    }
}
