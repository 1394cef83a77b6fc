package analysis

import (
	"slices"
	"testing"
)

func TestCollectorRules(t *testing.T) {
	// Functions: 0 <Collector>, 1 user, 2 libc malloc, 3 kernel, 4 main.
	b := &builder{p: &Profile{Functions: []Function{
		{Name: CollectorName, Kind: FuncCollector}, {Name: "level5"}, {Name: "malloc"}, {Name: "do_syscall_64", Kind: FuncKernel}, {Name: "main"},
	}}}
	const c, user, libc, kern, main = 0, 1, 2, 3, 4
	for _, tc := range []struct {
		name     string
		in, want []int32 // leaf first
	}{
		{"no collector frame", []int32{libc, user, main}, []int32{libc, user, main}},
		{"interposer calling the real malloc", []int32{libc, c, user, main}, []int32{libc, user, main}},
		{"thread start wrapper at the root", []int32{user, c}, []int32{user}},
		{"recording, leaf in the library", []int32{c, c, c, user, main}, []int32{c, user, main}},
		{"recording, leaf in the kernel through libc", []int32{kern, libc, c, c, user, main}, []int32{c, user, main}},
		{"the interposer itself is the leaf", []int32{c, user, main}, []int32{c, user, main}},
		{"a real call that calls back into an interposer that records", []int32{c, c, libc, c, user, main}, []int32{c, libc, user, main}},
	} {
		var locs []location
		for _, f := range tc.in {
			locs = append(locs, location{fn: f})
		}
		var got []int32
		for _, l := range b.collectorRules(locs) {
			got = append(got, l.fn)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
