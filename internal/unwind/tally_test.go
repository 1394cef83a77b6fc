package unwind

import "testing"

// TestTally: unwinds counted by status, failures by their reason less its addresses, the most
// frequent first.
func TestTally(t *testing.T) {
	if got := ReasonClass("no CFI for pc 0x7f12 in /lib/x.so at 0x10"); got != "no CFI for pc ADDR in /lib/x.so at ADDR" {
		t.Errorf("ReasonClass = %q", got)
	}
	var tl Tally
	tl.Add(Complete, "")
	tl.Add(Truncated, "")
	for _, r := range []string{"a at 0x1", "c", "c", "a at 0x2", "b", "c"} {
		tl.Add(Failed, r)
	}
	if tl.Complete != 1 || tl.Truncated != 1 || tl.Failed != 6 || tl.Total() != 8 {
		t.Errorf("tally %+v", tl)
	}
	got := tl.TopReasons(2)
	if len(got) != 2 || got[0] != (Reason{"c", 3}) || got[1] != (Reason{"a at ADDR", 2}) {
		t.Errorf("TopReasons = %v, want c (3), a at ADDR (2)", got)
	}
	if len(tl.TopReasons(10)) != 3 {
		t.Errorf("TopReasons(10) = %v", tl.TopReasons(10))
	}
}
