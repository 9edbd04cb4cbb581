import NotesKit

// The share extension: a note added from the share sheet waits for the lease, then syncs up.
await NotesApp.main(name: "share", role: .appExtension)
