// Package task is lazy's task model: the records a task is made of
// (task.json's Task, the Session, Turns, Comments, the Op each change
// applies), the Snapshot an operation changes, the shapes every surface
// prints (Summary, Detail, Spending) and a listing's Entry, and the
// rules that belong to them: ids and slugs, the validation of a record
// that arrives from a remote, the bounds of its figures, clipping its
// texts. It also holds the errors a store reports (ErrNotFound,
// ErrExists, AmbiguousError, CorruptError) and the Store port the
// operations work on.
//
// It knows no storage: gitstore implements Store over git refs, and a
// snapshot reads its long parts on demand through the Source a store
// binds to it. So surfaces and capabilities import task for the types,
// and only what wires a repository up imports a store.
package task
