import BatonREST

/// The Salesforce error code `call` failed with (`nil` if it did not fail; the error's text for
/// anything but a server error).
func errorCode(_ call: () async throws -> Void) async -> String? {
    do {
        try await call()
        return nil
    } catch let error as RESTError {
        return error.errorCode
    } catch {
        return "\(error)"
    }
}
