package unwind

import (
	"sort"
	"strings"
)

// Tally counts unwinds by how they ended, and the failures by their reason with its addresses
// dropped (so that like failures count together): what an experiment says of its stacks.
type Tally struct {
	Complete, Truncated, Failed int64
	reasons                     map[string]int64
}

// Reason is a kind of failure and how many unwinds ended with it.
type Reason struct {
	Text string
	N    int64
}

// Add counts an unwind that ended with status, for reason when it failed.
func (t *Tally) Add(status Status, reason string) {
	switch status {
	case Complete:
		t.Complete++
	case Truncated:
		t.Truncated++
	default:
		t.Failed++
		if t.reasons == nil {
			t.reasons = map[string]int64{}
		}
		t.reasons[ReasonClass(reason)]++
	}
}

// Total is the number of unwinds counted.
func (t *Tally) Total() int64 { return t.Complete + t.Truncated + t.Failed }

// TopReasons lists the n most frequent failures, most frequent first (ties by text).
func (t *Tally) TopReasons(n int) []Reason {
	var all []Reason
	for r, c := range t.reasons {
		all = append(all, Reason{r, c})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].N > all[j].N || all[i].N == all[j].N && all[i].Text < all[j].Text })
	return all[:min(n, len(all))]
}

// ReasonClass drops the addresses from an unwind failure's reason.
func ReasonClass(reason string) string {
	f := strings.Fields(reason)
	for i, w := range f {
		if strings.HasPrefix(w, "0x") {
			f[i] = "ADDR"
		}
	}
	return strings.Join(f, " ")
}
