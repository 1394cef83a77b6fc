package collect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAttachRefusals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a.er")
	spec := DefaultSpec()
	spec.Heap = true
	if err := newSession(spec, nil, dir).attach(os.Getpid()); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "-H") {
		t.Errorf("-P with -H: %v, want a usage error naming the tracing options", err)
	}
	spec.Heap = false
	if err := newSession(spec, nil, dir).attach(os.Getpid()); !errors.Is(err, ErrUsage) {
		t.Errorf("-P of er itself: %v", err)
	}
	if err := newSession(spec, nil, dir).attach(1 << 30); err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Errorf("-P of a missing process: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a refused attach left an experiment")
	}
}
