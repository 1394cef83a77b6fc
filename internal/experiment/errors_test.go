package experiment

import "testing"

func TestFormatErrorMessage(t *testing.T) {
	tests := []struct {
		e    FormatError
		want string
	}{
		{FormatError{File: "x.er/stacks", Offset: 48, Msg: "bad block magic", Hint: "truncate it"}, "x.er/stacks: offset 48: bad block magic (truncate it)"},
		{FormatError{File: "x.er/map.xml", Offset: -1, Msg: "no format version"}, "x.er/map.xml: no format version (the experiment is damaged; record it again)"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	if e := formatErrorf("f", 3, "h", "%d of %d", 1, 2); *e != (FormatError{"f", 3, "1 of 2", "h"}) {
		t.Errorf("formatErrorf: %+v", e)
	}
}
