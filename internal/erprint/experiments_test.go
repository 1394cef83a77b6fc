package erprint

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"er/internal/experiment"
)

// openAll gives each experiment's data or error in the order of the directories, whichever opens
// first.
func TestOpenAll(t *testing.T) {
	var dirs []string
	for i := range 40 {
		dirs = append(dirs, fmt.Sprintf("exp%02d.er", i))
	}
	open := func(dir string) (*experiment.Data, error) {
		var n int
		if _, err := fmt.Sscanf(dir, "exp%02d.er", &n); err != nil {
			return nil, err
		}
		time.Sleep(time.Duration(40-n) * 100 * time.Microsecond) // the later ones open first
		if n%7 == 3 {
			return nil, fmt.Errorf("%s: damaged", dir)
		}
		return &experiment.Data{Dir: dir}, nil
	}
	ds, errs := openAll(dirs, open)
	for i, dir := range dirs {
		switch {
		case i%7 == 3:
			if errs[i] == nil || ds[i] != nil || !strings.Contains(errs[i].Error(), dir) {
				t.Errorf("%s: %v, %v; want its error", dir, ds[i], errs[i])
			}
		case errs[i] != nil || ds[i] == nil || ds[i].Dir != dir:
			t.Errorf("%s: %+v, %v; want its data", dir, ds[i], errs[i])
		}
	}
	if ds, errs := openAll(nil, open); len(ds) != 0 || len(errs) != 0 {
		t.Errorf("no experiments: %v, %v", ds, errs)
	}
}
