package perfabi

// Call chain context markers (PERF_CONTEXT_*, as unsigned words): the entries
// after ContextKernel are kernel addresses, after ContextUser user addresses.
// Every entry >= ContextMax is a marker.
const (
	ContextKernel uint64 = 1<<64 - 128
	ContextUser   uint64 = 1<<64 - 512
	ContextMax    uint64 = 1<<64 - 4095
)

// isContext reports whether a call chain entry is a PERF_CONTEXT_* marker.
func isContext(v uint64) bool {
	return v >= ContextMax
}

// SplitCallchain splits a raw call chain into its kernel and user parts, leaf
// first, dropping the PERF_CONTEXT_* markers and any guest or hypervisor
// frames. Entries before the first marker are placed by address (kernel
// addresses have the top bit set). The results are new slices.
func SplitCallchain(cc []uint64) (kernel, user []uint64) {
	ctx := uint64(0) // 0: no marker seen yet
	for _, v := range cc {
		if isContext(v) {
			ctx = v
			continue
		}
		switch {
		case ctx == ContextKernel || ctx == 0 && v>>63 == 1:
			kernel = append(kernel, v)
		case ctx == ContextUser || ctx == 0:
			user = append(user, v)
		}
	}
	return kernel, user
}
