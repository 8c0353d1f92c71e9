package backend

// # Bug zoo
//
// The backend carries planted bugs for the "prove it" measurements
// (docs/ZOO.md, package broken/zoo). Each bug is one or two one-line
// branches of the form `if zoo == "<name>" { … }` at a decision point
// (cutHere, foldRow, attemptAccess, commit, hasEvidence, …). The constant zoo
// is set by exactly one file:
//
//   - zoo_<name>.go, built only with the tag zoo_<name>, sets it to <name>;
//   - zoo_off.go, built without any zoo tag, sets it to "".
//
// In a normal build every zoo branch is `if "" == "<name>"`, constant false,
// so the compiler removes it and behaviour is the untouched backend's. Two
// zoo tags at once do not compile (zoo is declared twice).

// ZooBug names the planted bug compiled into this build; "" in every normal
// build. Test drivers use it to check that the tag they asked for took.
func ZooBug() string { return zoo }

// zooAnswer finishes a shutdown at once with no labels: the planted
// hold_early bug. It is unreachable in a normal build.
func (b *Backend) zooAnswer() {
	b.shut.finished = true
	waiters := b.shut.waiters
	b.shut.waiters = nil
	b.rt.Post(b.cfg.Name+"/shutdown-done", func() {
		b.flush()
		for _, w := range waiters {
			w(nil)
		}
	})
}
