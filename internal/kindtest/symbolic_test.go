package kindtest

import (
	"testing"

	"er/internal/experiment"
)

// TestWriteSymbolic: the experiment holds the three symbolic mappings, with their methods, and the
// six clock samples.
func TestWriteSymbolic(t *testing.T) {
	d, err := experiment.Open(WriteSymbolic(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var funcs []string
	for _, m := range d.Mappings {
		if experiment.IsSymbolic(m.Start) {
			funcs = append(funcs, m.Func)
			if m.Func == "Toy.run" && m.UnloadTime != 1e6 {
				t.Errorf("Toy.run unloaded at %d, want 1e6, where Toy.other took its id", m.UnloadTime)
			}
		}
	}
	if len(funcs) != 3 || funcs[0] != "Toy.main" || funcs[2] != "Toy.other" || len(d.ClockSamples()) != 6 {
		t.Errorf("methods %v, %d clock samples", funcs, len(d.ClockSamples()))
	}
}
