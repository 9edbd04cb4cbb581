import NotesKit

// The host app: the higher priority, so it gets the lease back when it comes to the foreground.
await NotesApp.main(name: "host", role: .host)
