package analysis

import "path"

// CollectorName is the pseudo-function of the time the collector library (the preloaded
// libercollector.so of -H, -s, -i and the SIGPROF clock) spends in the target recording events.
const CollectorName = "<Collector>"

// collectorLibrary is the file name of the collector library.
const collectorLibrary = "libercollector.so"

// isCollector reports whether the load object at p is the collector library.
func isCollector(p string) bool { return path.Base(p) == collectorLibrary }

// collectorFunc is the <Collector> pseudo-function of the collector library, object obj.
func (b *builder) collectorFunc(obj int32) int32 {
	return b.function(funcKey{obj: obj, kind: FuncCollector}, CollectorName, 0)
}

// collectorRules takes the collector library's frames out of a stack (leaf first; every frame of
// the library is a <Collector> location) and returns what remains. An interposer that calls the
// function it interposes (malloc calling libc's malloc, a thread start or signal handler wrapper
// calling the program's function) is one frame of the library between two frames of others: it is
// dropped, so that the program's function calls the real one directly, as without er. Where the
// library does its own work (more than that one frame, or the leaf: recording an event, unwinding a
// stack, writing a block), that frame and every frame it calls are one <Collector> location: the
// cost of tracing, charged to the call that was traced.
func (b *builder) collectorRules(locs []location) []location {
	has := false
	for i := range locs {
		if b.p.Functions[locs[i].fn].Kind == FuncCollector {
			has = true
			break
		}
	}
	if !has {
		return locs
	}
	isC := func(i int) bool { return b.p.Functions[locs[i].fn].Kind == FuncCollector }
	// From the root: runs of the library's frames.
	for j := len(locs) - 1; j >= 0; j-- {
		if !isC(j) {
			continue
		}
		k := j // the run is locs[k..j], leafward to k
		for k > 0 && isC(k-1) {
			k--
		}
		if k > 0 && k == j {
			// One interposer frame calling another object's function: drop it.
			copy(locs[j:], locs[j+1:])
			locs = locs[:len(locs)-1]
			continue
		}
		// The library's own work: it and everything it calls become one location.
		return locs[j:]
	}
	return locs
}
