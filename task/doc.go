// Package task is lazy's task model: the records a task is made of
// (task.json's Task, the Session, Turns, Comments, the Op each change
// applies), the Snapshot an operation changes, the shapes every surface
// prints (Summary, Detail, Spending) and a listing's Entry, and the
// rules that belong to them: ids and slugs, the validation of a record
// that arrives from a remote, the bounds of its figures, clipping its
// texts. It also holds the errors a store reports (ErrNotFound,
// ErrExists, AmbiguousError, CorruptError) and the Store port the
// operations work on, with the rules every store follows alike, so no
// implementation has its own: a create's id and slug (NewTaskID,
// SettleSlug, NewRecord), what a write checks and stamps (Seal), the
// compare-and-swap loop that applies an operation again after a lost
// race (RunUpdate), how a typed name resolves (Resolve), and the size of
// each part of a record (EncodePart).
//
// It knows no storage: gitstore implements Store over git refs and
// memstore in memory, both held to one suite (task/storetest), and a
// snapshot reads its long parts on demand through the Source a store
// binds to it. So surfaces and capabilities import task for the types,
// and only what wires a repository up imports a store.
package task
