package analysis

import (
	"os"
	"path/filepath"
	"testing"

	"er/internal/archive"
)

// TestPreopener: a file opened ahead is handed to the first who asks for it with its archive, and
// opened again for the next; asked with the archive of another build, the file is refused as
// OpenObjectFile refuses it; a missing file, or a path that is not absolute, is opened (and
// refused) when asked for, as without the Preopener.
func TestPreopener(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	a, err := archive.Describe(exe)
	if err != nil {
		t.Fatal(err)
	}
	if a.BuildID == "" || len(a.Segments) == 0 {
		t.Fatalf("Describe(%s): build id %q, %d segments; want both", exe, a.BuildID, len(a.Segments))
	}
	p := NewPreopener(2)
	missing := filepath.Join(t.TempDir(), "gone.so")
	p.Open([]string{exe, missing, "relative.so", exe})
	first, err := p.OpenFile(exe, a)
	if err != nil || first == nil || first.Path != exe || first.Code == nil {
		t.Fatalf("OpenFile(%s): %+v, %v", exe, first, err)
	}
	p.mu.Lock()
	e := p.files[exe]
	p.mu.Unlock()
	if e == nil || e.of != first {
		t.Errorf("the first OpenFile did not get the file opened ahead")
	}
	second, err := p.OpenFile(exe, a)
	if err != nil || second == first {
		t.Errorf("the second OpenFile: %p (the first %p), %v; want the file opened again", second, first, err)
	}
	if _, err := p.OpenFile(missing, a); err == nil {
		t.Errorf("OpenFile(%s): no error for a missing file", missing)
	}
	if _, ok := p.files["relative.so"]; ok {
		t.Errorf("a relative path was opened ahead")
	}

	other := *a
	other.BuildID = "00112233"
	q := NewPreopener(1)
	q.Open([]string{exe})
	if of, err := q.OpenFile(exe, &other); err == nil {
		t.Errorf("OpenFile with another build's archive: %+v, no error", of)
	}
	if !sameObject(a, a) || sameObject(a, &other) {
		t.Errorf("sameObject: the same archive %v, another build's %v", sameObject(a, a), sameObject(a, &other))
	}
	noID := *a
	noID.BuildID = ""
	moved := noID
	moved.Mtime++
	if !sameObject(&noID, &noID) || sameObject(&noID, &moved) {
		t.Errorf("sameObject without build ids: the same %v, modified %v", sameObject(&noID, &noID), sameObject(&noID, &moved))
	}
}
